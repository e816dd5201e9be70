/**
 * What the protocol entries share: each request is an intent of a model
 * alias, admitted by the one admission use case; the job it gets is
 * answered in the entry's protocol once it has ended, or with a 409 and
 * Retry-After while it has not (both official SDKs retry a 409 by
 * themselves, with the same headers, and so attach to the job until it
 * ends). Every refusal is the API's problem, rendered in the entry's shape;
 * `x-should-retry: false` tells the SDKs not to repeat what a repeat cannot
 * change (the key used for another request, a spent budget, a failed job).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IntentAdmission } from '../../admission/admit-intent';
import { isTerminal, JobStatus } from '../../jobs/status';
import type { JobDetails } from '../../ledger/job-details';
import type { RegisteredOperation } from '../../operations/operation';
import type { AliasInput } from '../../operations/alias';
import { toProblemError } from '../errors';
import { ProblemError, ProblemType } from '../problems';
import type { FastifyError } from 'fastify';
import { idempotencyKeyOf, requestDeadlineOf } from '../jobs-routes';

/** A request of an entry, parsed into the alias's canonical input. */
export interface EntryRequest {
  model: string;
  input: AliasInput;
  stream: boolean;
  /** Whether the caller asked for JSON (response_format, for a start): only an alias with an output contract gives it. */
  wantsJson: boolean;
  /** The request's name of each input field (maxTokens: max_tokens), for the refusals. */
  fieldNames: Readonly<Record<string, string>>;
}

/** The answer of a job that succeeded, as every entry renders it. */
export interface EntryAnswer {
  jobId: string;
  attemptId: string;
  model: string;
  content: string;
  inputTokens: number;
  outputTokens: number;
  /** Seconds since the epoch: the job's creation (the same for every replay). */
  created: number;
}

/** A field of the request that the entry cannot carry to every provider of a route. */
export function notCarried(field: string, why = 'Onceflow does not carry it across providers and protocols'): ProblemError {
  return new ProblemError(400, ProblemType.validation, 'Not carried across', `${field} is not supported: ${why}`, { errors: [{ pointer: `/${field.replace(/\./g, '/')}`, detail: 'is not supported' }] });
}

export function invalid(field: string, detail: string): ProblemError {
  return new ProblemError(400, ProblemType.validation, 'Invalid request', `${field} ${detail}`, { errors: [{ pointer: `/${field.replace(/\./g, '/')}`, detail }] });
}

/**
 * An input the alias refuses (its limits), named by the request's own fields:
 * `/input/maxTokens` is `max_tokens` to the caller, `/input/messages/0/content` is `messages.0.content`.
 */
function inProtocolTerms(err: unknown, fieldNames: Readonly<Record<string, string>>): unknown {
  if (!(err instanceof ProblemError) || err.problemType !== ProblemType.validation || !err.extras.errors?.length) return err;
  const fields = err.extras.errors.map((error) => {
    const [top = '', ...rest] = error.pointer.replace(/^\/input\/?/, '').split('/');
    return { field: [fieldNames[top] ?? top, ...rest].join('.'), detail: error.detail };
  });
  return new ProblemError(400, ProblemType.validation, 'Invalid request', fields.map((f) => `${f.field} ${f.detail}`).join('; '), { errors: fields.map((f) => ({ pointer: `/${f.field.replace(/\./g, '/')}`, detail: f.detail })) });
}

/** The answer of a job that ended succeeded: the winner's text and usage. */
function answerOf(details: JobDetails, model: string): EntryAnswer {
  const job = details.job;
  const winner = (details.details.attempts as Array<{ id: string; usage?: { inputTokens?: number; outputTokens?: number } }>).find((attempt) => attempt.id === job.completedBy);
  return {
    jobId: job.id,
    attemptId: job.completedBy ?? '',
    model,
    content: String((job.result as { content?: unknown } | null)?.content ?? ''),
    inputTokens: winner?.usage?.inputTokens ?? 0,
    outputTokens: winner?.usage?.outputTokens ?? 0,
    created: Math.floor(job.createdAt.getTime() / 1000),
  };
}

export interface EntrySettings {
  admission: IntentAdmission;
  operations: ReadonlyMap<string, RegisteredOperation>;
  /** How long a request waits for its job to end before the 409 (seconds). */
  waitSeconds: number;
}

/**
 * Admits the request's intent and, once its job ended succeeded, its answer.
 * @throws ProblemError: the admission's refusals; 404 for a model that is no
 * alias; 409 with Retry-After while the job runs; 502 for a failed job, 409 for a cancelled one.
 */
export async function admitEntryRequest(settings: EntrySettings, request: FastifyRequest, reply: FastifyReply, parsed: EntryRequest): Promise<EntryAnswer> {
  // An operator reads and settles any tenant's jobs; it does not act as a tenant.
  if (request.principal?.operator) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'operator keys do not submit requests; use the API key of the principal the request is for');
  const alias = settings.operations.get(parsed.model);
  if (!alias?.alias) {
    const known = [...settings.operations.values()].filter((operation) => operation.alias).map((operation) => operation.name);
    throw new ProblemError(404, ProblemType.notFound, 'Unknown model', `no model alias named ${JSON.stringify(parsed.model)}; known: ${known.join(', ') || 'none (declare aliases: in the operations file)'}`);
  }
  if (parsed.wantsJson && !alias.alias.json) throw notCarried('response_format', `the alias ${alias.name} declares no output contract, so its answers are not JSON by contract`);
  const deadline = requestDeadlineOf(request);
  const { details, accepted } = await settings.admission
    .admitIntent({
      principalId: request.principal!.id,
      operation: alias.name,
      input: parsed.input,
      idempotencyKey: idempotencyKeyOf(request),
      ...(deadline ? { deadline } : {}),
      waitSeconds: settings.waitSeconds,
    })
    .catch((err: unknown) => {
      throw inProtocolTerms(err, parsed.fieldNames);
    });
  const job = details.job;
  reply.header('onceflow-job-id', job.id);
  reply.header('location', `/v1/jobs/${job.id}`);
  if (!accepted) reply.header('idempotent-replayed', 'true');
  if (!isTerminal(job.status)) {
    throw new ProblemError(409, ProblemType.conflict, 'Job still running', `job ${job.id} of this Idempotency-Key has not ended yet (${job.status}); retry with the same key to get its answer`, {
      headers: { 'retry-after': '1', 'x-should-retry': 'true' },
      jobId: job.id,
    });
  }
  if (job.status === JobStatus.succeeded) {
    reply.header('onceflow-attempt-id', job.completedBy ?? '');
    return answerOf(details, alias.name);
  }
  const error = job.error ?? { type: job.status, detail: `the job is ${job.status}` };
  if (job.status === JobStatus.cancelled) throw new ProblemError(409, ProblemType.conflict, 'Job cancelled', `job ${job.id} was cancelled: ${error.detail}`, { headers: { 'x-should-retry': 'false' }, jobId: job.id, code: error.type });
  throw new ProblemError(502, ProblemType.internal, 'Job failed', `job ${job.id} failed (${error.type}): ${error.detail}; a new intent needs a new Idempotency-Key`, { headers: { 'x-should-retry': 'false' }, jobId: job.id, code: error.type });
}

/** Refusals that a repeat of the same request cannot change: the SDKs are told not to retry them. */
function finalRefusal(problem: ProblemError): boolean {
  if (problem.extras.headers?.['x-should-retry']) return false;
  if (problem.problemType === ProblemType.budgetExhausted || problem.problemType === ProblemType.idempotencyKeyReused) return true;
  return problem.status >= 400 && problem.status < 500 && ![408, 409, 429].includes(problem.status);
}

/** An entry's error handler: the API's problem, in the entry's shape. */
export function installEntryErrors(app: FastifyInstance, render: (problem: ProblemError) => unknown, onProblem: (problem: ProblemError, request: FastifyRequest, error: unknown) => void): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = toProblemError(error);
    onProblem(problem, request, error);
    for (const [name, value] of Object.entries(problem.extras.headers ?? {})) reply.header(name, value);
    if (finalRefusal(problem)) reply.header('x-should-retry', 'false');
    return reply.status(problem.status).type('application/json').send(render(problem));
  });
}

/** A server-sent event stream's body, sent at once: the stored answer is whole. */
export function sendEvents(reply: FastifyReply, events: string[]): FastifyReply {
  return reply.status(200).header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache').send(events.join(''));
}
