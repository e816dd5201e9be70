import type { Pool } from 'pg';
import { listEvents } from '../ledger/events';
import type { JobRecord } from '../ledger/jobs';
import { JobStatus } from '../jobs/status';
import type { JobView } from './schemas';

export interface ViewContext {
  temporalUiUrl: string;
  namespace: string;
}

export type AttemptView = JobView['attempts'][number];
export type EffectView = JobView['effects'][number];

/** Loads what a job's view shows beside its row: attempts, effects, events. */
export type JobDetailsLoader = (db: Pool, jobId: string) => Promise<{ attempts: AttemptView[]; effects: EffectView[] }>;

/** The API's shape of a job (API.md, "The job"). */
export async function renderJob(db: Pool, job: JobRecord, context: ViewContext, loadDetails: JobDetailsLoader): Promise<JobView> {
  const [details, events] = await Promise.all([loadDetails(db, job.id), listEvents(db, job.id)]);
  return {
    id: job.id,
    operation: job.operation,
    idempotencyKey: job.idempotencyKey,
    requestDigest: job.requestDigest,
    schemaVersion: job.schemaVersion,
    status: job.status,
    ...(job.status === JobStatus.succeeded ? { result: job.result } : {}),
    ...(job.status === JobStatus.failed && job.error ? { error: job.error } : {}),
    attempts: details.attempts,
    effects: details.effects,
    events: events.map((event) => ({ type: event.type, at: event.createdAt.toISOString(), detail: event.detail })),
    workflowId: job.workflowId,
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
    links: {
      self: `/v1/jobs/${job.id}`,
      temporalUi: `${context.temporalUiUrl}/namespaces/${encodeURIComponent(context.namespace)}/workflows/${encodeURIComponent(job.workflowId)}`,
    },
  };
}
