import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import type { OnceflowConfig } from '../config';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import type { WorkflowTarget } from '../temporal/starter';
import { KeyRing, type Principal } from './auth';
import type { JobWaiter } from './job-waiter';
import { registerJobCommandRoutes, registerJobRoutes } from './jobs-routes';
import { registerProviderRoutes } from './providers-routes';
import type { ProviderAdapter } from '../providers/types';
import type { RouteStep } from '../temporal/contract';
import type { GateSettings } from '../contracts/eligibility';
import { ProblemError, ProblemType, type FieldError } from './problems';
import { ProblemSchema } from './schemas';
import { registerServiceRoutes } from './service-routes';
import { installEdgeGuards } from './edge-guards';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

export interface ApiDeps {
  config: Pick<OnceflowConfig, 'api' | 'keys' | 'temporal' | 'logLevel' | 'contracts' | 'attempts'>;
  db: Pool;
  workflows: WorkflowTarget;
  operations: OperationRegistry;
  metrics: Metrics;
  waiter: JobWaiter;
  /** What the provider routes need: adapters, routes, the failover gate, verification settings. */
  contracts: {
    providers: ReadonlyMap<string, ProviderAdapter>;
    routeFor(operation: string): RouteStep[];
    gate: GateSettings;
    samples: number;
    timeoutMs: number;
  };
  /** Readiness of Temporal: resolves when reachable. */
  temporalReady: () => Promise<void>;
  logger?: boolean;
}

/** The contracts part of ApiDeps, from configuration and the provider adapters. */
export function apiContracts(
  config: Pick<OnceflowConfig, 'contracts' | 'attempts'>,
  providers: ReadonlyMap<string, ProviderAdapter>,
  routeFor: (operation: string) => RouteStep[],
): ApiDeps['contracts'] {
  return {
    providers,
    routeFor,
    gate: { maxAgeMs: config.contracts.maxAgeMs, demotion: config.contracts.demotion },
    samples: config.contracts.samples,
    timeoutMs: config.attempts.timeoutMs,
  };
}

export type App = FastifyInstance<any, any, any, any, TypeBoxTypeProvider>;

/** The HTTP API: routes, auth, limits and one error handler speaking problem+json. */
export async function buildApp(deps: ApiDeps): Promise<App> {
  const app = Fastify({
    bodyLimit: deps.config.api.bodyLimitBytes,
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
  }).withTypeProvider<TypeBoxTypeProvider>();

  // The API speaks JSON only: any other body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  app.addSchema(ProblemSchema);
  installEdgeGuards(app);
  // Problem responses are added to each route's schema here, so the OpenAPI
  // document lists them while handlers stay typed by their success schemas.
  app.addHook('onRoute', (route) => {
    const statuses = route.config?.problems;
    if (!statuses || !route.schema) return;
    const response = { ...((route.schema.response as Record<number, unknown> | undefined) ?? {}) };
    for (const status of statuses) response[status] = { $ref: 'Problem#' };
    route.schema = { ...route.schema, response };
  });
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = toProblemError(error);
    if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
    if (problem.status !== 404) deps.metrics.requestsRejected.inc({ reason: problem.problemType });
    for (const [name, value] of Object.entries(problem.extras.headers ?? {})) reply.header(name, value);
    return reply.status(problem.status).type('application/problem+json').send(problem.toProblem());
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .type('application/problem+json')
      .send(new ProblemError(404, ProblemType.notFound, 'Not found', `no route ${request.method} ${request.url.split('?')[0]}`).toProblem()),
  );

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Onceflow API',
        version: '1',
        description: 'One click, one job, one side effect. Every intent becomes one durable job keyed by (principal, operation, Idempotency-Key).',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const keyRing = new KeyRing(deps.config.keys);
  await app.register(rateLimit, {
    global: false,
    hook: 'preParsing',
    max: deps.config.api.rateLimitPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.principal?.id ?? request.ip,
    errorResponseBuilder: (_request, context) =>
      new ProblemError(429, ProblemType.rateLimited, 'Too many requests', `at most ${context.max} requests a minute per principal; retry after ${Math.ceil(context.ttl / 1000)} s`, {
        headers: { 'retry-after': String(Math.ceil(context.ttl / 1000)) },
      }),
  });

  await app.register(async (v1) => {
    v1.addHook('onRequest', async (request) => {
      request.principal = keyRing.authenticate(request.headers.authorization);
    });
    await registerJobRoutes(v1, deps);
    await registerJobCommandRoutes(v1, deps);
    await registerProviderRoutes(v1, deps);
  }, { prefix: '/v1' });
  await registerServiceRoutes(app, deps);
  return app;
}

function validationErrors(error: FastifyError): FieldError[] {
  return (error.validation ?? []).map((issue) => {
    const params = issue.params as { missingProperty?: string; additionalProperty?: string };
    const child = params.missingProperty ?? params.additionalProperty;
    const detail = issue.keyword === 'required' ? 'is required' : issue.keyword === 'additionalProperties' ? 'is not a known field' : issue.message ?? 'is not valid';
    return { pointer: `${issue.instancePath}${child ? `/${child}` : ''}`, detail };
  });
}

/** Maps anything thrown in a route to the problem it answers; 5xx details stay in the log. */
function toProblemError(error: FastifyError): ProblemError {
  if (error instanceof ProblemError) return error;
  if (error.validation) {
    const where = error.validationContext ?? 'body';
    const errors = validationErrors(error);
    return new ProblemError(400, ProblemType.validation, 'Invalid request', `the ${where} is not valid: ${errors.map((e) => `${e.pointer || '/'} ${e.detail}`).join('; ')}`, { errors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ProblemError(413, ProblemType.payloadTooLarge, 'Payload too large', error.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ProblemError(415, ProblemType.unsupportedMediaType, 'Unsupported media type', 'send the body as application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ProblemError(400, ProblemType.malformedJson, 'Malformed JSON', error.message);
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return new ProblemError(400, ProblemType.malformedJson, 'Malformed JSON', 'the body is not valid JSON');
  }
  if (error.statusCode === 429) return new ProblemError(429, ProblemType.rateLimited, 'Too many requests', error.message);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new ProblemError(error.statusCode, ProblemType.validation, 'Bad request', error.message);
  }
  return new ProblemError(500, ProblemType.internal, 'Internal error', 'something went wrong on our side; retrying with the same Idempotency-Key is safe', {}, { cause: error });
}
