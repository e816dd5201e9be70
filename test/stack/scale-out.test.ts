import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startSimStack, type SimStack } from '../../src/sim/stack';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { partEnv, startPart, stopPart } from '../harness/parts';
import { readHarnessState } from '../harness/state';
import { startTemporalCluster } from '../../src/stack/temporal-cluster';
import { loadTemporalDevConfig } from '../../src/stack/temporal-dev';
import { resolveTemporalServer } from '../../src/stack/tools';

const KEY = 'k_scale_out_alice';
const OPERATOR_KEY = 'k_scale_out_operator';
const TERMINAL = ['succeeded', 'failed', 'cancelled'];

interface JobView {
  id: string;
  status: string;
  result?: { messageId?: string };
  effects?: Array<{ name: string; status: string }>;
}

/** The Temporal a suite runs on: its address and namespace, and how to stop it when the suite made it. */
interface TemporalUnderTest {
  address: string;
  namespace: string;
  /** How many workflow executions its own store holds, when the suite can look (its PostgreSQL). */
  executions?(): Promise<number>;
  stop?(): Promise<void>;
}

/**
 * The scaling story: two API processes and two workers on one Temporal
 * namespace and one PostgreSQL database. Clients send each intent to both
 * APIs; one API and one worker are killed while jobs are in flight. One job
 * per key, one message per job. On the harness's dev server, and on
 * Temporal's own server with PostgreSQL persistence and several history
 * shards (a production-shaped Temporal) when one is built here.
 */
describe('two APIs and two workers on one stack', () => {
  scaleOut(async () => {
    const state = readHarnessState();
    return { address: state.temporalAddress, namespace: state.temporalNamespace };
  });
});

const cluster = resolveTemporalServer({ build: false });

describe("two APIs and two workers on Temporal's own server with PostgreSQL persistence and 4 history shards", () => {
  scaleOut(async () => {
    const tool = await cluster;
    if (!tool) throw new Error('no Temporal server here: `npm run tools -- ensure --temporal-server` builds it (CI does)');
    // Its databases on the harness's PostgreSQL, beside the ledger's, under names of their own.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-cluster-'));
    const admin = new URL(readHarnessState().adminDatabaseUrl);
    const suffix = randomUUID().slice(0, 8);
    const server = await startTemporalCluster(tool, {
      dir,
      postgres: { host: admin.hostname, port: Number(admin.port), user: decodeURIComponent(admin.username), password: decodeURIComponent(admin.password) },
      databases: { store: `temporal_${suffix}`, visibility: `temporal_visibility_${suffix}` },
      namespace: 'onceflow-cluster-test',
      shards: 4,
      searchAttributes: loadTemporalDevConfig().searchAttributes,
      dynamicConfig: { 'system.forceSearchAttributesCacheRefreshOnRead': true },
      log: () => undefined,
    });
    const store = new URL(readHarnessState().adminDatabaseUrl);
    store.pathname = `/temporal_${suffix}`;
    return {
      address: server.address,
      namespace: server.namespace,
      async executions() {
        const pg = new Client({ connectionString: store.toString() });
        await pg.connect();
        try {
          return (await pg.query<{ n: number }>('SELECT count(*)::int AS n FROM executions')).rows[0]!.n;
        } finally {
          await pg.end();
        }
      },
      async stop() {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
        const pg = new Client({ connectionString: readHarnessState().adminDatabaseUrl });
        await pg.connect();
        for (const database of [`temporal_${suffix}`, `temporal_visibility_${suffix}`]) await pg.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await pg.end();
      },
    };
  }, () => cluster.then((tool) => tool !== undefined));
});

function scaleOut(startTemporal: () => Promise<TemporalUnderTest>, available: () => Promise<boolean> = async () => true): void {
  let temporal: TemporalUnderTest | undefined;
  let db: TestDatabase;
  let sims: SimStack;
  const parts: ChildProcess[] = [];
  const apiUrls: string[] = [];
  let env: NodeJS.ProcessEnv;

  let skipped = false;

  beforeAll(async () => {
    if (!(await available())) {
      skipped = true;
      process.stderr.write('scale-out: no Temporal server is built here, so the production-shaped run is skipped (`npm run tools -- ensure --temporal-server` builds it)\n');
      return;
    }
    temporal = await startTemporal();
    db = await createTestDatabase({ migrate: false });
    sims = await startSimStack();
    env = {
      ...partEnv({ databaseUrl: db.url, sims, name: 'scale-out', aliceKey: KEY }),
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      ONCEFLOW_OPERATOR_KEYS: OPERATOR_KEY,
      ONCEFLOW_RATE_LIMIT_PER_MINUTE: '100000',
      ONCEFLOW_ATTEMPT_TIMEOUT_MS: '3000',
      ONCEFLOW_WORKFLOW_TASK_TIMEOUT_MS: '2000',
      ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '1000',
      ONCEFLOW_RECONCILE_INTERVAL_MS: '500',
      ONCEFLOW_EFFECT_LEASE_MS: '2000',
      ONCEFLOW_EFFECT_CALL_TIMEOUT_MS: '500',
    };
    for (let i = 0; i < 2; i++) parts.push((await startPart('worker', env, /^worker: polling/)).proc);
    for (let i = 0; i < 2; i++) {
      const api = await startPart('api', env, /^api: listening on (\S+)/);
      parts.push(api.proc);
      apiUrls.push(api.match[1]!);
    }
  }, 180_000);

  afterAll(async () => {
    if (skipped) return;
    await Promise.all(parts.map((proc) => stopPart(proc, 'SIGKILL')));
    await sims?.close();
    await db?.drop();
    await temporal?.stop?.();
  });

  /**
   * What the operator on call does with an effect in review (a worker died
   * while it was sending, and the downstream cannot be asked whether a repeat
   * is safe): looks at the downstream, and settles the effect by what it
   * finds there.
   */
  async function settleReview(apiUrl: string, job: JobView, ticketId: string): Promise<void> {
    const delivered = sims.downstream.deliveries().find((d) => d.ticketId === ticketId);
    const body = delivered ? { outcome: 'succeeded', reason: 'found at the downstream', receipt: { messageId: delivered.messageId } } : { outcome: 'failed', reason: 'not at the downstream' };
    await fetch(`${apiUrl}/v1/jobs/${job.id}/effects/message.send/resolution`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /** One client's intent: sent to an API, then the other when that one is gone, with the same key, until the job is terminal. */
  async function submitUntilDone(idempotencyKey: string, ticketId: string, message: string, firstApi: number): Promise<JobView> {
    const body = JSON.stringify({ operation: 'support.reply', input: { ticketId, customerMessage: message, channel: 'email' } });
    const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey, prefer: 'wait=5' };
    const deadline = Date.now() + 90_000;
    for (let turn = firstApi; Date.now() < deadline; turn++) {
      const url = apiUrls[turn % apiUrls.length]!;
      try {
        const response = await fetch(`${url}/v1/jobs`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
        if (response.status >= 500) continue;
        const job = (await response.json()) as JobView;
        if (response.status < 300 && TERMINAL.includes(job.status)) return job;
        if (job.effects?.some((effect) => effect.status === 'needs_review')) await settleReview(url, job, ticketId);
        if (response.status >= 400) throw new Error(`${response.status} ${JSON.stringify(job)}`);
      } catch (err) {
        if ((err as Error).message.match(/^\d{3} /)) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const { rows } = await db.pool.query(
      `SELECT j.id, j.status, j.workflow_id, j.created_at, j.updated_at,
              (SELECT json_agg(json_build_object('seq', a.seq, 'status', a.status, 'provider', a.provider, 'error', a.error_class, 'detail', a.error_detail) ORDER BY a.seq) FROM attempts a WHERE a.job_id = j.id) AS attempts,
              (SELECT json_agg(json_build_object('name', e.name, 'status', e.status)) FROM effects e WHERE e.job_id = j.id) AS effects,
              (SELECT json_agg(json_build_object('type', ev.type, 'at', ev.created_at, 'detail', ev.detail) ORDER BY ev.id) FROM job_events ev WHERE ev.job_id = j.id) AS events
       FROM jobs j WHERE j.idempotency_key = $1`,
      [idempotencyKey],
    );
    throw new Error(`intent ${idempotencyKey} did not end in time: ${JSON.stringify(rows, null, 1)}`);
  }

  it('keeps one job per key and one message per job while an API and a worker are killed', async () => {
    if (skipped) return;
    // Arrange: intents whose provider answers slowly enough for the kills to land mid-flight.
    const intents = Array.from({ length: 24 }, (_, i) => ({ key: `scale-${i}`, ticketId: `SO-${i}`, message: `Where is order ${i}? @sim(sim-primary:delay=${200 + (i % 4) * 150})` }));

    // Act: every intent from two clients at once (one per API); the kills come while they run.
    const running = intents.flatMap((intent, i) => [submitUntilDone(intent.key, intent.ticketId, intent.message, i), submitUntilDone(intent.key, intent.ticketId, intent.message, i + 1)]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const openAtKill = (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE terminal_at IS NULL')).rows[0]!.n;
    await Promise.all([stopPart(parts[0], 'SIGKILL'), stopPart(parts[2], 'SIGKILL')]);
    const answers = await Promise.all(running);

    // Assert: the kills found jobs in flight; both clients of an intent got the same job, which ended
    // succeeded (failed only where the operator found that nothing was sent).
    expect(openAtKill).toBeGreaterThan(0);
    for (let i = 0; i < intents.length; i++) {
      expect(answers[2 * i]!.id).toBe(answers[2 * i + 1]!.id);
      expect(['succeeded', 'failed']).toContain(answers[2 * i]!.status);
    }
    expect(answers.filter((a) => a.status === 'succeeded').length).toBeGreaterThan(intents.length / 2);
    const { rows } = await db.pool.query<{ idempotency_key: string; jobs: number }>(`SELECT idempotency_key, count(*)::int AS jobs FROM jobs GROUP BY idempotency_key`);
    expect(rows).toHaveLength(intents.length);
    expect(rows.every((row) => row.jobs === 1)).toBe(true);
    // The jobs' workflows ran on this Temporal: its own store holds one execution per job at least.
    if (temporal?.executions) expect(await temporal.executions()).toBeGreaterThanOrEqual(intents.length);
    const deliveries = sims.downstream.deliveries();
    for (let i = 0; i < intents.length; i++) {
      const mine = deliveries.filter((d) => d.ticketId === intents[i]!.ticketId);
      if (answers[2 * i]!.status === 'failed') {
        expect(mine).toHaveLength(0);
        continue;
      }
      expect(mine).toHaveLength(1);
      expect(mine[0]!.messageId).toBe(answers[2 * i]!.result!.messageId);
    }
  }, 150_000);
}
