/**
 * An operator resolving an unknown attempt while its late answer or its
 * reconciliation is under way; in the paused variant the simulated providers
 * are SIGSTOPped so that a reconcile lookup is in flight when the resolution
 * lands, and answer "completed" once SIGCONT lets them go.
 */
import type { Exchange } from './api-client';
import { sleep, type TrialScope } from './context';
import type { OperatorRace } from './faults';
import { watchJob } from './job-view';

export interface RaceResult {
  resolution?: Exchange;
  notRun?: string;
}

export async function race(scope: TrialScope, plan: OperatorRace): Promise<RaceResult> {
  if (plan.kind === 'none') return {};
  const { stack } = scope.ctx;
  const jobId = await scope.jobId;
  if (!jobId) return { notRun: 'no job was admitted' };
  const watched = await watchJob(scope.client, stack.operatorKey, jobId, (job) => job.attempts.some((a) => a.status === 'unknown'), Math.min(scope.deadline, Date.now() + 30_000));
  if (!watched.reached) return { notRun: `no attempt became unknown: ${watched.why}` };
  const attempt = watched.job.attempts.find((a) => a.status === 'unknown')!;
  scope.note(`attempt ${attempt.seq} seen unknown`);
  const resolve = (): Promise<Exchange> =>
    scope.client.request('POST', `/v1/jobs/${jobId}/attempts/${attempt.id}/resolution`, {
      label: 'race-resolution',
      token: stack.operatorKey,
      body: { outcome: plan.outcome, reason: `chaos: operator resolves ${plan.kind}` },
    });

  if (plan.kind === 'race-late') {
    await sleep(plan.afterUnknownMs);
    const resolution = await resolve();
    scope.note(`operator resolution ${plan.outcome}: HTTP ${resolution.status}`);
    return resolution.status === 200 ? { resolution } : { resolution, notRun: `resolution answered ${resolution.status}: the answer came first` };
  }

  await sleep(plan.pauseAfterUnknownMs);
  const providers = stack.providers;
  scope.note(`SIGSTOP sim-providers (pid ${providers.pid})`);
  providers.pause();
  let resolution: Exchange;
  try {
    await sleep(plan.pausedMs * plan.resolveAtFraction);
    resolution = await resolve();
    scope.note(`operator resolution ${plan.outcome}: HTTP ${resolution.status}`);
    await sleep(plan.pausedMs * (1 - plan.resolveAtFraction));
  } finally {
    providers.resume();
    scope.note('SIGCONT sim-providers');
  }
  return resolution.status === 200 ? { resolution } : { resolution, notRun: `resolution answered ${resolution.status}: the attempt was settled before it` };
}
