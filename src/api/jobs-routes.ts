import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { createAdmission } from '../admission/admit-intent';
import { isTerminal } from '../jobs/status';
import { loadJobDetailsById, loadJobDetailsByScope, type JobDetails } from '../ledger/job-details';
import type { JobRecord } from '../ledger/jobs';
import type { ApiDeps } from './deps';
import type { Principal } from './auth';
import { renderJob, renderJobSummary } from './job-view';
import { listJobs } from '../ledger/job-list';
import { decodeCursor, encodeCursor } from './list-cursor';
import { refuseDuplicateHeader } from './edge-guards';
import { parseRequestDeadline } from './request-deadline';
import { notFound, ProblemError, ProblemType } from './problems';
import { cancelJob } from '../ledger/jobs';
import { resolveAttemptAsOperator, resolveEffectAsOperator } from './operator-commands';
import { jobChangedSignal } from '../temporal/contract';
import { afterJobEnded } from '../canary/job-ended';
import { routeVersionOf } from '../providers/route-version';
import type { RouteChooser } from '../canary/serving';
import type { RouteStep } from '../temporal/contract';
import {
  CancelBodySchema,
  DEFAULT_LIST_LIMIT,
  EffectResolutionBodySchema,
  EffectResolutionParamsSchema,
  FindJobQuerySchema,
  ResolutionBodySchema,
  ResolutionParamsSchema,
  IDEMPOTENCY_KEY_PATTERN,
  JobIdParamsSchema,
  jsonResponse,
  ResponseHeaders,
  SubmitBodySchema,
  SubmitHeadersSchema,
} from './schemas';

const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_WAIT_S = 60;

/** @fastify/rate-limit's headers on the rate-limited submit route. */
const RATE_LIMIT_HEADERS = {
  'x-ratelimit-limit': ResponseHeaders.rateLimit,
  'x-ratelimit-remaining': ResponseHeaders.rateLimit,
  'x-ratelimit-reset': ResponseHeaders.rateLimit,
};

/** The Idempotency-Key header, checked. @throws ProblemError 400. */
export function idempotencyKeyOf(request: FastifyRequest): string {
  refuseDuplicateHeader(request, 'Idempotency-Key');
  const header = request.headers['idempotency-key'] as string | undefined;
  if (header === undefined || header === '') {
    throw new ProblemError(400, ProblemType.missingIdempotencyKey, 'Idempotency-Key required', 'send an Idempotency-Key header: one key per intent, 1 to 255 printable ASCII characters');
  }
  if (!IDEMPOTENCY_KEY.test(header)) {
    throw new ProblemError(400, ProblemType.invalidIdempotencyKey, 'Invalid Idempotency-Key', 'the Idempotency-Key must be 1 to 255 printable ASCII characters, not starting or ending with a space');
  }
  return header;
}

/**
 * The Request-Deadline header's instant, if one was sent. An empty value is
 * no deadline, as if the header were not there (an optional header).
 * @throws ProblemError 400 (duplicate-header, invalid-deadline).
 */
export function requestDeadlineOf(request: FastifyRequest): { at: Date; raw: string } | undefined {
  refuseDuplicateHeader(request, 'Request-Deadline');
  const raw = (request.headers['request-deadline'] as string | undefined)?.trim();
  return raw === undefined || raw === '' ? undefined : { at: parseRequestDeadline(raw), raw };
}

/**
 * Seconds from `Prefer: wait=N`, or 0. Other preferences are ignored (RFC
 * 7240); every wait given must be 0 to 60, which is what the document's
 * PREFER_BAD_WAIT_PATTERN refuses.
 * @throws ProblemError 400 when a wait is not a whole number from 0 to 60.
 */
function waitSecondsOf(prefer: string | undefined): number {
  if (prefer === undefined) return 0;
  const waits = [...prefer.matchAll(/(?:^|[,; \t])wait[ \t]*=[ \t]*"?([^",; \t]*)"?/gi)].map((match) => match[1] ?? '');
  if (waits.some((wait) => !/^\d+$/.test(wait) || Number(wait) > MAX_WAIT_S)) {
    throw new ProblemError(400, ProblemType.invalidPreference, 'Invalid Prefer: wait', `wait must be a whole number of seconds from 0 to ${MAX_WAIT_S}`);
  }
  return waits.length > 0 ? Number(waits[0]) : 0;
}

/** Tenants are walls (invariant 10): another principal's job does not exist for the caller. */
function visibleTo(principal: Principal, job: JobRecord): boolean {
  return principal.operator || job.principalId === principal.id;
}

/** The providers file's route version of each operation, computed once (routes are fixed at boot). */
export function baselineVersions(routeFor: (operation: string) => RouteStep[]): (operation: string) => string {
  const routeVersions = new Map<string, string>();
  return (operation: string): string => {
    let version = routeVersions.get(operation);
    if (version === undefined) routeVersions.set(operation, (version = routeVersionOf(routeFor(operation))));
    return version;
  };
}

export async function registerJobRoutes(app: FastifyInstance, deps: ApiDeps, routing: RouteChooser): Promise<void> {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;
  const context = { temporalUiUrl: deps.config.temporal.uiUrl, namespace: deps.config.temporal.namespace };
  const admission = createAdmission({ ...deps, ...(deps.config.budgets ? { budgets: deps.config.budgets } : {}), routing, log: app.log });

  const submitted = (description: string, replayed: boolean) =>
    jsonResponse({ $ref: 'Job#' }, description, {
      Location: ResponseHeaders.location,
      ...(replayed ? { 'Idempotent-Replayed': ResponseHeaders.idempotentReplayed } : {}),
      'Preference-Applied': ResponseHeaders.preferenceApplied,
      ...RATE_LIMIT_HEADERS,
    });

  v1.post(
    '/jobs',
    {
      config: { rateLimit: {}, problems: [400, 401, 403, 408, 409, 413, 415, 429] },
      schema: {
        operationId: 'submitJob',
        tags: ['jobs'],
        summary: 'Submit an intent',
        description:
          'Creates the one job of (principal, operation, Idempotency-Key), or returns it. 202 for a new job; 200 with Idempotent-Replayed: true for the same intent again (or a new job that became terminal while the request waited); 409 when the key was used with another request. Operator keys may not submit (403). ' +
          'A failed job is answered as failed (200, replayed), unless its operation declares reopenFailed and none of its effects was ever claimed: then the same intent starts the next run of the same job (same id, run + 1, a job.reopened event) and is answered 202 without Idempotent-Replayed, as new work; concurrent retries reopen it once, the others get 200 replayed.',
        headers: SubmitHeadersSchema,
        body: SubmitBodySchema,
        response: {
          200: submitted('The job of this intent: it already existed (Idempotent-Replayed: true), or it became terminal while the request waited', true),
          202: submitted('A new job, accepted; or a new run of a failed job whose operation declares reopenFailed', false),
        },
      },
      // Before schema validation, so each of these answers with its own problem type.
      preValidation: (request, _reply, done) => {
        try {
          // An operator reads and settles any tenant's jobs; it does not act as a tenant (API.md, "Operators").
          if (request.principal?.operator) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'operator keys do not submit jobs; submit with the API key of the principal the job is for');
          idempotencyKeyOf(request);
          waitSecondsOf(request.headers.prefer as string | undefined);
          requestDeadlineOf(request);
        } catch (err) {
          return done(err as Error);
        }
        done();
      },
    },
    async (request, reply) => {
      const waitSeconds = waitSecondsOf(request.headers.prefer as string | undefined);
      const requested = requestDeadlineOf(request);
      const { details, accepted } = await admission.admitIntent({
        principalId: request.principal!.id,
        operation: request.body.operation,
        ...(request.body.schemaVersion !== undefined ? { schemaVersion: request.body.schemaVersion } : {}),
        input: request.body.input,
        idempotencyKey: idempotencyKeyOf(request),
        ...(requested ? { deadline: requested } : {}),
        waitSeconds,
      });
      const job = details.job;
      if (waitSeconds > 0) reply.header('preference-applied', `wait=${waitSeconds}`);
      reply.header('location', `/v1/jobs/${job.id}`);
      // New work (a new job, or a failed job's new run) is 202 unless it became terminal while we waited (API.md: a terminal job is answered 200).
      if (accepted && !isTerminal(job.status)) return reply.status(202).send(renderJob(details, context));
      if (!accepted) reply.header('idempotent-replayed', 'true');
      return reply.status(200).send(renderJob(details, context));
    },
  );

  v1.get(
    '/jobs/:id',
    {
      config: { problems: [400, 401, 404, 414, 429] },
      schema: {
        operationId: 'getJob',
        tags: ['jobs'],
        summary: 'Read a job',
        description: "The job, if it is the caller's (operators read any job); otherwise 404. An id that is not a UUID is a 400.",
        params: JobIdParamsSchema,
        response: { 200: jsonResponse({ $ref: 'Job#' }, 'The job as it is now') },
      },
    },
    async (request) => {
      const details = UUID.test(request.params.id) ? await loadJobDetailsById(db, request.params.id) : undefined;
      if (!details || !visibleTo(request.principal!, details.job)) throw notFound();
      return renderJob(details, context);
    },
  );

  v1.get(
    '/jobs',
    {
      config: { problems: [400, 401, 403, 404, 429] },
      schema: {
        operationId: 'findJob',
        tags: ['jobs'],
        summary: "Find the caller's job for a scope; operators: list jobs by status",
        description:
          "With operation and idempotencyKey: the caller's job for that scope, or 404 (an operator key has no scope of its own: 404). " +
          'Without idempotencyKey, for operator keys only (a tenant key is a 403): the jobs in a status across principals, oldest first, optionally of one principal or operation, ' +
          'a page at a time (limit, default 50, at most 200); the next page is the cursor in next and in a Link: rel="next" header. ' +
          'status=needs_review lists the jobs with an effect in needs_review. 400 for idempotencyKey without operation, idempotencyKey with a list parameter (status, principal, cursor, limit), a list without status, or a cursor this API did not give out.',
        querystring: FindJobQuerySchema,
        response: {
          200: {
            description: "The caller's job of that scope; or, for an operator listing jobs, one page of them",
            headers: { Link: ResponseHeaders.linkNext },
            content: { 'application/json': { schema: { anyOf: [{ $ref: 'Job#' }, { $ref: 'JobPage#' }] } } },
          },
        },
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      const query = request.query;
      const listParameters = (['status', 'principal', 'cursor', 'limit'] as const).filter((name) => query[name] !== undefined);
      if (query.idempotencyKey !== undefined) {
        if (listParameters.length > 0) throw badQuery(`idempotencyKey finds one job; ${listParameters.join(', ')} list jobs: send one or the other`, listParameters);
        if (query.operation === undefined) throw badQuery('idempotencyKey needs operation: a key is scoped by principal and operation', ['operation']);
        const details = await loadJobDetailsByScope(db, { principalId: principal.id, operation: query.operation, idempotencyKey: query.idempotencyKey });
        if (!details || !visibleTo(principal, details.job)) throw notFound();
        return renderJob(details, context);
      }
      if (!principal.operator) {
        if (listParameters.length > 0) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'only operators list jobs; find your own job with operation and idempotencyKey');
        throw badQuery('send operation and idempotencyKey to find your job', ['idempotencyKey']);
      }
      if (query.status === undefined) throw badQuery('send status to list jobs (or operation and idempotencyKey to find one)', ['status']);
      const limit = query.limit === undefined ? DEFAULT_LIST_LIMIT : Number(query.limit);
      const rows = await listJobs(db, {
        status: query.status,
        principalId: query.principal,
        operation: query.operation,
        after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
        limit,
      });
      const page = rows.slice(0, limit);
      const next = rows.length > limit ? encodeCursor(page[page.length - 1]!.position) : undefined;
      if (next) {
        const nextQuery = new URLSearchParams({ status: query.status, ...(query.principal ? { principal: query.principal } : {}), ...(query.operation ? { operation: query.operation } : {}), limit: String(limit), cursor: next });
        reply.header('link', `</v1/jobs?${nextQuery}>; rel="next"`);
      }
      return { jobs: page.map((item) => renderJobSummary(item, context)), ...(next ? { next } : {}) };
    },
  );
}

/** A query string that breaks a rule its schema cannot state. */
function badQuery(detail: string, parameters: string[]): ProblemError {
  return new ProblemError(400, ProblemType.validation, 'Invalid request', `the querystring is not valid: ${detail}`, { errors: parameters.map((name) => ({ pointer: `/${name}`, detail })) });
}

/** Resolution and cancellation: writes that change who may win, then a wake-up for the workflow. */
export async function registerJobCommandRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db, metrics } = deps;
  const context = { temporalUiUrl: deps.config.temporal.uiUrl, namespace: deps.config.temporal.namespace };

  async function wake(workflowId: string, log: FastifyInstance['log']): Promise<void> {
    try {
      await deps.workflows.client.workflow.getHandle(workflowId).signal(jobChangedSignal);
    } catch (err) {
      // The ledger already holds the change; the workflow sees it at its next reconcile.
      log.warn({ err, workflowId }, 'could not signal the job workflow');
    }
  }

  /** After a command: wake the workflow, answer with the job as it is now. */
  async function wakeAndRender(details: JobDetails, log: FastifyInstance['log']) {
    await wake(details.job.workflowId, log);
    return renderJob((await loadJobDetailsById(db, details.job.id))!, context);
  }

  v1.post(
    '/jobs/:id/attempts/:attemptId/resolution',
    {
      config: { problems: [400, 401, 403, 404, 408, 409, 413, 414, 415, 429] },
      schema: {
        operationId: 'resolveAttempt',
        tags: ['operators'],
        summary: 'Resolve an unknown attempt out of band (operators only)',
        description: 'Marks an unknown attempt failed or cancelled, with who and why; the job may then go on to its next attempt. 409 when the attempt is not unknown.',
        params: ResolutionParamsSchema,
        body: ResolutionBodySchema,
        response: { 200: jsonResponse({ $ref: 'Job#' }, 'The job after the resolution') },
      },
    },
    async (request) => {
      const { id: jobId, attemptId } = request.params;
      const details = await resolveAttemptAsOperator(deps, request.principal!, { jobId, attemptId, outcome: request.body.outcome, reason: request.body.reason }, request.log);
      return renderJob(details, context);
    },
  );

  v1.post(
    '/jobs/:id/effects/:name/resolution',
    {
      config: { problems: [400, 401, 403, 404, 408, 409, 413, 414, 415, 429] },
      schema: {
        operationId: 'resolveEffect',
        tags: ['operators'],
        summary: 'Settle an effect in review (operators only)',
        description:
          'An effect that could be neither looked up nor safely repeated waits in needs_review until an operator says what happened downstream, with who and why. 409 when the effect is not in review.',
        params: EffectResolutionParamsSchema,
        body: EffectResolutionBodySchema,
        response: { 200: jsonResponse({ $ref: 'Job#' }, 'The job after the settlement') },
      },
    },
    async (request) => {
      const { id: jobId, name } = request.params;
      const details = await resolveEffectAsOperator(deps, request.principal!, { jobId, name, outcome: request.body.outcome, reason: request.body.reason, receipt: request.body.receipt }, request.log);
      return renderJob(details, context);
    },
  );

  v1.post(
    '/jobs/:id/cancel',
    {
      config: { problems: [400, 401, 404, 408, 409, 413, 414, 415, 429] },
      schema: {
        operationId: 'cancelJob',
        tags: ['jobs'],
        summary: 'Cancel a job that is not terminal',
        description:
          "An attempt in flight is not killed; its late result will be discarded. 409 when the job is terminal or has claimed a side effect. Operators may cancel any tenant's job; the job's events record who cancelled.",
        params: JobIdParamsSchema,
        body: CancelBodySchema,
        response: { 200: jsonResponse({ $ref: 'Job#' }, 'The cancelled job') },
      },
    },
    async (request) => {
      const principal = request.principal!;
      const details = UUID.test(request.params.id) ? await loadJobDetailsById(db, request.params.id) : undefined;
      if (!details || !visibleTo(principal, details.job)) throw notFound();
      const cancelled = await cancelJob(db, details.job.id, { by: principal.label, reason: request.body?.reason });
      if (cancelled === 'terminal') {
        throw new ProblemError(409, ProblemType.conflict, 'Job is terminal', `job ${details.job.id} is already terminal; it cannot be cancelled`);
      }
      if (cancelled === 'effects_started') {
        throw new ProblemError(409, ProblemType.conflict, 'Side effects started', `job ${details.job.id} has claimed a side effect; it can no longer be cancelled`);
      }
      metrics.jobsCancelled.inc({ operation: details.job.operation });
      await afterJobEnded(db, metrics, details.job.id, (err) => request.log.warn({ err, jobId: details.job.id }, 'could not count the job outcome'));
      return wakeAndRender(details, request.log);
    },
  );
}
