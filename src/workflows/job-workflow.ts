import { ActivityFailure, condition, proxyActivities, setHandler, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { jobChangedSignal, searchAttributes, type AttemptKind, type AttemptOutcome, type EffectStateView, type JobWorkflowInput } from '../temporal/contract';

// Ledger activities are idempotent by their WHERE clauses, so retrying them is safe.
const ledger = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', backoffCoefficient: 2 },
});

/** Beyond the attempt's own timeout, how long Temporal waits for callProvider to report. */
const CALL_GRACE_MS = 5_000;

/**
 * One workflow per job. It keeps no job state of its own: every decision is a
 * ledger write whose WHERE clause is the rule, so restarts, replays and a
 * second run after a repair are all safe.
 *
 * open attempt → call provider → (unknown: reconcile until evidence or an
 * operator resolves it; no new attempt meanwhile) → on failure, the next step
 * of the route → until the job is terminal or attempts run out.
 */
export async function jobWorkflow(input: JobWorkflowInput): Promise<string> {
  const { jobId } = input;
  let changed = false;
  setHandler(jobChangedSignal, () => {
    changed = true;
  });
  const setStatus = (status: string): void => {
    if (input.searchAttributes !== false) upsertSearchAttributes([{ key: searchAttributes.status, value: status }]);
  };

  const plan = await ledger.beginJob(jobId);
  setStatus(plan.status);
  if (plan.terminal) return plan.status;

  // A retry is a new attempt, never a hidden retry of the provider call.
  const provider = proxyActivities<Activities>({
    startToCloseTimeout: plan.attemptTimeoutMs + CALL_GRACE_MS,
    heartbeatTimeout: plan.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
  });

  async function call(attemptId: string): Promise<AttemptOutcome> {
    try {
      return await provider.callProvider(attemptId);
    } catch (err) {
      // It timed out, its worker was lost, or it failed after sending: the
      // ledger decides what that means (not sent → failed; sent → unknown).
      if (err instanceof ActivityFailure) return ledger.attemptTimedOut(attemptId);
      throw err;
    }
  }

  /** Invariant 4: while unknown, only evidence or an operator moves the attempt on. */
  async function reconcile(attemptId: string, outcome: AttemptOutcome): Promise<AttemptOutcome> {
    while (outcome.status === 'unknown' && !outcome.jobTerminal) {
      setStatus('awaiting_resolution');
      // Cleared before the look, so a signal that arrives meanwhile is not lost.
      changed = false;
      outcome = await ledger.reconcileAttempt(attemptId);
      if (outcome.status !== 'unknown' || outcome.jobTerminal) break;
      await condition(() => changed, plan.reconcileIntervalMs);
    }
    return outcome;
  }

  let attemptsMade = plan.attemptsMade;
  let routeIndex = plan.nextRouteIndex;
  let previousProvider: string | undefined = plan.live?.provider;
  let failuresInARow = 0;
  const skippedSteps = new Set<string>();
  let live = plan.live;

  // A job whose AI step already has a winner (a later run of its workflow) goes straight to its effects.
  while (!plan.hasWinner) {
    let attemptId: string;
    let outcome: AttemptOutcome;
    if (live) {
      // Left live by an earlier run: whatever was in flight then is not reporting back now.
      attemptId = live.attemptId;
      outcome = live.status === 'unknown' ? { status: 'unknown', jobTerminal: false } : await ledger.attemptTimedOut(attemptId);
      live = undefined;
    } else {
      if (attemptsMade >= plan.maxAttempts) {
        const why = skippedSteps.size ? `; fallbacks skipped: ${[...skippedSteps].join('; ')}` : '';
        await ledger.failJob(jobId, { type: 'attempts_exhausted', detail: `all ${plan.maxAttempts} attempts failed; see the attempts for each error${why}` });
        break;
      }
      // Invariant 6: only a verified provider takes a fallback attempt.
      const next = await ledger.nextStep({ jobId, routeIndex });
      if (next.kind === 'exhausted') {
        await ledger.failJob(jobId, { type: 'no_eligible_provider', detail: next.detail });
        break;
      }
      routeIndex = next.index;
      next.skipped.forEach((skip) => skippedSteps.add(skip));
      const step = next.step;
      const kind: AttemptKind = attemptsMade === 0 ? 'first' : step.provider === previousProvider ? 'retry' : 'fallback';
      const opened = await ledger.openAttempt({ jobId, provider: step.provider, model: step.model, kind });
      if (opened.kind === 'terminal') break;
      attemptId = opened.attemptId;
      if (opened.kind === 'live') {
        // The database refused a second live attempt (invariant 3): settle the live one first.
        live = { attemptId, status: opened.status, provider: step.provider };
        continue;
      }
      attemptsMade++;
      previousProvider = step.provider;
      setStatus('running');
      outcome = await call(attemptId);
    }

    outcome = await reconcile(attemptId, outcome);
    if (outcome.jobTerminal || outcome.status === 'succeeded' || outcome.status === 'discarded') break;

    // failed or cancelled: the next attempt goes along the route.
    routeIndex++;
    failuresInARow = plan.route[routeIndex % plan.route.length]?.provider === previousProvider ? failuresInARow + 1 : 1;
    // Backoff (and a 429's Retry-After) concern the provider that failed, not a fallback.
    if (plan.route[routeIndex % plan.route.length]?.provider === previousProvider) {
      await sleep(Math.max(outcome.retryAfterMs ?? 0, plan.backoffMs * 2 ** (failuresInARow - 1)));
    }
  }

  await runEffects();
  const final = await ledger.jobStatus(jobId);
  setStatus(final.status);
  return final.status;

  /**
   * The job's side effects, each claimed before it happens and settled with a
   * receipt; a stale claim is recovered once its lease runs out; an effect in
   * review waits for an operator. Then the terminal write.
   */
  async function runEffects(): Promise<void> {
    const now = await ledger.jobStatus(jobId);
    if (now.terminal || !now.hasWinner) return;
    if (plan.effects.length === 0) return;
    const effects = proxyActivities<Activities>({
      // The claim's lease bounds a try; a try Temporal gives up on is recovered through the ledger.
      startToCloseTimeout: plan.effectTimeoutMs,
      // No hidden retries of a side effect.
      retry: { maximumAttempts: 1 },
    });
    const tolerant = async (run: () => Promise<EffectStateView>, name: string): Promise<EffectStateView> => {
      try {
        return await run();
      } catch (err) {
        if (err instanceof ActivityFailure) return ledger.inspectEffect({ jobId, name });
        throw err;
      }
    };
    for (const name of plan.effects) {
      let state = await tolerant(() => effects.performEffect({ jobId, name }), name);
      while (state.status !== 'succeeded' && state.status !== 'failed') {
        if (state.status === 'absent') {
          // Nothing was claimed: the job became terminal (a cancellation won) or the effect cannot be run here.
          if ((await ledger.jobStatus(jobId)).terminal) return;
          await ledger.failJob(jobId, { type: 'effect_failed', detail: `${name} could not be claimed or performed by this deployment (is its adapter configured?)`, effect: name });
          return;
        }
        if (state.status === 'needs_review') {
          // An operator settles it; the signal wakes us, and a look every interval covers a lost signal.
          changed = false;
          state = await ledger.inspectEffect({ jobId, name });
          if (state.status === 'needs_review') await condition(() => changed, plan.reconcileIntervalMs);
          continue;
        }
        // Pending under a lease (ours, ambiguous; or a lost owner's): recover once it runs out.
        await sleep(Math.max(100, state.leaseRemainingMs + 50));
        state = await tolerant(() => effects.recoverEffect({ jobId, name }), name);
      }
      if (state.status === 'failed') break;
    }
    await ledger.finishJob(jobId);
  }
}
