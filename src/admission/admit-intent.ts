/**
 * "Admit an intent", whole: the one use case every front door calls. It
 * checks what the intent names (operation, schema version, input), decides
 * its deadline, refuses a new intent past a deadline or a spent budget,
 * admits or finds its one job (digest, reopen, route version, start or
 * attach), counts it, and waits for its end as long as the caller asked.
 * A door parses its protocol into an `IntentRequest` and renders the
 * `AdmittedIntent`, or the refusal, in its own shape.
 *
 * Refusals are `ProblemError`s (the API's problem vocabulary: status, type,
 * title, detail, headers): `/v1/jobs` renders them as problem+json, other
 * doors map them to their own error shapes.
 */
import type { Pool } from 'pg';
import type { OnceflowConfig } from '../config';
import { admit, WorkflowStartError } from './admit';
import { ProblemError, ProblemType } from '../api/problems';
import { effectiveDeadline, refusePastDeadline } from '../api/request-deadline';
import type { JobWaiter } from '../api/job-waiter';
import type { RouteChooser } from '../canary/serving';
import { isTerminal } from '../jobs/status';
import { spentBudget, utcDay } from '../ledger/budgets';
import { getJob, IdempotencyKeyReusedError } from '../ledger/jobs';
import { loadJobDetailsById, type JobDetails } from '../ledger/job-details';
import { countJobAdmitted } from '../metrics/job-outcomes';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import type { WorkflowTarget } from '../temporal/starter';

/** What a door hands over, parsed from its protocol. */
export interface IntentRequest {
  principalId: string;
  operation: string;
  /** The input version the caller wrote for; the newest when absent. */
  schemaVersion?: number;
  input: unknown;
  idempotencyKey: string;
  /** The caller's deadline, as parsed, and as sent (for the refusal's detail). */
  deadline?: { at: Date; raw: string };
  /** How long to wait for the job to end before answering (0: answer at once). */
  waitSeconds: number;
}

/** What a door renders. */
export interface AdmittedIntent {
  details: JobDetails;
  /** New work: a new job, or a failed job's new run (reopenFailed). */
  accepted: boolean;
  created: boolean;
  reopened: boolean;
}

export interface AdmissionDeps {
  db: Pool;
  workflows: WorkflowTarget;
  operations: OperationRegistry;
  metrics: Metrics;
  waiter: JobWaiter;
  /** Without budgets, no daily budget applies. */
  budgets?: OnceflowConfig['budgets'];
  routing: RouteChooser;
  log: { error(fields: Record<string, unknown>, message: string): void };
}

/** The admission use case for one deployment. */
export function createAdmission(deps: AdmissionDeps) {
  const { db, metrics } = deps;

  /**
   * A new intent of a principal past a daily budget is refused until the UTC day ends.
   * @throws ProblemError 429 budget-exhausted with Retry-After and resetsAt.
   */
  async function refuseOverBudget(principalId: string): Promise<void> {
    const budgets = deps.budgets;
    if (!budgets) return;
    const now = new Date();
    const day = utcDay(now);
    const spent = await spentBudget(db, principalId, budgets, day.start);
    if (!spent) return;
    const seconds = Math.max(1, Math.ceil((day.next.getTime() - now.getTime()) / 1000));
    const limit = spent === 'cost' ? `${budgets.costPerDay} ${budgets.currency}` : `${budgets.tokensPerDay} tokens`;
    throw new ProblemError(429, ProblemType.budgetExhausted, 'Budget exhausted', `the daily ${spent} budget (${limit}) of this principal is used up; new intents are accepted again at ${day.next.toISOString()}; replays of existing keys are answered`, {
      budget: spent,
      resetsAt: day.next.toISOString(),
      headers: { 'retry-after': String(seconds) },
    });
  }

  /** `readAtMs`: when the read that found the job open began (the waiter's now()). */
  async function waitForTerminal(details: JobDetails, seconds: number, readAtMs: number): Promise<JobDetails> {
    if (seconds === 0 || isTerminal(details.job.status)) return details;
    const id = details.job.id;
    await deps.waiter.wait(id, seconds * 1000, async () => isTerminal((await getJob(db, id))?.status ?? details.job.status), readAtMs);
    return (await loadJobDetailsById(db, id)) ?? details;
  }

  /**
   * The intent's one job, as the caller may see it now (after its wait).
   * @throws ProblemError 400 (unknown operation, schema version, input), 408
   * (deadline passed), 409 (the key with another request), 429 (budget), 503
   * (the job is recorded, its workflow could not be started: retry).
   */
  async function admitIntent(request: IntentRequest): Promise<AdmittedIntent> {
    const operation = deps.operations.get(request.operation);
    if (!operation) {
      throw new ProblemError(400, ProblemType.unknownOperation, 'Unknown operation', `no operation named ${JSON.stringify(request.operation)}; known: ${[...deps.operations.keys()].join(', ')}`);
    }
    // Old versions stay beside new ones: a request names the one its input is written for, or gets the newest.
    const schemaVersion = request.schemaVersion ?? operation.schemaVersion;
    if (!operation.versions.some((version) => version.schemaVersion === schemaVersion)) {
      const known = operation.versions.map((version) => version.schemaVersion).join(', ');
      throw new ProblemError(400, ProblemType.validation, 'Invalid input', `${operation.name} has no schema version ${schemaVersion}; it has ${known}`, {
        errors: [{ pointer: '/schemaVersion', detail: `must be one of ${known}` }],
      });
    }
    const errors = operation.validateInput(request.input, schemaVersion);
    if (errors.length > 0) {
      throw new ProblemError(400, ProblemType.validation, 'Invalid input', `the input is not valid for ${operation.name} v${schemaVersion}: ${errors.map((e) => `${e.pointer} ${e.detail}`).join('; ')}`, { errors });
    }
    const input = request.input as Record<string, unknown>;

    const now = new Date();
    const deadlineAt = effectiveDeadline(request.deadline?.at, operation.deadline, now);
    // Before admission reads or writes the job: an announcement of its end after this is heard by the waiter.
    const readAtMs = deps.waiter.now();
    let admission;
    try {
      admission = await admit(
        db,
        deps.workflows,
        {
          principalId: request.principalId,
          operation: operation.name,
          idempotencyKey: request.idempotencyKey,
          schemaVersion,
          input,
          ...(operation.billing ? { billing: operation.billing } : {}),
          routeVersion: (jobId) => deps.routing.versionFor(operation.name, jobId),
          ...(deadlineAt ? { deadlineAt } : {}),
          ...(operation.reopenFailed ? { reopenFailed: true } : {}),
        },
        {
          beforeNewJob: async () => {
            // Only a new intent: a retry of an existing key is answered whatever its header says now.
            refusePastDeadline(deadlineAt, request.deadline?.raw, now);
            await refuseOverBudget(request.principalId);
          },
        },
      );
    } catch (err) {
      if (err instanceof IdempotencyKeyReusedError) {
        metrics.idempotencyConflicts.inc({ operation: operation.name });
        throw new ProblemError(409, ProblemType.idempotencyKeyReused, 'Idempotency-Key reused', 'this Idempotency-Key was already used for a different request; use a new key for a new intent', {
          existingJob: { id: err.existing.id, requestDigest: err.existing.requestDigest },
        });
      }
      if (err instanceof WorkflowStartError) {
        deps.log.error({ err: err.cause, jobId: err.job.id }, 'workflow start failed');
        throw new ProblemError(503, ProblemType.unavailable, 'Temporarily unavailable', err.message, { headers: { 'retry-after': '1' }, jobId: err.job.id });
      }
      throw err;
    }

    const details = await waitForTerminal(admission.details, request.waitSeconds, readAtMs);
    const accepted = admission.created || admission.reopened;
    const jobOperation = details.job.operation;
    if (admission.created) metrics.jobsCreated.inc({ operation: jobOperation });
    else if (admission.reopened) metrics.jobsReopened.inc({ operation: jobOperation });
    else metrics.jobsReplayed.inc({ operation: jobOperation, terminal: String(isTerminal(details.job.status)) });
    // Each run is admitted once and ends once: the outcome counts stay one denominator.
    if (accepted) countJobAdmitted(metrics, jobOperation, admission.routeVersion);
    return { details, accepted, created: admission.created, reopened: admission.reopened };
  }

  return { admitIntent };
}

export type IntentAdmission = ReturnType<typeof createAdmission>;
