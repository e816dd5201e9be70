/**
 * The operator who drives waiting jobs to an end, as a person on call would:
 * an attempt unknown for longer than any late answer of the catalogue can
 * take is resolved (failed or cancelled, as the plan says); an effect in
 * needs_review is settled from what the downstream shows for its key.
 * Also notices a job whose workflow has closed while it is not terminal.
 */
import { sleep, type TrialScope } from './context';
import { readJob, TERMINAL, type JobView } from './job-view';
import { workflowStatus } from './temporal-view';

/** Well beyond the longest late answer drawn (attempt timeout + 2.5 s) plus a reconcile interval, with room for a slow machine. */
const UNKNOWN_PATIENCE_MS = 8_000;
/** A job not terminal with no open workflow this long is stuck: no need to wait out the deadline. */
const NO_WORKFLOW_PATIENCE_MS = 5_000;

export interface SettleResult {
  endedBy: 'terminal' | 'deadline' | 'no-workflow' | 'no-job';
  view?: JobView;
  attemptResolutions: number;
  effectResolutions: number;
}

/**
 * Polls the job until it is terminal, acting as the operator meanwhile.
 * @param outcome what to resolve long-unknown attempts as; undefined: resolve nothing (the live self-test).
 */
export async function settle(scope: TrialScope, outcome: 'failed' | 'cancelled' | undefined, quiet: () => boolean): Promise<SettleResult> {
  const { stack } = scope.ctx;
  const jobId = await scope.jobId;
  const result: SettleResult = { endedBy: 'no-job', attemptResolutions: 0, effectResolutions: 0 };
  if (!jobId) return result;
  const unknownSince = new Map<string, number>();
  const lastTry = new Map<string, number>();
  let noWorkflowSince: number | undefined;
  let lastDescribe = 0;
  for (;;) {
    const job = await readJob(scope.client, stack.operatorKey, jobId, 'operator');
    const now = Date.now();
    if (job) {
      result.view = job;
      if (TERMINAL.has(job.status)) return { ...result, endedBy: 'terminal' };
      for (const attempt of outcome ? job.attempts.filter((a) => a.status === 'unknown') : []) {
        const since = unknownSince.get(attempt.id) ?? now;
        unknownSince.set(attempt.id, since);
        if (now - since < UNKNOWN_PATIENCE_MS || now - (lastTry.get(attempt.id) ?? 0) < 2_000) continue;
        lastTry.set(attempt.id, now);
        const exchange = await scope.client.request('POST', `/v1/jobs/${jobId}/attempts/${attempt.id}/resolution`, {
          label: 'operator',
          token: stack.operatorKey,
          body: { outcome, reason: 'chaos operator: no answer and no evidence' },
        });
        scope.note(`operator resolves attempt ${attempt.seq} ${outcome}: HTTP ${exchange.status}`);
        if (exchange.status === 200) result.attemptResolutions++;
      }
      for (const effect of outcome ? job.effects.filter((e) => e.status === 'needs_review') : []) {
        if (now - (lastTry.get(effect.key) ?? 0) < 2_000) continue;
        lastTry.set(effect.key, now);
        const found = await fetch(`${stack.downstreamUrl}/v1/messages/by-key/${encodeURIComponent(effect.key)}`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
        if (!found || (found.status !== 200 && found.status !== 404)) continue;
        const receipt = found.status === 200 ? ((await found.json()) as { messageId: string }) : undefined;
        const exchange = await scope.client.request('POST', `/v1/jobs/${jobId}/effects/${encodeURIComponent(effect.name)}/resolution`, {
          label: 'operator',
          token: stack.operatorKey,
          body: receipt
            ? { outcome: 'succeeded', reason: 'chaos operator: the downstream shows the message', receipt: { messageId: receipt.messageId } }
            : { outcome: 'failed', reason: 'chaos operator: the downstream has no message for the key' },
        });
        scope.note(`operator settles ${effect.name} ${receipt ? 'succeeded' : 'failed'}: HTTP ${exchange.status}`);
        if (exchange.status === 200) result.effectResolutions++;
      }
      if (now - lastDescribe > 1_000) {
        lastDescribe = now;
        const status = await workflowStatus(stack.temporal, job.workflowId);
        if (status !== 'RUNNING' && status !== 'UNREACHABLE' && quiet()) noWorkflowSince ??= now;
        else noWorkflowSince = undefined;
        if (noWorkflowSince !== undefined && now - noWorkflowSince > NO_WORKFLOW_PATIENCE_MS) return { ...result, endedBy: 'no-workflow' };
      }
    }
    if (now > scope.deadline) return { ...result, endedBy: 'deadline' };
    await sleep(150);
  }
}
