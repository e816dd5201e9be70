import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from './app';
import { ProblemError, ProblemType } from './problems';

/** Health, readiness and metrics: unauthenticated, for orchestrators and scrapers. */
export async function registerServiceRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.get('/healthz', { schema: { summary: 'The process is up', tags: ['service'] } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { summary: 'PostgreSQL and Temporal are reachable', tags: ['service'] } }, async () => {
    const checks = await Promise.allSettled([deps.db.query('SELECT 1'), deps.temporalReady()]);
    const [postgres, temporal] = checks.map((check) => (check.status === 'fulfilled' ? 'ok' : 'unreachable'));
    if (postgres !== 'ok' || temporal !== 'ok') {
      throw new ProblemError(503, ProblemType.unavailable, 'Not ready', `postgres: ${postgres}, temporal: ${temporal}`, { checks: { postgres, temporal } });
    }
    return { status: 'ready', checks: { postgres, temporal } };
  });

  app.get('/metrics', { schema: { summary: 'Prometheus metrics', tags: ['service'] } }, async (_request, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
