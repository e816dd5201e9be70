import { ApplicationFailure } from '@temporalio/activity';
import { EffectNotConfiguredError, type EffectState } from '../effects/runner';
import { FailureType } from '../temporal/contract';
import type { ActivityDeps } from './deps';
import { effectCallOfThisActivity as thisCall } from './effect-call';

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
