import type { JobDetails } from '../ledger/job-details';
import { JobStatus } from '../jobs/status';
import type { JobListItem } from '../ledger/job-list';
import type { JobRecord } from '../ledger/jobs';
import type { JobSummaryView, JobView } from './schemas';

export interface ViewContext {
  temporalUiUrl: string;
  namespace: string;
}

/** The API's shape of a job (API.md, "The job"). */
export function renderJob({ job, details, settlement, settlements }: JobDetails, context: ViewContext): JobView {
  // Attempts stored on a job that ended before runs were recorded carry none: theirs was the first.
  const attempts = (details.attempts as JobView['attempts']).map((attempt) => ({ ...attempt, run: attempt.run ?? 1 }));
  return {
    id: job.id,
    operation: job.operation,
    idempotencyKey: job.idempotencyKey,
    requestDigest: job.requestDigest,
    schemaVersion: job.schemaVersion,
    status: job.status,
    run: job.run,
    ...(job.status === JobStatus.succeeded ? { result: job.result } : {}),
    ...(job.status === JobStatus.failed && job.error ? { error: job.error } : {}),
    attempts: job.status === JobStatus.failed && job.deadlineAt ? withDeadlineUse(attempts, job) : attempts,
    effects: details.effects as JobView['effects'],
    events: details.events,
    ...(settlement ? { settlement: settlement as JobView['settlement'] } : {}),
    ...(settlements ? { settlements: settlements as JobView['settlements'] } : {}),
    ...(job.deadlineAt ? { deadline: job.deadlineAt.toISOString() } : {}),
    workflowId: job.workflowId,
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
    links: jobLinks(job, context),
  };
}

/** Each attempt with how much of the job's deadline it used (a failed job's view). */
function withDeadlineUse(attempts: JobView['attempts'], job: JobRecord): JobView['attempts'] {
  const wholeMs = Math.max(1, job.deadlineAt!.getTime() - job.createdAt.getTime());
  const jobEndMs = (job.terminalAt ?? job.updatedAt).getTime();
  return attempts.map((attempt) => {
    const ms = Math.max(0, (attempt.endedAt ? Date.parse(attempt.endedAt) : jobEndMs) - Date.parse(attempt.startedAt));
    return { ...attempt, deadlineUsed: { ms, share: Math.round((ms / wholeMs) * 1000) / 1000 } };
  });
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
