import { ApplicationFailure, Context } from '@temporalio/activity';
import { EffectNotConfiguredError, type EffectCall, type EffectState } from '../effects/runner';
import { FailureType } from '../temporal/contract';
import type { ActivityDeps } from './deps';

/**
 * This activity execution as an effect's owner: the workflow run, the
 * activity and its try, so no two executions (nor two runs of one workflow)
 * ever share a claim. Its deadline is the activity's own timeout.
 */
function thisCall(): EffectCall {
  const context = Context.current();
  const { info } = context;
  return {
    owner: `${info.workflowExecution?.workflowId ?? '-'}/${info.workflowExecution?.runId ?? '-'}/${info.activityId}#${info.attempt}`,
    signal: context.cancellationSignal,
    // Called as the activity starts: its start-to-close timeout counts from about now.
    deadlineMs: info.startToCloseTimeoutMs ? Date.now() + info.startToCloseTimeoutMs : undefined,
  };
}

/** A missing adapter is final, and nothing was claimed: the workflow decides (never a hidden retry). */
async function notConfiguredIsFinal<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof EffectNotConfiguredError) throw ApplicationFailure.create({ type: FailureType.effectNotConfigured, message: err.message, nonRetryable: true });
    throw err;
  }
}

export function createEffectActivities(deps: ActivityDeps) {
  const { effects } = deps;
  return {
    /**
     * Claims an effect and performs it if the claim is this execution's
     * (invariant 7). Safe to run again: a later execution finds the claim
     * taken and reports it, so retries of this activity never repeat the effect.
     */
    async performEffect(request: { jobId: string; name: string }): Promise<EffectState> {
      return notConfiguredIsFinal(() => effects.perform(request.jobId, request.name, thisCall()));
    },

    /** Takes a stale claim over and settles it from the downstream's receipt (invariant 8). */
    async recoverEffect(request: { jobId: string; name: string }): Promise<EffectState> {
      return notConfiguredIsFinal(() => effects.recover(request.jobId, request.name, thisCall()));
    },

    async inspectEffect(request: { jobId: string; name: string }): Promise<EffectState> {
      return effects.inspect(request.jobId, request.name);
    },
  };
}
