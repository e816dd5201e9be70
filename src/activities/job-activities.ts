import { isTerminal, JobStatus } from '../jobs/status';
import { findLiveAttempt, listAttempts } from '../ledger/attempts';
import { failJob, getJob, setJobProgress, type JobError } from '../ledger/jobs';
import type { JobPlan, NextStep } from '../temporal/contract';
import { eligibility } from '../contracts/eligibility';
import { appendEvent, JobEventType } from '../ledger/events';
import { removeExpiredJobs } from '../ledger/retention';
import type { ActivityDeps } from '.';

export function createJobActivities(deps: ActivityDeps) {
  const { db } = deps;
  const clock = deps.clock ?? { now: () => new Date() };
  return {
    /** Marks an accepted job running and reads what the workflow needs to drive it. */
    async beginJob(jobId: string): Promise<JobPlan> {
      const before = await getJob(db, jobId);
      if (!before) throw new Error(`job ${jobId} is not in the ledger`);
      if (before.status === JobStatus.accepted) await setJobProgress(db, jobId, JobStatus.running);
      const job = (await getJob(db, jobId))!;
      const attempts = await listAttempts(db, jobId);
      const live = await findLiveAttempt(db, jobId);
      const route = deps.routeFor(job.operation);
      const last = attempts[attempts.length - 1];
      const lastIndex = last ? route.findIndex((step) => step.provider === last.provider && step.model === last.model) : -1;
      return {
        status: job.status,
        terminal: isTerminal(job.status),
        hasWinner: job.completedBy !== null,
        operation: job.operation,
        route,
        maxAttempts: deps.attempts.maxAttempts,
        attemptsMade: attempts.length,
        nextRouteIndex: last && last.status !== 'unknown' && !live ? lastIndex + 1 : Math.max(lastIndex, 0),
        attemptTimeoutMs: deps.attempts.timeoutMs,
        heartbeatTimeoutMs: deps.attempts.heartbeatTimeoutMs,
        reconcileIntervalMs: deps.attempts.reconcileIntervalMs,
        backoffMs: deps.attempts.backoffMs,
        effects: deps.operations.get(job.operation)?.effects ?? [],
        effectTimeoutMs: deps.effectTimeoutMs,
        ...(live ? { live: { attemptId: live.id, status: live.status, provider: live.provider } } : {}),
      };
    },

    /** The job's status now. */
    async jobStatus(jobId: string): Promise<{ status: JobStatus; terminal: boolean; hasWinner: boolean }> {
      const job = await getJob(db, jobId);
      if (!job) throw new Error(`job ${jobId} is not in the ledger`);
      return { status: job.status, terminal: isTerminal(job.status), hasWinner: job.completedBy !== null };
    },

    /**
     * The next route step that may take an attempt, from routeIndex on (invariant 6):
     * fallbacks without a current, passing, fresh verification are skipped, each
     * with an event saying why.
     */
    async nextStep(request: { jobId: string; routeIndex: number }): Promise<NextStep> {
      const job = await getJob(db, request.jobId);
      if (!job) throw new Error(`job ${request.jobId} is not in the ledger`);
      const operation = deps.operations.get(job.operation);
      const route = deps.routeFor(job.operation);
      if (!operation || route.length === 0) return { kind: 'exhausted', detail: `no provider route is configured for ${job.operation}` };
      const skipped: string[] = [];
      for (let offset = 0; offset < route.length; offset++) {
        const index = request.routeIndex + offset;
        const step = route[index % route.length]!;
        const verdict = await eligibility(db, operation, step, index % route.length === 0 ? 'primary' : 'fallback', deps.gate, clock.now());
        if (verdict.eligible) return { kind: 'step', step, index, skipped };
        skipped.push(`${step.provider}/${step.model}: ${verdict.reason} (${verdict.detail})`);
        deps.metrics.fallbacksSkipped.inc({ operation: job.operation, provider: step.provider, reason: verdict.reason });
        await appendEvent(db, job.id, JobEventType.fallbackSkipped, { provider: step.provider, model: step.model, reason: verdict.reason, detail: verdict.detail });
      }
      return { kind: 'exhausted', detail: `no eligible provider is left: ${skipped.join('; ')}` };
    },

    /** Removes terminal jobs past the retention (the retention Schedule's work). */
    async removeExpiredJobs(retentionDays: number): Promise<number> {
      return removeExpiredJobs(db, retentionDays);
    },

    /** Ends the job as failed; a no-op when it is already terminal. */
    async failJob(jobId: string, error: JobError): Promise<void> {
      await failJob(db, jobId, error);
    },
  };
}
