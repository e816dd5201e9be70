import type { FastifyBaseLogger } from 'fastify';
import { loadJobDetailsById, type JobDetails } from '../ledger/job-details';
import { AttemptNotFoundError, AttemptNotUnknownError, resolveAttempt } from '../ledger/attempts';
import { EffectNotFoundError, EffectNotInReviewError, resolveEffect } from '../ledger/effects';
import { afterJobBlocked } from '../canary/job-ended';
import { jobChangedSignal } from '../temporal/contract';
import type { Principal } from './auth';
import type { ApiDeps } from './deps';
import { notFound, ProblemError, ProblemType } from './problems';

/**
 * An operator's settlements, written once for every door they come through
 * (the HTTP API's resolution routes and the console): the same ledger
 * compare-and-swap, the same audit record naming who and why, the same
 * counters, the same wake-up of the job's workflow.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AttemptResolutionCommand {
  jobId: string;
  attemptId: string;
  outcome: 'failed' | 'cancelled';
  reason: string;
}

export interface EffectResolutionCommand {
  jobId: string;
  name: string;
  outcome: 'succeeded' | 'failed';
  reason: string;
  receipt?: Record<string, unknown>;
}

/** The job an operator acts on. @throws ProblemError 403 for a non-operator, 404 for no such job. */
async function jobForOperator(deps: Pick<ApiDeps, 'db'>, principal: Principal, jobId: string, what: string): Promise<JobDetails> {
  if (!principal.operator) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', `only operators may resolve ${what}s`);
  const details = UUID.test(jobId) ? await loadJobDetailsById(deps.db, jobId) : undefined;
  if (!details) throw notFound(what);
  return details;
}

/** Signals the job's workflow that the ledger changed; a failed signal is only logged (the workflow sees it at its next reconcile). */
async function wake(deps: Pick<ApiDeps, 'workflows'>, workflowId: string, log: FastifyBaseLogger): Promise<void> {
  try {
    await deps.workflows.client.workflow.getHandle(workflowId).signal(jobChangedSignal);
  } catch (err) {
    log.warn({ err, workflowId }, 'could not signal the job workflow');
  }
}

/**
 * Resolves an unknown attempt out of band (invariants 4 and 12), then wakes the workflow.
 * @returns the job as it is after the resolution.
 * @throws ProblemError 403 (not an operator), 404 (no such job or attempt), 409 attempt-not-unknown.
 */
export async function resolveAttemptAsOperator(deps: Pick<ApiDeps, 'db' | 'workflows' | 'metrics'>, principal: Principal, command: AttemptResolutionCommand, log: FastifyBaseLogger): Promise<JobDetails> {
  const details = await jobForOperator(deps, principal, command.jobId, 'attempt');
  if (!UUID.test(command.attemptId)) throw notFound('attempt');
  try {
    await resolveAttempt(deps.db, { jobId: details.job.id, attemptId: command.attemptId, outcome: command.outcome, reason: command.reason, by: principal.label });
  } catch (err) {
    if (err instanceof AttemptNotFoundError) throw notFound('attempt');
    if (err instanceof AttemptNotUnknownError) {
      throw new ProblemError(409, ProblemType.notResolvable, 'Attempt is not unknown', `attempt ${err.attempt.id} is ${err.attempt.status}; only an unknown attempt can be resolved`);
    }
    throw err;
  }
  deps.metrics.attemptsResolved.inc({ operation: details.job.operation, via: 'operator', outcome: command.outcome });
  await wake(deps, details.job.workflowId, log);
  const after = (await loadJobDetailsById(deps.db, details.job.id))!;
  // A hedged job may still wait on another unknown attempt: its canary counts it.
  if (after.job.status === 'awaiting_resolution') await afterJobBlocked(deps.db, after.job.id, (err) => log.warn({ err, jobId: after.job.id }, 'could not check its route version'));
  return after;
}

/**
 * Settles an effect in review with what the operator found downstream (never automatic), then wakes the workflow.
 * @returns the job as it is after the settlement.
 * @throws ProblemError 403 (not an operator), 404 (no such job or effect), 409 (the effect is not in review).
 */
export async function resolveEffectAsOperator(deps: Pick<ApiDeps, 'db' | 'workflows'>, principal: Principal, command: EffectResolutionCommand, log: FastifyBaseLogger): Promise<JobDetails> {
  const details = await jobForOperator(deps, principal, command.jobId, 'effect');
  // "It happened" says what it became: the receipt found downstream is the job's result, and cannot be added later.
  if (command.outcome === 'succeeded' && (!command.receipt || Object.keys(command.receipt).length === 0)) {
    const detail = 'an effect settled as succeeded needs the receipt found downstream (e.g. {"messageId": "m-1"})';
    throw new ProblemError(400, ProblemType.validation, 'Invalid request', detail, { errors: [{ pointer: '/receipt', detail }] });
  }
  try {
    await resolveEffect(deps.db, { jobId: details.job.id, name: command.name, outcome: command.outcome, reason: command.reason, by: principal.label, receipt: command.receipt });
  } catch (err) {
    if (err instanceof EffectNotFoundError) throw notFound('effect');
    if (err instanceof EffectNotInReviewError) {
      throw new ProblemError(409, ProblemType.conflict, 'Effect is not in review', `effect ${err.effect.name} is ${err.effect.status}; only an effect in needs_review can be resolved`);
    }
    throw err;
  }
  await wake(deps, details.job.workflowId, log);
  return (await loadJobDetailsById(deps.db, details.job.id))!;
}
