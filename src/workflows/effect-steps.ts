import { ActivityFailure, ApplicationFailure, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { FailureType, type EffectStateView, type JobTimings } from '../temporal/contract';
import type { JobRun } from './job-run';
import { ledger } from './ledger-proxy';

const isNotConfigured = (err: unknown): boolean => err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === FailureType.effectNotConfigured;

/**
 * The job's side effects, in order: each claimed before it happens and
 * settled with a receipt (the last one's settlement is also the job's
 * terminal write); a stale claim is recovered once its lease runs out; an
 * effect in review waits for an operator.
 * @returns the job's status once the ledger says it is terminal, or
 * undefined when the job needs another step first.
 */
export async function runEffects(run: JobRun, names: string[], timings: JobTimings): Promise<string | undefined> {
  const effects = proxyActivities<Activities>({
    // The claim's lease bounds a try; a try Temporal gives up on is recovered through the ledger.
    startToCloseTimeout: timings.effectTimeoutMs,
    // Retrying these is safe: only the execution that wins the claim performs,
    // so a retry finds the claim taken and recovery looks the receipt up first.
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, nonRetryableErrorTypes: [FailureType.effectNotConfigured] },
  });
  const { jobId } = run;

  async function attempt(call: () => Promise<EffectStateView>, name: string): Promise<EffectStateView> {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      if (isNotConfigured(err)) {
        // Nothing was claimed by this worker; the ledger refuses while another worker holds a claim.
        const failed = await ledger.failJobForEffect({ jobId, name, detail: `${name} has no adapter in this deployment` });
        if (failed.terminal) return { status: 'absent', leaseRemainingMs: 0, jobTerminal: true, jobStatus: failed.status };
      }
      return ledger.inspectEffect({ jobId, name });
    }
  }

  for (const name of names) {
    let state = await attempt(() => effects.performEffect({ jobId, name }), name);
    for (;;) {
      if (state.jobTerminal) return state.jobStatus;
      if (state.status === 'succeeded') break;
      // Settled as failed: the job fails with it (normally in the same transaction).
      if (state.status === 'failed' || state.status === 'absent') {
        const finished = await ledger.finishJob(jobId);
        return finished.terminal ? finished.status : undefined;
      }
      if (state.status === 'needs_review') {
        // An operator settles it; the signal wakes us, and a look every interval covers a lost signal.
        run.setStatus('needs_review');
        run.beforeLook();
        state = await ledger.inspectEffect({ jobId, name });
        if (state.status === 'needs_review' && !state.jobTerminal) await run.waitForChange(timings.reconcileIntervalMs);
      } else {
        // Pending under a lease (ours, ambiguous; or a lost owner's): recover once it runs out.
        await sleep(Math.max(100, state.leaseRemainingMs + 50));
        state = await attempt(() => effects.recoverEffect({ jobId, name }), name);
      }
      await run.continueAsNewIfLong();
    }
  }
  // Every effect succeeded; the last settlement normally wrote the job's result already.
  const finished = await ledger.finishJob(jobId);
  return finished.terminal ? finished.status : undefined;
}
