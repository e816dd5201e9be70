import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AttemptReport, JobTimings } from '../temporal/contract';
import type { JobRun } from './job-run';
import { ledger } from './ledger-proxy';

/** Beyond the attempt's own timeout, how long Temporal waits for callProvider to report. */
const CALL_GRACE_MS = 5_000;

/**
 * Sends an open attempt (revision 1: the call is an activity of its own;
 * revision 2 sends within the step that opens the attempt). When it wins,
 * the same activity runs the job's effects (each claimed first). No hidden
 * retry: a retry is a new attempt. When the call does not report back (its
 * worker was lost, it overran), the answer is undefined and the ledger
 * decides what that means at the next step (not sent → failed; sent →
 * unknown; won → the effects it left).
 */
export async function callAttempt(attemptId: string, timings: JobTimings): Promise<AttemptReport | undefined> {
  const provider = proxyActivities<Activities>({
    startToCloseTimeout: timings.attemptTimeoutMs + CALL_GRACE_MS + timings.effectTimeoutMs,
    heartbeatTimeout: timings.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
  });
  try {
    return await provider.callProvider(attemptId);
  } catch (err) {
    if (err instanceof ActivityFailure) return undefined;
    throw err;
  }
}

/**
 * Invariant 4: while an attempt is unknown, only evidence (the ledger, the
 * provider's lookup) or an operator moves it on. Looks again every interval
 * and whenever a signal says the job changed, for as long as it takes; the
 * look covers a hedged job's other unknown attempts too, and returns when
 * one of them moved.
 */
export async function awaitResolution(run: JobRun, attemptId: string, timings: JobTimings): Promise<void> {
  for (;;) {
    run.beforeLook();
    const report = await ledger.reconcileAttempt(attemptId);
    if (report.status !== 'unknown' || report.jobTerminal || report.othersMoved) return;
    await run.waitForChange(timings.reconcileIntervalMs);
    await run.continueAsNewIfLong();
  }
}
