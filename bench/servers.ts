/**
 * Child process of the benchmark: the Onceflow API and the baselines side by
 * side, on the same Postgres, so the load generator never shares their event
 * loop. The baselines are bare Fastify routes: one primary-key lookup
 * (replay's), and an INSERT plus workflow.start (admission's, through HTTP as
 * Onceflow's admission is).
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import Fastify from 'fastify';
import { bareAdmission } from './bare-admission';

// The API as production runs it: compiled by tsc into dist/ (`npm run bench`
// builds first), not transpiled on load, which wraps every function made at
// run time in a naming helper and would charge that to each request.
const dist = (module: string): string => path.join(__dirname, '..', 'dist', module);
const { apiContracts, buildApp } = require(dist('api/app')) as typeof import('../src/api/app');
const { JobWaiter } = require(dist('api/job-waiter')) as typeof import('../src/api/job-waiter');
const { loadConfig, parseApiKeys } = require(dist('config')) as typeof import('../src/config');
const { createPool } = require(dist('db/pool')) as typeof import('../src/db/pool');
const { createMetrics } = require(dist('metrics/metrics')) as typeof import('../src/metrics/metrics');
const { createRegistry } = require(dist('operations/registry')) as typeof import('../src/operations/registry');

export const BENCH_KEY = 'k_bench';

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, ONCEFLOW_RATE_LIMIT_PER_MINUTE: '100000000' });
  const url = config.databaseUrl!;
  const onceflowDb = createPool(url, { max: 10 });
  const baselineDb = createPool(url, { max: 10 });
  const connection = await Connection.connect({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const waiter = new JobWaiter(url);
  const app = await buildApp({
    config: { ...config, keys: parseApiKeys(`bench:${BENCH_KEY}`, undefined) },
    db: onceflowDb,
    workflows: { client, taskQueue: config.temporal.taskQueue, searchAttributes: true },
    operations: createRegistry(),
    contracts: apiContracts(config, new Map(), () => []),
    metrics: createMetrics(),
    waiter,
    temporalReady: async () => undefined,
    logger: false,
  });
  const baseline = Fastify({ logger: false });
  baseline.get<{ Params: { id: string } }>('/jobs/:id', async (request, reply) => {
    const { rows } = await baselineDb.query('SELECT * FROM jobs WHERE id = $1', [request.params.id]);
    if (!rows[0]) return reply.status(404).send({});
    return rows[0];
  });
  // Admission's reference behind a route, as the front-door section also runs it bare.
  baseline.post<{ Body: { input: Record<string, unknown> } }>('/admit', async (request, reply) => {
    const scope = { principalId: 'baseline-route', operation: 'support.reply', idempotencyKey: String(request.headers['idempotency-key']) };
    const id = await bareAdmission(baselineDb, client, config.temporal.taskQueue, scope, request.body.input);
    return reply.status(202).send({ id });
  });
  const onceflowUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const baselineUrl = await baseline.listen({ host: '127.0.0.1', port: 0 });
  process.stdout.write(`${JSON.stringify({ onceflowUrl, baselineUrl })}\n`);
  process.on('SIGTERM', () => {
    void Promise.all([app.close(), baseline.close(), waiter.close()]).finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
