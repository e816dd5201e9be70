import type { Pool } from 'pg';
import { isTerminal, JobStatus } from '../jobs/status';
import { getJob, setJobProgress, succeedJobPlaceholder } from '../ledger/jobs';
import type { Metrics } from '../metrics/metrics';

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export interface ActivityDeps {
  db: Pool;
  metrics: Metrics;
  clock?: Clock;
}

/** Builds the activities from their dependencies; nothing here is a module-level singleton. */
export function createActivities(deps: ActivityDeps) {
  const { db } = deps;
  return {
    /** Marks an accepted job running; says whether it is already terminal. */
    async beginJob(jobId: string): Promise<{ status: JobStatus; terminal: boolean }> {
      await setJobProgress(db, jobId, JobStatus.running);
      const job = await getJob(db, jobId);
      if (!job) throw new Error(`job ${jobId} is not in the ledger`);
      return { status: job.status, terminal: isTerminal(job.status) };
    },

    async runPlaceholderStep(jobId: string): Promise<JobStatus> {
      return succeedJobPlaceholder(db, jobId);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
