import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { authenticateRequest, KeyRing, type Principal } from './auth';
import { baselineVersions, registerJobCommandRoutes, registerJobRoutes } from './jobs-routes';
import { RouteChooser } from '../canary/serving';
import { registerRouteVersionRoutes } from './route-versions-routes';
import { registerProviderRoutes } from './providers-routes';
import { registerEffectRoutes } from './effects-routes';
import { ProblemError, ProblemType } from './problems';
import { JobPageSchema, JobSchema, ProblemSchema } from './schemas';
import { ALWAYS_POSSIBLE, finishDocument, problemResponse } from './openapi';
import { registerServiceRoutes } from './service-routes';
import { registerConsole } from '../console/routes';
import { registerUsageRoutes } from './usage-routes';
import { installEdgeGuards } from './edge-guards';
import { AuthThrottle } from './auth-throttle';
import { DatabaseKeys } from './database-keys';
import { frameworkProblem, handleClientError, installErrorHandler, sendProblem } from './errors';
import { installJsonBodyParser } from './json-body';
import { RouteMethods } from './methods';
import { STRING_RULE } from './strings';
import type { ApiDeps } from './deps';
import { createAdmission } from '../admission/admit-intent';
import { anthropicError, registerAnthropicEntry } from './entries/anthropic';
import { installEntryErrors } from './entries/entry';
import { openAiError, registerOpenAiEntry } from './entries/openai';
import { fetchThrough, verifyEntries } from './entries/verify';
import type { Entry, EntryVerification } from '../ledger/entry-verifications';
import { PROBE_PRINCIPAL } from '../config';
import { randomBytes } from 'node:crypto';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

export type { ApiDeps } from './deps';
export { apiContracts } from './deps';

/** The entries' verification, as the routes and the stack's start call it. */
export interface EntryProbes {
  verify(filter: { alias?: string; entry?: Entry }): Promise<EntryVerification[]>;
}

declare module 'fastify' {
  interface FastifyInstance {
    entryProbes: EntryProbes;
  }
}

export type App = FastifyInstance<any, any, any, any, TypeBoxTypeProvider>;

/** Path parameters longer than this are a 414 (ids are 36 characters, effect names at most 64). */
export const MAX_PARAM_LENGTH = 100;

/** The HTTP API: routes, auth, limits and one error handler speaking problem+json. */
/** Fastify's request log, one line per request when it is answered, at debug; an error stays at error. */
class QuietRequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, _request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

export async function buildApp(deps: ApiDeps): Promise<App> {
  const api = deps.config.api;
  // Node checks the header and request deadlines at this interval; a tenth of the shorter one keeps them honest.
  const connectionsCheckingInterval = Math.max(50, Math.min(1_000, Math.floor(Math.min(api.headersTimeoutMs, api.requestTimeoutMs) / 10)));
  const app = Fastify({
    bodyLimit: api.bodyLimitBytes,
    logger:
      deps.logger === false
        ? false
        : {
            level: deps.config.logLevel,
            // Keys are secrets (API keys) or client data (idempotency keys): never logged.
            redact: ['req.headers.authorization', 'req.headers["idempotency-key"]'],
            serializers: {
              req: (req: FastifyRequest) => ({ method: req.method, url: req.url.split('?')[0], id: req.id }),
            },
          },
    ajv: { customOptions: { allErrors: true, removeAdditional: false, coerceTypes: false, useDefaults: false } },
    // Each request is logged once, when answered, at debug (5xx at error): off the hot path at info.
    logController: new QuietRequestLog(),
    // Slow clients: headers, then the whole request (body included), must arrive in time, or 408.
    http: { headersTimeout: api.headersTimeoutMs, requestTimeout: api.requestTimeoutMs, connectionsCheckingInterval },
    requestTimeout: api.requestTimeoutMs,
    keepAliveTimeout: api.keepAliveTimeoutMs,
    trustProxy: api.trustProxy as boolean | string[],
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Draining is answered below as problem+json, like every other error.
    return503OnClosing: false,
    clientErrorHandler: handleClientError,
    frameworkErrors: (error, _request, reply) => {
      const problem = frameworkProblem(error, MAX_PARAM_LENGTH);
      deps.metrics.requestsRejected.inc({ reason: problem.problemType });
      void sendProblem(reply, problem);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.server.maxConnections = api.maxConnections;

  // The API speaks JSON only: any other body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  installJsonBodyParser(app);
  app.addSchema(ProblemSchema);
  app.addSchema(JobSchema);
  app.addSchema(JobPageSchema);
  installEdgeGuards(app);
  const methods = new RouteMethods(app);

  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // A plain hook, not an async one: every request passes here, and a promise each is not free.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    done(new ProblemError(503, ProblemType.unavailable, 'Shutting down', 'this instance is shutting down; retry (with the same Idempotency-Key) on another one', { headers: { 'retry-after': '1' } }));
  });

  // Problem responses are added to each route's schema here, so the OpenAPI
  // document lists every status a route can answer while handlers stay typed
  // by their success schemas.
  app.addHook('onRoute', (route) => {
    const statuses = route.config?.problems;
    if (!statuses || !route.schema) return;
    const response = { ...((route.schema.response as Record<number, unknown> | undefined) ?? {}) };
    for (const status of new Set([...statuses, ...ALWAYS_POSSIBLE])) response[status] = problemResponse(status);
    route.schema = { ...route.schema, response };
  });
  /** No route for this method and path: 405 with Allow when the path is known, else 404. */
  const noRoute = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = methods.allowed(path);
    if (allowed && !allowed.includes(request.method)) {
      reply.header('allow', allowed.join(', '));
      return sendProblem(reply, new ProblemError(405, ProblemType.methodNotAllowed, 'Method not allowed', `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`));
    }
    return sendProblem(reply, new ProblemError(404, ProblemType.notFound, 'Not found', `no route ${request.method} ${path}`));
  };
  installErrorHandler(app, (problem, request, error) => {
    if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
    if (problem.status !== 404) deps.metrics.requestsRejected.inc({ reason: problem.problemType });
  }, (request, reply) => (request.is404 ? noRoute(request, reply) : undefined));
  app.setNotFoundHandler(noRoute);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Onceflow API',
        version: '1',
        description: `One click, one job, one side effect. Every intent becomes one durable job keyed by (principal, operation, Idempotency-Key). Every error is application/problem+json (RFC 9457). ${STRING_RULE} The contract in prose, with every route's statuses, headers, shapes and problem types: docs/api.md in the repository.`,
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (document) => finishDocument('openapiObject' in document ? document.openapiObject : {}, deps.operations),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  // The entries' verification sends its probes as the probe principal, with a key this process alone holds.
  const probeKey = `ofp_${randomBytes(32).toString('base64url')}`;
  const keyRing = new KeyRing(
    deps.config.keys,
    new DatabaseKeys(deps.db, (err) => app.log.warn({ err }, 'could not record when an API key was last used')),
    probeKey,
  );
  const entryProbes: EntryProbes = {
    verify: (filter) =>
      verifyEntries(
        { db: deps.db, operations: deps.operations, fetch: fetchThrough(app), apiKey: probeKey, principal: PROBE_PRINCIPAL, timeoutMs: ((api.entryWaitSeconds ?? 30) + 10) * 1000 },
        filter,
      ),
  };
  app.decorate('entryProbes', entryProbes);
  const throttle = new AuthThrottle({ maxFailures: api.authFailuresPerWindow, windowMs: api.authFailureWindowMs });
  await app.register(rateLimit, {
    global: false,
    hook: 'preParsing',
    max: api.rateLimitPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.principal?.id ?? request.ip,
    errorResponseBuilder: (_request, context) =>
      new ProblemError(429, ProblemType.rateLimited, 'Too many requests', `at most ${context.max} requests a minute per principal; retry after ${Math.ceil(context.ttl / 1000)} s`, {
        headers: { 'retry-after': String(Math.ceil(context.ttl / 1000)) },
      }),
  });

  const routing = new RouteChooser(deps.db, baselineVersions(deps.contracts.routeFor), deps.config.contracts.routesCacheMs);
  // A plain hook: an environment key is known at once, and only a database key waits for a promise.
  const authenticate = (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    let principal: Principal | Promise<Principal>;
    try {
      principal = authenticateRequest(request, keyRing, throttle);
    } catch (err) {
      return done(err as Error);
    }
    if (!(principal instanceof Promise)) {
      request.principal = principal;
      return done();
    }
    principal.then((found) => {
      request.principal = found;
      done();
    }, done);
  };
  await app.register(async (v1) => {
    v1.addHook('onRequest', authenticate);
    await registerJobRoutes(v1, deps, routing);
    await registerJobCommandRoutes(v1, deps);
    await registerProviderRoutes(v1, deps, entryProbes);
    await registerEffectRoutes(v1, deps);
    await registerUsageRoutes(v1, deps);
    await registerRouteVersionRoutes(v1, deps, routing);
  }, { prefix: '/v1' });
  // The protocol entries: the same keys, admission and jobs, each in its protocol's shapes (api/entries/).
  const entries = {
    admission: createAdmission({ ...deps, ...(deps.config.budgets ? { budgets: deps.config.budgets } : {}), routing, log: app.log }),
    operations: deps.operations,
    waitSeconds: api.entryWaitSeconds ?? 30,
  };
  const onEntryProblem = (problem: ProblemError, request: FastifyRequest, error: unknown) => {
    if (problem.status >= 500 && problem.status !== 502) request.log.error({ err: error }, 'request failed');
    if (problem.status !== 404) deps.metrics.requestsRejected.inc({ reason: problem.problemType });
  };
  await app.register(async (entry) => {
    installEntryErrors(entry, openAiError, onEntryProblem);
    entry.addHook('onRequest', authenticate);
    await registerOpenAiEntry(entry, entries);
  }, { prefix: '/openai/v1' });
  await app.register(async (entry) => {
    installEntryErrors(entry, anthropicError, onEntryProblem);
    // The Anthropic SDK sends its key as x-api-key; either header names the principal.
    entry.addHook('onRequest', (request, reply, done) => {
      const key = request.headers['x-api-key'];
      if (request.headers.authorization === undefined && typeof key === 'string') request.headers.authorization = `Bearer ${key}`;
      authenticate(request, reply, done);
    });
    await registerAnthropicEntry(entry, entries);
  }, { prefix: '/anthropic' });
  await registerServiceRoutes(app, deps);
  await registerConsole(app, deps, { keyRing, throttle, routing });
  return app;
}
