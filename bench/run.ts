/**
 * `npm run bench`: Onceflow measured side by side with baselines in one run,
 * against the same real PostgreSQL and Temporal dev server.
 *
 * - replay: POST of a finished job's key vs a bare Fastify route doing one
 *   primary-key lookup. Latency p50 at concurrency 1, throughput at 16.
 * - admission: POST of a new key vs a bare script doing the same INSERT plus
 *   workflow.start (no worker runs, so neither side competes with workflows).
 * - storm: 1,000 concurrent identical POSTs: exactly one job and one workflow.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Agent, fetch as undiciFetch } from 'undici';
import { createActivities } from '../src/activities';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { requestDigest } from '../src/jobs/digest';
import { jobWorkflowId } from '../src/jobs/scope';
import { createMetrics } from '../src/metrics/metrics';
import { startEmbeddedPostgres } from '../src/stack/postgres';
import { freePort, loadTemporalDevConfig, startDevServer } from '../src/stack/temporal-dev';
import { resolveTemporalCli } from '../src/stack/tools';
import { JOB_WORKFLOW, searchAttributes } from '../src/temporal/contract';
import { TypedSearchAttributes } from '@temporalio/common';
import { createWorker } from '../src/worker/worker';
import { load, type LoadResult } from './load';
import { loadConfig } from '../src/config';
import { createRegistry } from '../src/operations/registry';
import { createSimProviders, SIM_ROUTE } from '../src/sim/providers';
import { buildActivityDeps } from '../src/worker/activity-deps';
import { startSimStack } from '../src/sim/stack';

const BENCH_KEY = 'k_bench';
const TASK_QUEUE = 'bench';
const input = { ticketId: 'T-1', customerMessage: 'Where is my order?', channel: 'email' };
const body = (over: object = {}) => JSON.stringify({ operation: 'support.reply', input: { ...input, ...over } });
const log = (line: string): void => console.log(line);

type Measure = LoadResult;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-bench-'));
  chmodSync(dir, 0o755);
  const stops: Array<() => Promise<void>> = [];
  try {
    log('starting PostgreSQL and the Temporal dev server …');
    const databaseUrl =
      process.env.DATABASE_URL ??
      (await (async () => {
        const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'onceflow', persistent: false });
        stops.push(pg.stop);
        return pg.url;
      })());
    const cli = await resolveTemporalCli({ build: true, log });
    if (!cli) throw new Error('no Temporal CLI (run npm run tools -- ensure)');
    const temporal = await startDevServer(cli.path, { ...loadTemporalDevConfig(), port: await freePort(), ui: false, dbFilename: undefined }, log);
    stops.push(temporal.stop);
    const db = createPool(databaseUrl, { max: 4 });
    stops.push(() => db.end());
    await migrate(db);

    const env = { ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace, ONCEFLOW_TASK_QUEUE: TASK_QUEUE };
    // BENCH_PROFILE=<dir> writes a CPU profile of the servers (open it in Chrome DevTools).
    const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
    const child = spawn(process.execPath, [...profile, '--require', 'tsx/cjs', path.join(__dirname, 'servers.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    stops.push(async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    });
    const { onceflowUrl, baselineUrl } = JSON.parse(
      await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`bench servers exited with ${code}`)));
      }),
    ) as { onceflowUrl: string; baselineUrl: string };
    const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' };

    // Seed one finished job, with a worker that runs only for this.
    const nativeConnection = await NativeConnection.connect({ address: temporal.address });
    const sims = await startSimStack();
    stops.push(() => sims.close());
    const worker = await createWorker({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue: TASK_QUEUE,
      activities: createActivities(
        buildActivityDeps({
          db,
          metrics: createMetrics(),
          config: loadConfig({ ...env, ONCEFLOW_MESSAGES_URL: sims.downstream.url }),
          operations: createRegistry(),
          providers: createSimProviders({ primary: sims.primary.url, backup: sims.backup.url }),
          routeFor: () => SIM_ROUTE,
        }),
      ),
    });
    const replayKey = `replay-${randomUUID()}`;
    const seeded = await worker.runUntil(async () => {
      const response = await fetch(`${onceflowUrl}/v1/jobs`, { method: 'POST', headers: { ...headers, 'idempotency-key': replayKey, prefer: 'wait=30' }, body: body() });
      return (await response.json()) as { id: string; status: string };
    });
    await nativeConnection.close();
    if (seeded.status !== 'succeeded') throw new Error(`seed job is ${seeded.status}`);

    log('\nreplay: finished job by key (Onceflow) vs one primary-key lookup (bare Fastify)');
    const replay = { onceflow: [] as Measure[], baseline: [] as Measure[] };
    const replayOnceflow = (connections: number) =>
      load(onceflowUrl, { method: 'POST', path: '/v1/jobs', headers: { ...headers, 'idempotency-key': replayKey }, body: body(), expectStatus: 200 }, connections, 3000);
    const replayBaseline = (connections: number) => load(baselineUrl, { method: 'GET', path: `/jobs/${seeded.id}`, expectStatus: 200 }, connections, 3000);
    await replayOnceflow(4);
    await replayBaseline(4); // warm-up
    for (let round = 0; round < 3; round++) {
      replay.baseline.push({ ...(await replayBaseline(1)), rps: (await replayBaseline(16)).rps });
      replay.onceflow.push({ ...(await replayOnceflow(1)), rps: (await replayOnceflow(16)).rps });
    }

    log('admission: new key (Onceflow POST) vs INSERT + workflow.start (bare script)');
    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, namespace: temporal.namespace });
    const admissionBaseline = async (n: number): Promise<number[]> => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const scope = { principalId: 'baseline', operation: 'support.reply', idempotencyKey: randomUUID() };
        const started = process.hrtime.bigint();
        const { rows } = await db.query(
          `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id)
           VALUES ($1, $2, $3, $4, 1, $5, $6) ON CONFLICT (principal_id, operation, idempotency_key) DO NOTHING RETURNING id`,
          [scope.principalId, scope.operation, scope.idempotencyKey, requestDigest(scope.operation, 1, input), input, jobWorkflowId(scope)],
        );
        await client.workflow.start(JOB_WORKFLOW, {
          taskQueue: 'bench-baseline',
          workflowId: jobWorkflowId(scope),
          args: [{ jobId: rows[0].id, searchAttributes: true }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          typedSearchAttributes: new TypedSearchAttributes([
            { key: searchAttributes.principal, value: scope.principalId },
            { key: searchAttributes.operation, value: scope.operation },
            { key: searchAttributes.status, value: 'accepted' },
          ]),
        });
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      return times;
    };
    const admissionOnceflow = async (n: number): Promise<number[]> => {
      const result = await load(onceflowUrl, () => ({ method: 'POST', path: '/v1/jobs', headers: { ...headers, 'idempotency-key': randomUUID() }, body: body(), expectStatus: 202 }), 1, n * 10);
      return [result.p50];
    };
    await admissionBaseline(30);
    await admissionOnceflow(30); // warm-up
    const admission = { baseline: [] as number[], onceflow: [] as number[] };
    for (let round = 0; round < 3; round++) {
      admission.baseline.push(median(await admissionBaseline(200)));
      admission.onceflow.push(median(await admissionOnceflow(200)));
    }

    log('storm: 1,000 concurrent identical POSTs');
    const stormKey = `storm-${randomUUID()}`;
    const agent = new Agent({ connections: 1000, pipelining: 0 });
    const statuses = await Promise.all(
      Array.from({ length: 1000 }, async () => {
        const response = await undiciFetch(`${onceflowUrl}/v1/jobs`, { method: 'POST', headers: { ...headers, 'idempotency-key': stormKey }, body: body(), dispatcher: agent });
        const job = (await response.json()) as { id: string; workflowId: string };
        return { status: response.status, id: job.id, workflowId: job.workflowId };
      }),
    );
    await agent.close();
    const jobRows = Number((await db.query('SELECT count(*) FROM jobs WHERE idempotency_key = $1', [stormKey])).rows[0].count);
    let workflows = 0;
    for await (const _ of client.workflow.list({ query: `WorkflowId = '${statuses[0]!.workflowId}'` })) workflows++;
    await connection.close();

    const rb = {
      p50: median(replay.baseline.map((m) => m.p50)),
      rps: median(replay.baseline.map((m) => m.rps)),
    };
    const ro = {
      p50: median(replay.onceflow.map((m) => m.p50)),
      rps: median(replay.onceflow.map((m) => m.rps)),
    };
    const ab = median(admission.baseline);
    const ao = median(admission.onceflow);
    const ids = new Set(statuses.map((s) => s.id));
    const count = (code: number) => statuses.filter((s) => s.status === code).length;
    const verdict = (ok: boolean) => (ok ? 'meets target' : 'MISSES target');
    console.log(`
results (median of 3 rounds; latency in ms, throughput in requests/s)
  replay     p50      Onceflow ${ro.p50.toFixed(2)}  baseline ${rb.p50.toFixed(2)}  ratio ${(ro.p50 / rb.p50).toFixed(2)}x  (target <= 1.20x: ${verdict(ro.p50 / rb.p50 <= 1.2)})
  replay     rps@16   Onceflow ${ro.rps.toFixed(0)}  baseline ${rb.rps.toFixed(0)}  ratio ${(ro.rps / rb.rps).toFixed(2)}x  (target >= 0.80x: ${verdict(ro.rps / rb.rps >= 0.8)})
  admission  p50      Onceflow ${ao.toFixed(2)}  baseline ${ab.toFixed(2)}  ratio ${(ao / ab).toFixed(2)}x  (target <= 1.25x: ${verdict(ao / ab <= 1.25)})
  storm      1000 POSTs: ${count(202)} x 202, ${count(200)} x 200 replayed, other ${1000 - count(202) - count(200)}; distinct job ids ${ids.size}; job rows ${jobRows}; workflows ${workflows}  (${verdict(ids.size === 1 && jobRows === 1 && workflows === 1 && count(202) === 1)})
`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

main().catch((err: unknown) => {
  console.error(`bench: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
