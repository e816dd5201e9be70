import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { RouteChooser } from '../canary/serving';
import { eligibility } from '../contracts/eligibility';
import {
  admittedCounts,
  CanaryAlreadyRunningError,
  DEFAULT_THRESHOLDS,
  listRouteVersions,
  promoteCanary,
  rollbackCanary,
  routeVersionEvents,
  RouteVersionExistsError,
  RouteVersionNotFoundError,
  RouteVersionStateError,
  startCanary,
  stopCanary,
  windowCounts,
  type CanaryThresholds,
  type RouteVersionRecord,
} from '../ledger/route-versions';
import { BASELINE_VERSION_PREFIX, isBaselineVersion } from '../providers/route-version';
import type { ApiDeps } from './deps';
import { notFound, ProblemError, ProblemType } from './problems';
import { jsonResponse, StringEnum, Text } from './schemas';

/** Canary names: letters, digits, dot, dash, underscore; never a baseline's `config-` prefix (checked in code). */
export const ROUTE_VERSION_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';
/** The longest a canary may run before it must be promoted or it stops by itself. */
export const MAX_CANARY_DAYS = 30;
/** The window of a baseline's counts in GET /v1/routes (a canary's is its own). */
const BASELINE_WINDOW = DEFAULT_THRESHOLDS.window;

const Timestamp = Type.String({ format: 'date-time' });
const Step = Type.Object(
  {
    provider: Text({ minLength: 1, maxLength: 100, description: 'a provider declared in the providers file', examples: ['sim-backup'] }),
    model: Text({ minLength: 1, maxLength: 200, examples: ['sim-large'] }),
  },
  { additionalProperties: false },
);

const ThresholdsSchema = Type.Object(
  {
    window: Type.Integer({ minimum: 10, maximum: 1000, description: 'the fixed denominator: the last N terminal jobs the canary served (default 200)' }),
    contractViolationsPercent: Type.Number({ minimum: 0, maximum: 100, description: 'stop when more than this share of the window had a contract violation (default 2)' }),
    unknownsPercent: Type.Number({ minimum: 0, maximum: 100, description: 'stop when more than this share of the window had an unknown attempt (default 5)' }),
    failedPercent: Type.Union([Type.Number({ minimum: 0, maximum: 100 }), Type.Null()], { description: 'stop when more than this share of the window failed; null: never (default)' }),
    effectsInReview: Type.Integer({ minimum: 0, maximum: 1000, description: 'stop when more jobs of the window than this had an effect in review, one that may have happened twice or not at all (default 0: the first stops it)' }),
  },
  { additionalProperties: false },
);

const CountsSchema = Type.Object({
  jobs: Type.Integer({ minimum: 0 }),
  succeeded: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 }),
  cancelled: Type.Integer({ minimum: 0 }),
  withUnknowns: Type.Integer({ minimum: 0 }),
  withContractViolations: Type.Integer({ minimum: 0 }),
  withEffectsInReview: Type.Integer({ minimum: 0 }),
});

const RouteVersionSchema = Type.Object(
  {
    operation: Type.String(),
    version: Type.String(),
    kind: StringEnum(['baseline', 'canary']),
    state: StringEnum(['recorded', 'running', 'promoted', 'stopped', 'rolled_back', 'superseded']),
    steps: Type.Array(Type.Object({ provider: Type.String(), model: Type.String() })),
    owner: Type.Optional(Type.String()),
    sharePercent: Type.Optional(Type.Number()),
    expiresAt: Type.Optional(Timestamp),
    thresholds: Type.Optional(ThresholdsSchema),
    previousVersion: Type.Optional(Type.String()),
    reason: Type.Optional(Type.String()),
    changedBy: Type.Optional(Type.String()),
    createdAt: Timestamp,
    promotedAt: Type.Optional(Timestamp),
    endedAt: Type.Optional(Timestamp),
    admitted: Type.Integer({ minimum: 0, description: 'jobs admitted to this version' }),
    open: Type.Integer({ minimum: 0, description: 'of them, not yet terminal' }),
    window: Type.Intersect([Type.Object({ size: Type.Integer() }), CountsSchema], {
      description: "the last `size` terminal jobs this version served, by how they ended: a canary's thresholds are checked against these",
    }),
    events: Type.Array(Type.Object({ type: Type.String(), at: Timestamp, detail: Type.Object({}, { additionalProperties: true }) })),
  },
  { $id: 'RouteVersion', description: 'A route version of an operation: the providers file\'s route (baseline) or a canary' },
);

const RoutesSchema = Type.Object({
  operations: Type.Array(
    Type.Object({
      operation: Type.String(),
      baseline: Type.String({ description: "this API process's providers-file route version" }),
      serving: Type.Object({
        version: Type.String({ description: 'the version new jobs take outside a running canary: the promoted one, else the baseline' }),
        canary: Type.Union([Type.Object({ version: Type.String(), sharePercent: Type.Number(), expiresAt: Timestamp }), Type.Null()]),
      }),
      versions: Type.Array(Type.Ref('RouteVersion')),
    }),
  ),
});

const OperationParams = Type.Object({ operation: Type.String({ minLength: 1, maxLength: 100, description: 'an operation name', examples: ['support.reply'] }) });
const VersionParams = Type.Object({
  operation: Type.String({ minLength: 1, maxLength: 100, description: 'an operation name', examples: ['support.reply'] }),
  version: Type.String({ minLength: 1, maxLength: 64, description: 'a canary route version', examples: ['backup-first-1'] }),
});

const StartBody = Type.Object(
  {
    version: Type.String({ pattern: ROUTE_VERSION_PATTERN, description: `the canary's name, new for the operation; not starting with ${BASELINE_VERSION_PREFIX}`, examples: ['backup-first-1'] }),
    steps: Type.Array(Step, { minItems: 1, maxItems: 10, uniqueItems: true, description: 'the route to try, in failover order; each step once' }),
    owner: Text({ minLength: 1, maxLength: 200, description: 'who answers for this canary', examples: ['olga@example.com'] }),
    expiresAt: Type.String({ format: 'date-time', description: `when it stops by itself unless promoted; in the future, at most ${MAX_CANARY_DAYS} days away` }),
    sharePercent: Type.Number({ minimum: 0.01, maximum: 100, description: 'the stable share of new jobs it serves, chosen by a hash of the job id; rounded to 0.01', examples: [5] }),
    thresholds: Type.Optional(Type.Partial(ThresholdsSchema, { additionalProperties: false, description: 'when it stops by itself; each left out takes its default' })),
    reason: Type.Optional(Text({ minLength: 1, maxLength: 2000, description: 'why, for the audit record' })),
  },
  { additionalProperties: false },
);
type StartBody = Static<typeof StartBody>;

const ChangeBody = (reasonRequired: boolean) =>
  Type.Object(
    { reason: reasonRequired ? Text({ minLength: 1, maxLength: 2000, description: 'why, for the audit record' }) : Type.Optional(Text({ minLength: 1, maxLength: 2000, description: 'why, for the audit record' })) },
    { additionalProperties: false },
  );

const iso = (date: Date | null | undefined) => (date ? date.toISOString() : undefined);

/** A route version with its admitted and open jobs, its last window's counts and its events. */
async function renderRouteVersion(db: ApiDeps['db'], record: RouteVersionRecord) {
  const window = record.thresholds?.window ?? BASELINE_WINDOW;
  const [admitted, counts, events] = await Promise.all([
    admittedCounts(db, record.operation, record.version),
    windowCounts(db, record.operation, record.version, window),
    routeVersionEvents(db, record.operation, record.version),
  ]);
  return {
    operation: record.operation,
    version: record.version,
    kind: record.kind,
    state: record.state,
    steps: record.steps,
    ...(record.owner !== null ? { owner: record.owner } : {}),
    ...(record.shareBp !== null ? { sharePercent: record.shareBp / 100 } : {}),
    ...(record.expiresAt ? { expiresAt: iso(record.expiresAt) } : {}),
    ...(record.thresholds ? { thresholds: record.thresholds } : {}),
    ...(record.previousVersion !== null ? { previousVersion: record.previousVersion } : {}),
    ...(record.reason !== null ? { reason: record.reason } : {}),
    ...(record.changedBy !== null ? { changedBy: record.changedBy } : {}),
    createdAt: iso(record.createdAt)!,
    ...(record.promotedAt ? { promotedAt: iso(record.promotedAt) } : {}),
    ...(record.endedAt ? { endedAt: iso(record.endedAt) } : {}),
    admitted: admitted.admitted,
    open: admitted.open,
    window: { size: window, ...counts },
    events: events.map((event) => ({ type: event.type, at: event.at.toISOString(), detail: event.detail })),
  };
}

/** A route version as GET /v1/routes shows it. */
export type RouteVersionView = Awaited<ReturnType<typeof renderRouteVersion>>;

/**
 * Per operation: its providers-file route (baseline), what new jobs take, and
 * every route version with its counters and events. What GET /v1/routes
 * answers and the console shows.
 */
export async function describeRoutes(deps: Pick<ApiDeps, 'db' | 'operations'>, routing: RouteChooser) {
  const { db } = deps;
  const all = await listRouteVersions(db);
  const operations = [];
  for (const operation of deps.operations.keys()) {
    routing.forget(operation);
    const serving = await routing.serving(operation);
    operations.push({
      operation,
      baseline: routing.previousOf({}, operation),
      serving: {
        version: routing.previousOf(serving, operation),
        canary: serving.running ? { version: serving.running.version, sharePercent: serving.running.shareBp! / 100, expiresAt: iso(serving.running.expiresAt)! } : null,
      },
      versions: await Promise.all(all.filter((record) => record.operation === operation).map((record) => renderRouteVersion(db, record))),
    });
  }
  return { operations };
}

/** Route versions and canaries: operators see what serves each operation and roll routes out, promote, stop and roll back. */
export async function registerRouteVersionRoutes(app: FastifyInstance, deps: ApiDeps, routing: RouteChooser): Promise<void> {
  app.addSchema(RouteVersionSchema);
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db, contracts } = deps;
  const operatorOnly = (request: { principal?: { operator: boolean } }): void => {
    if (!request.principal?.operator) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'only operators may see or change route versions');
  };
  const operationOf = (name: string) => {
    const operation = deps.operations.get(name);
    if (!operation) throw notFound('operation');
    return operation;
  };

  const render = (record: RouteVersionRecord) => renderRouteVersion(db, record);

  /** Maps the ledger's refusals to problems. @throws ProblemError. */
  function refused(err: unknown): never {
    if (err instanceof RouteVersionNotFoundError) throw notFound('route version');
    if (err instanceof RouteVersionStateError) {
      throw new ProblemError(409, ProblemType.routeVersionState, 'Route version not in that state', err.message, { state: err.current.state });
    }
    throw err;
  }

  v1.get(
    '/routes',
    {
      config: { problems: [401, 403, 429] },
      schema: {
        operationId: 'listRoutes',
        tags: ['operators'],
        summary: 'Route versions per operation, what serves new jobs, and how each version did (operators only)',
        description:
          'Per operation: its providers-file route (baseline), what new jobs take, and every route version with its jobs admitted and open, the last window of its terminal jobs by how they ended (succeeded, failed, cancelled, with unknowns, with contract violations, with effects in review), and its events.',
        response: { 200: jsonResponse(RoutesSchema, 'Route versions by operation') },
      },
    },
    async (request) => {
      operatorOnly(request);
      return describeRoutes(deps, routing);
    },
  );

  v1.post(
    '/routes/:operation/canaries',
    {
      config: { problems: [400, 401, 403, 404, 408, 409, 413, 414, 415, 429] },
      schema: {
        operationId: 'startCanary',
        tags: ['operators'],
        summary: 'Start a canary route version (operators only)',
        description:
          "Rolls a new route out to a stable share of new jobs (by a hash of the job id) until it is promoted, stopped, rolled back, crosses a threshold over its last window of jobs, or expires. Every step must pass the failover gate now (invariant 6: a fallback needs a current, passing verification): otherwise 409 route-not-eligible, naming each step and why. 409 when a canary of the operation is already running or the name is taken; 404 for an unknown operation; 400 for a provider that is not declared, a step given twice, a name starting with config-, or an expiry in the past or more than 30 days away.",
        params: OperationParams,
        body: StartBody,
        response: { 201: jsonResponse({ $ref: 'RouteVersion#' }, 'The canary, running') },
      },
    },
    async (request, reply) => {
      operatorOnly(request);
      const operation = operationOf(request.params.operation);
      const body = request.body;
      const problems = checkStart(body, contracts.providers, new Date());
      if (problems.length > 0) {
        throw new ProblemError(400, ProblemType.validation, 'Invalid canary', `the canary is not valid: ${problems.map((p) => `${p.pointer} ${p.detail}`).join('; ')}`, { errors: problems });
      }
      // Invariant 6, before anything runs: each step must be able to take an attempt in the role the canary gives it.
      const ineligible = [];
      for (const [index, step] of body.steps.entries()) {
        const verdict = await eligibility(db, operation, step, index === 0 ? 'primary' : 'fallback', contracts.gate, new Date(), contracts.providers.get(step.provider)?.baseUrl);
        if (!verdict.eligible) ineligible.push({ position: index, provider: step.provider, model: step.model, reason: verdict.reason, detail: verdict.detail });
      }
      if (ineligible.length > 0) {
        throw new ProblemError(409, ProblemType.routeNotEligible, 'Route not eligible', `the canary's route does not pass the failover gate: ${ineligible.map((s) => `${s.provider}/${s.model}: ${s.reason} (${s.detail})`).join('; ')}; verify the providers first`, { steps: ineligible });
      }
      routing.forget(operation.name);
      const previousVersion = routing.previousOf(await routing.serving(operation.name), operation.name);
      const thresholds: CanaryThresholds = { ...DEFAULT_THRESHOLDS, ...(body.thresholds ?? {}) };
      try {
        const started = await startCanary(db, {
          operation: operation.name,
          version: body.version,
          steps: body.steps,
          owner: body.owner,
          shareBp: Math.round(body.sharePercent * 100),
          expiresAt: new Date(body.expiresAt),
          thresholds,
          previousVersion,
          by: request.principal!.label,
          ...(body.reason ? { reason: body.reason } : {}),
        });
        routing.forget(operation.name);
        return reply.status(201).send(await render(started));
      } catch (err) {
        if (err instanceof CanaryAlreadyRunningError || err instanceof RouteVersionExistsError) throw new ProblemError(409, ProblemType.conflict, 'Conflict', err.message);
        throw err;
      }
    },
  );

  for (const action of ['promote', 'stop', 'rollback'] as const) {
    const summary = {
      promote: 'Promote a running canary: it serves every new job (operators only)',
      stop: 'Stop a running canary: new jobs go back to the version it was tried against (operators only)',
      rollback: 'Roll a running or promoted canary back: new jobs go to the version it replaced (operators only)',
    }[action];
    v1.post(
      `/routes/:operation/canaries/:version/${action}`,
      {
        config: { problems: [400, 401, 403, 404, 408, 409, 413, 414, 415, 429] },
        schema: {
          operationId: `${action}Canary`,
          tags: ['operators'],
          summary,
          description:
            'A compare-and-swap on the version\'s state: of an operator\'s change and the canary\'s own stop racing, exactly one wins, and the other is a 409 route-version-state naming the state it found. Jobs already admitted stay on the version they recorded. ' +
            (action === 'promote'
              ? 'An expired canary cannot be promoted (409); the version promoted before it, if any, is superseded.'
              : action === 'rollback'
                ? 'reason is required. New jobs go to the version it replaced: a version it had superseded is promoted again (canary.restored).'
                : 'reason is required.'),
          params: VersionParams,
          body: ChangeBody(action !== 'promote'),
          response: { 200: jsonResponse({ $ref: 'RouteVersion#' }, 'The version after the change') },
        },
      },
      async (request) => {
        operatorOnly(request);
        const operation = operationOf(request.params.operation);
        const key = { operation: operation.name, version: request.params.version };
        if (isBaselineVersion(key.version)) throw new ProblemError(409, ProblemType.routeVersionState, 'Not a canary', `${key.version} is the providers file's route; only canaries are promoted, stopped or rolled back`);
        const by = request.principal!.label;
        const reason = (request.body as { reason?: string } | undefined)?.reason ?? `${action} by ${by}`;
        let changed: RouteVersionRecord;
        try {
          changed =
            action === 'promote'
              ? await promoteCanary(db, key, { by, reason })
              : action === 'stop'
                ? await stopCanary(db, key, { by, reason, detail: { cause: 'operator' } })
                : await rollbackCanary(db, key, { by, reason, detail: { cause: 'operator' } });
        } catch (err) {
          refused(err);
        } finally {
          routing.forget(operation.name);
        }
        return render(changed);
      },
    );
  }
}

/** What the schema cannot say about a canary. */
function checkStart(body: StartBody, providers: ApiDeps['contracts']['providers'], now: Date): Array<{ pointer: string; detail: string }> {
  const problems: Array<{ pointer: string; detail: string }> = [];
  if (isBaselineVersion(body.version)) problems.push({ pointer: '/version', detail: `must not start with ${BASELINE_VERSION_PREFIX} (the providers file's versions)` });
  // A step given twice is the schema's (uniqueItems).
  body.steps.forEach((step, index) => {
    if (!providers.has(step.provider)) problems.push({ pointer: `/steps/${index}/provider`, detail: `is not a declared provider (declared: ${[...providers.keys()].join(', ')})` });
  });
  const expiresAtMs = Date.parse(body.expiresAt);
  if (!(expiresAtMs > now.getTime())) problems.push({ pointer: '/expiresAt', detail: 'must be in the future' });
  else if (expiresAtMs - now.getTime() > MAX_CANARY_DAYS * 86_400_000) problems.push({ pointer: '/expiresAt', detail: `must be at most ${MAX_CANARY_DAYS} days away` });
  return problems;
}
