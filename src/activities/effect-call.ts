import { Context } from '@temporalio/activity';
import type { EffectCall } from '../effects/runner';

/**
 * This activity execution as an effect's owner: the workflow run, the
 * activity and its try, so no two executions (nor two runs of one workflow)
 * ever share a claim. Its deadline is the activity's own timeout, counted from
 * when this is called (at the activity's start).
 */
export function effectCallOfThisActivity(): EffectCall {
  const context = Context.current();
  const { info } = context;
  return {
    owner: `${info.workflowExecution?.workflowId ?? '-'}/${info.workflowExecution?.runId ?? '-'}/${info.activityId}#${info.attempt}`,
    signal: context.cancellationSignal,
    deadlineMs: info.startToCloseTimeoutMs ? Date.now() + info.startToCloseTimeoutMs : undefined,
  };
}
