import { Context } from '@temporalio/activity';
import type { EffectState } from '../effects/runner';
import { listEffects } from '../ledger/effects';
import { failJob, getJob, getJobOutput, settleJob } from '../ledger/jobs';
import type { ActivityDeps } from '.';

/** The explicit owner of a claim: this activity execution, on this worker. */
function ownerOfThisActivity(): string {
  const info = Context.current().info;
  return `${info.workflowExecution?.workflowId ?? "?"}/${info.activityId}#${info.attempt}`;
}

export function createEffectActivities(deps: ActivityDeps) {
  const { db, effects } = deps;
  return {
    /** Claims an effect and performs it if the claim is this activity's (invariant 7). */
    async performEffect(request: { jobId: string; name: string }): Promise<EffectState> {
      return effects.perform(request.jobId, request.name, ownerOfThisActivity(), Context.current().cancellationSignal);
    },

    /** Takes a stale claim over and settles it from the downstream's receipt (invariant 8). */
    async recoverEffect(request: { jobId: string; name: string }): Promise<EffectState> {
      return effects.recover(request.jobId, request.name, ownerOfThisActivity(), Context.current().cancellationSignal);
    },

    async inspectEffect(request: { jobId: string; name: string }): Promise<EffectState> {
      return effects.inspect(request.jobId, request.name);
    },

    /**
     * The job's terminal write once its effects settled: succeeded with the
     * output and receipts, or failed naming the effect that failed.
     */
    async finishJob(jobId: string): Promise<void> {
      const job = await getJob(db, jobId);
      if (!job) throw new Error(`job ${jobId} is not in the ledger`);
      const operation = deps.operations.get(job.operation);
      const settled = await listEffects(db, jobId);
      const failed = settled.find((effect) => effect.status === 'failed');
      if (failed) {
        await failJob(db, jobId, { type: 'effect_failed', detail: `${failed.name} failed: ${String(failed.error?.detail ?? failed.error?.class ?? 'see the effect')}`, effect: failed.name });
        return;
      }
      const output = await getJobOutput(db, jobId);
      const receipts = Object.fromEntries(settled.map((effect) => [effect.name, effect.receipt ?? {}]));
      await settleJob(db, jobId, operation?.finalize ? operation.finalize(output as never, receipts) : output);
    },
  };
}
