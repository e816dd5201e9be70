import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from './deps';
import { ProblemError, ProblemType } from './problems';
import { jsonResponse, StringEnum } from './schemas';

const Check = StringEnum(['ok', 'unreachable']);

/** Health, readiness, metrics and the document: unauthenticated, for orchestrators, scrapers and clients. */
export async function registerServiceRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const service = { tags: ['service'], security: [] };

  app.get(
    '/healthz',
    {
      config: { problems: [] },
      schema: { ...service, operationId: 'health', summary: 'The process is up', response: { 200: jsonResponse(Type.Object({ status: Type.Literal('ok') }), 'Up') } },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { problems: [] },
      schema: {
        ...service,
        operationId: 'ready',
        summary: 'PostgreSQL and Temporal are reachable',
        description: ' 503 (problem+json with a checks member) when either is not.',
        response: { 200: jsonResponse(Type.Object({ status: Type.Literal('ready'), checks: Type.Object({ postgres: Check, temporal: Check }) }), 'Ready') },
      },
    },
    async () => {
      const checks = await Promise.allSettled([deps.db.query('SELECT 1'), deps.temporalReady()]);
      const [postgres, temporal] = checks.map((check) => (check.status === 'fulfilled' ? 'ok' : 'unreachable'));
      if (postgres !== 'ok' || temporal !== 'ok') {
        throw new ProblemError(503, ProblemType.unavailable, 'Not ready', `postgres: ${postgres}, temporal: ${temporal}`, { checks: { postgres, temporal } });
      }
      return { status: 'ready' as const, checks: { postgres: 'ok' as const, temporal: 'ok' as const } };
    },
  );

  app.get(
    '/metrics',
    {
      config: { problems: [] },
      schema: {
        ...service,
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        response: { 200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: Type.String() } } } },
      },
    },
    async (_request, reply) => {
      reply.type(deps.metrics.registry.contentType);
      return deps.metrics.registry.metrics();
    },
  );

  app.get(
    '/openapi.json',
    {
      config: { problems: [] },
      schema: {
        ...service,
        operationId: 'openapi',
        summary: 'This document (OpenAPI 3.1)',
        response: { 200: jsonResponse(Type.Object({}, { additionalProperties: true }), 'The OpenAPI document') },
      },
    },
    async () => app.swagger(),
  );
}
