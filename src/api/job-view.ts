import type { JobDetails } from '../ledger/job-details';
import { JobStatus } from '../jobs/status';
import type { JobListItem } from '../ledger/job-list';
import type { JobSummaryView, JobView } from './schemas';

export interface ViewContext {
  temporalUiUrl: string;
  namespace: string;
}

/** The API's shape of a job (API.md, "The job"). */
export function renderJob({ job, details, settlement }: JobDetails, context: ViewContext): JobView {
  return {
    id: job.id,
    operation: job.operation,
    idempotencyKey: job.idempotencyKey,
    requestDigest: job.requestDigest,
    schemaVersion: job.schemaVersion,
    status: job.status,
    ...(job.status === JobStatus.succeeded ? { result: job.result } : {}),
    ...(job.status === JobStatus.failed && job.error ? { error: job.error } : {}),
    attempts: details.attempts as JobView['attempts'],
    effects: details.effects as JobView['effects'],
    events: details.events,
    ...(settlement ? { settlement: settlement as JobView['settlement'] } : {}),
    workflowId: job.workflowId,
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
    links: jobLinks(job, context),
  };
}

/** A job as an operator's list shows it. */
export function renderJobSummary(item: JobListItem, context: ViewContext): JobSummaryView {
  return {
    id: item.id,
    principal: item.principalId,
    operation: item.operation,
    idempotencyKey: item.idempotencyKey,
    status: item.status,
    effectsInReview: item.effectsInReview,
    workflowId: item.workflowId,
    createdAt: item.createdAt.toISOString(),
    updatedAt: item.updatedAt.toISOString(),
    links: jobLinks(item, context),
  };
}

function jobLinks(job: { id: string; workflowId: string }, context: ViewContext): JobView['links'] {
  return {
    self: `/v1/jobs/${job.id}`,
    temporalUi: `${context.temporalUiUrl}/namespaces/${encodeURIComponent(context.namespace)}/workflows/${encodeURIComponent(job.workflowId)}`,
  };
}
