import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client, Connection } from '@temporalio/client';
import { Agent, fetch as undiciFetch } from 'undici';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { bareAdmission } from '../bare-admission';
import { BENCH_KEY } from '../e2e';
import { root, startService, type Infra } from '../infra';
import { load, type LoadResult } from '../load';
import { fixed, median, type ResultRow } from '../stats';

const input = { ticketId: 'T-1', customerMessage: 'Where is my order?', channel: 'email' };
const body = (): string => JSON.stringify({ operation: 'support.reply', input });

/**
 * The front door alone: replay of a finished job against a bare Fastify
 * route doing one primary-key lookup; admission of a new key against a bare
 * INSERT plus workflow.start; and a storm of 1,000 identical POSTs.
 */
export async function frontDoorSection(infra: Infra, opts: { rounds: number }, log: (line: string) => void): Promise<ResultRow[]> {
  const databaseUrl = await infra.createDatabase(`front_${randomUUID().slice(0, 8)}`);
  const db = createPool(databaseUrl, { max: 4 });
  await migrate(db);
  const taskQueue = `bench-front-${randomUUID().slice(0, 8)}`;
  const env = { ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: infra.temporal.address, TEMPORAL_NAMESPACE: infra.temporal.namespace, ONCEFLOW_TASK_QUEUE: taskQueue };
  // BENCH_PROFILE=<dir> writes a CPU profile of the servers (open it in Chrome DevTools).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, '--require', 'tsx/cjs', path.join(root, 'bench', 'servers.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const connection = await Connection.connect({ address: infra.temporal.address });
  const client = new Client({ connection, namespace: infra.temporal.namespace });
  try {
    const { onceflowUrl, baselineUrl } = JSON.parse(
      await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`bench servers exited with ${code}`)));
      }),
    ) as { onceflowUrl: string; baselineUrl: string };
    const headers = { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' };

    // One finished job to replay, run by a worker that lives only for it.
    const portOf = (url: string) => new URL(url).port;
    const worker = await startService(
      process.execPath,
      [path.join(root, 'dist', 'worker', 'main.js')],
      { ...env, ONCEFLOW_WORKER_METRICS_PORT: '0', SIM_PRIMARY_PORT: portOf(infra.sims.primaryUrl), SIM_BACKUP_PORT: portOf(infra.sims.backupUrl), SIM_DOWNSTREAM_PORT: portOf(infra.sims.downstreamUrl) },
      /^worker: polling/,
    );
    const replayKey = `replay-${randomUUID()}`;
    const seeded = (await (await fetch(`${onceflowUrl}/v1/jobs`, { method: 'POST', headers: { ...headers, 'idempotency-key': replayKey, prefer: 'wait=30' }, body: body() })).json()) as { id: string; status: string };
    await worker.stop();
    if (seeded.status !== 'succeeded') throw new Error(`the job to replay is ${seeded.status}`);

    log('replay: a finished job by key (Onceflow) vs one primary-key lookup (bare Fastify)');
    const replay = { onceflow: [] as LoadResult[], baseline: [] as LoadResult[] };
    const replayOnceflow = (connections: number) => load(onceflowUrl, { method: 'POST', path: '/v1/jobs', headers: { ...headers, 'idempotency-key': replayKey }, body: body(), expectStatus: 200 }, connections, 3000);
    const replayBaseline = (connections: number) => load(baselineUrl, { method: 'GET', path: `/jobs/${seeded.id}`, expectStatus: 200 }, connections, 3000);
    await replayOnceflow(4);
    await replayBaseline(4);
    for (let round = 0; round < opts.rounds; round++) {
      replay.baseline.push({ ...(await replayBaseline(1)), rps: (await replayBaseline(16)).rps });
      replay.onceflow.push({ ...(await replayOnceflow(1)), rps: (await replayOnceflow(16)).rps });
    }

    log('admission: a new key (Onceflow POST) vs INSERT + workflow.start (bare script)');
    const admissionBaseline = async (n: number): Promise<number> => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const scope = { principalId: 'baseline', operation: 'support.reply', idempotencyKey: randomUUID() };
        const started = process.hrtime.bigint();
        await bareAdmission(db, client, taskQueue, scope, input);
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      return median(times);
    };
    const admissionOnceflow = async (n: number): Promise<number> => {
      const result = await load(onceflowUrl, () => ({ method: 'POST', path: '/v1/jobs', headers: { ...headers, 'idempotency-key': randomUUID() }, body: body(), expectStatus: 202 }), 1, n * 10);
      return result.p50;
    };
    // The same INSERT and start behind a bare Fastify route: what HTTP adds, apart from what Onceflow does.
    const admissionRoute = async (n: number): Promise<number> => {
      const result = await load(baselineUrl, () => ({ method: 'POST', path: '/admit', headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() }, body: JSON.stringify({ input }), expectStatus: 202 }), 1, n * 10);
      return result.p50;
    };
    await admissionBaseline(30);
    await admissionRoute(30);
    await admissionOnceflow(30);
    const admission = { baseline: [] as number[], route: [] as number[], onceflow: [] as number[] };
    for (let round = 0; round < opts.rounds; round++) {
      admission.baseline.push(await admissionBaseline(200));
      admission.route.push(await admissionRoute(200));
      admission.onceflow.push(await admissionOnceflow(200));
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

    const rb = { p50: median(replay.baseline.map((m) => m.p50)), rps: median(replay.baseline.map((m) => m.rps)) };
    const ro = { p50: median(replay.onceflow.map((m) => m.p50)), rps: median(replay.onceflow.map((m) => m.rps)) };
    const ab = median(admission.baseline);
    const ao = median(admission.onceflow);
    const ar = median(admission.route);
    const ids = new Set(statuses.map((s) => s.id));
    const count = (code: number) => statuses.filter((s) => s.status === code).length;
    return [
      { section: 'replay', measure: 'p50 c1 (ms)', value: fixed(ro.p50, 2), reference: `${fixed(rb.p50, 2)} bare route`, ratio: ro.p50 / rb.p50, target: '<= 1.20x', ok: ro.p50 / rb.p50 <= 1.2 },
      { section: 'replay', measure: 'throughput c16 (req/s)', value: fixed(ro.rps, 0), reference: `${fixed(rb.rps, 0)} bare route`, ratio: ro.rps / rb.rps, target: '>= 0.80x', ok: ro.rps / rb.rps >= 0.8 },
      // The target: the same INSERT and workflow start behind a bare Fastify route (HTTP's share is in both).
      { section: 'admission', measure: 'p50 c1 (ms)', value: fixed(ao, 2), reference: `${fixed(ar, 2)} route INSERT+start`, ratio: ao / ar, target: '<= 1.15x', ok: ao / ar <= 1.15 },
      // Not a target: the same steps as a bare script, with no HTTP at all.
      { section: 'admission', measure: 'p50 c1 (ms), against a script', value: fixed(ao, 2), reference: `${fixed(ab, 2)} INSERT+start`, ratio: ao / ab },
      {
        section: 'storm',
        measure: '1,000 identical POSTs',
        value: `${count(202)}x202 ${count(200)}x200 other ${1000 - count(202) - count(200)}; ids ${ids.size}, rows ${jobRows}, workflows ${workflows}`,
        target: 'one job',
        ok: ids.size === 1 && jobRows === 1 && workflows === 1 && count(202) === 1,
      },
    ];
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    await connection.close();
    await db.end();
  }
}
