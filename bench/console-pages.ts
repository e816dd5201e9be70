/**
 * `npm run bench:console [-- --jobs N] [--runs N]`: the console's pages
 * against a ledger seeded with N jobs (default 100,000): each page's time as
 * the API serves it (app.inject: routing, the queries, rendering), and the
 * plan of every statement the page ran, with the indexes it used.
 *
 * PostgreSQL: DATABASE_URL's server if set (a database of its own is
 * created and dropped), otherwise an embedded server in a temporary folder.
 * No Temporal is needed: pages only read the ledger.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, type Pool } from 'pg';
import { apiContracts, buildApp } from '../src/api/app';
import { JobWaiter } from '../src/api/job-waiter';
import { recordBaselines } from '../src/canary/baseline';
import { loadConfig } from '../src/config';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { createMetrics } from '../src/metrics/metrics';
import { createRegistry } from '../src/operations/registry';
import { createSimProviders, SIM_ROUTE } from '../src/sim/providers';
import { freePort } from '../src/stack/temporal-dev';
import { startEmbeddedPostgres } from '../src/stack/postgres';
import type { WorkflowTarget } from '../src/temporal/starter';

const { values: args } = parseArgs({ options: { jobs: { type: 'string', default: '100000' }, runs: { type: 'string', default: '15' } } });
const JOBS = Number(args.jobs);
const RUNS = Number(args.runs);
const OPERATOR_KEY = `bench-operator-${randomBytes(8).toString('hex')}`;

/** Seeds the ledger as a week of traffic leaves it (rows in time order, as they arrive), with triggers off for speed, then the documents terminal jobs carry. */
async function seed(db: Pool, jobs: number): Promise<void> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL session_replication_role = replica');
    await client.query(
      `INSERT INTO jobs (id, principal_id, operation, idempotency_key, request_digest, schema_version, input, status, result, error, workflow_id, created_at, updated_at, terminal_at)
       SELECT gen_random_uuid(), s.principal, s.operation, 'bench-' || s.g, 'sha256:' || md5(s.g::text), 1,
              jsonb_build_object('ticketId', 'T-' || s.g, 'customerMessage', 'Where is my order ' || s.g || '?', 'channel', 'email'),
              s.status,
              CASE WHEN s.status = 'succeeded' THEN '{"reply": "It ships today.", "escalate": false}'::jsonb END,
              CASE WHEN s.status = 'failed' THEN '{"type": "attempts_exhausted", "detail": "every route step failed"}'::jsonb END,
              'job-' || s.operation || '-' || s.g, s.at, s.at + interval '2 seconds',
              CASE WHEN s.status IN ('succeeded', 'failed', 'cancelled') THEN s.at + interval '2 seconds' END
         FROM (SELECT g, now() - interval '7 days' * ($1 - g) / $1 AS at,
                      (ARRAY['alice', 'alice', 'alice', 'bob', 'bob', 'carol'])[1 + g % 6] AS principal,
                      CASE WHEN g % 10 < 7 THEN 'support.reply' ELSE 'ticket.summarize' END AS operation,
                      CASE WHEN g % 100 < 90 THEN 'succeeded' WHEN g % 100 < 95 THEN 'failed' WHEN g % 100 < 97 THEN 'cancelled'
                           WHEN g % 100 = 97 THEN 'running' WHEN g % 100 = 98 THEN 'awaiting_resolution' ELSE 'accepted' END AS status
                 FROM generate_series(1, $1) AS g) s`,
      [jobs],
    );
    await client.query(
      `INSERT INTO attempts (job_id, operation, seq, provider, model, status, job_version, started_at, ended_at, error_class, error_detail,
                             usage_reported, input_tokens, output_tokens, cost, cost_currency)
       SELECT id, operation, 1, 'sim-primary', 'sim-small',
              CASE status WHEN 'awaiting_resolution' THEN 'unknown' ELSE status END, 0, created_at,
              CASE WHEN terminal_at IS NOT NULL THEN created_at + interval '1 second' END,
              CASE status WHEN 'failed' THEN 'contract_violation' WHEN 'awaiting_resolution' THEN 'timeout' END,
              CASE status WHEN 'failed' THEN '/reply is blank' WHEN 'awaiting_resolution' THEN 'no answer in 30000 ms' END,
              status IN ('succeeded', 'failed'),
              CASE WHEN status IN ('succeeded', 'failed') THEN 120 END, CASE WHEN status IN ('succeeded', 'failed') THEN 40 END,
              CASE WHEN status IN ('succeeded', 'failed') THEN 0.00016 END, CASE WHEN status IN ('succeeded', 'failed') THEN 'USD' END
         FROM jobs WHERE status <> 'accepted'`,
    );
    await client.query(
      `INSERT INTO effects (job_id, name, effect_key, status, receipt, created_at, updated_at, settled_at, phase, tries)
       SELECT id, 'message.send', 'onceflow-' || id || '-message.send', 'succeeded', jsonb_build_object('messageId', 'm-' || left(id::text, 8)),
              created_at + interval '1 second', created_at + interval '2 seconds', created_at + interval '2 seconds', 'sending', 1
         FROM jobs WHERE operation = 'support.reply' AND status = 'succeeded'`,
    );
    await client.query(
      `INSERT INTO effects (job_id, name, effect_key, status, error, created_at, updated_at, settled_at, phase, tries, owners)
       SELECT id, 'message.send', 'onceflow-' || id || '-message.send', 'needs_review',
              '{"class": "no_lookup_unsafe_to_repeat", "detail": "the downstream answered 500 and has no receipt for the key"}'::jsonb,
              created_at + interval '1 second', created_at + interval '5 seconds', created_at + interval '5 seconds', 'sending', 1, 2
         FROM jobs WHERE operation = 'support.reply' AND status = 'running' LIMIT 200`,
    );
    await client.query(
      `INSERT INTO job_events (job_id, type, detail, created_at)
       SELECT id, 'job.created', jsonb_build_object('requestDigest', request_digest), created_at FROM jobs
       UNION ALL
       SELECT id, 'job.awaiting_resolution', '{}'::jsonb, created_at + interval '31 seconds' FROM jobs WHERE status = 'awaiting_resolution'
       UNION ALL
       SELECT id, 'job.' || status, '{}'::jsonb, terminal_at FROM jobs WHERE terminal_at IS NOT NULL`,
    );
    await client.query(
      `INSERT INTO settlements (job_id, run, principal_id, operation, job_status, billing, currency, provider_cost, billable, input_tokens, output_tokens, attempts, attempts_unpriced, attempt_costs, settled_at)
       SELECT id, 1, principal_id, operation, status, 'winner', 'USD', 0.00016, CASE WHEN status = 'succeeded' THEN 0.00016 ELSE 0 END,
              120, 40, 1, 0, '[]'::jsonb, terminal_at
         FROM jobs WHERE terminal_at IS NOT NULL`,
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
  // What the triggers would have written: a terminal job's stored document.
  await db.query('UPDATE jobs SET details = job_details(id) WHERE terminal_at IS NOT NULL');
  await db.query('VACUUM ANALYZE');
}

interface Captured {
  text: string;
  values: unknown[];
}

/** The pool, with a switch that records every statement run through it. */
function capturing(pool: Pool): { pool: Pool; start(): void; stop(): Captured[] } {
  let captured: Captured[] | undefined;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    if (captured) {
      const [first, second] = args as [string | { text: string; values?: unknown[] }, unknown[] | undefined];
      captured.push(typeof first === 'string' ? { text: first, values: second ?? [] } : { text: first.text, values: first.values ?? [] });
    }
    return query(...args);
  };
  return {
    pool,
    start: () => {
      captured = [];
    },
    stop: () => {
      const out = captured ?? [];
      captured = undefined;
      return out;
    },
  };
}

/** The index names of a JSON plan, and whether any table was read whole. */
function planSummary(plan: unknown): { indexes: Set<string>; seqScans: Set<string> } {
  const indexes = new Set<string>();
  const seqScans = new Set<string>();
  const walk = (node: any) => {
    if (!node || typeof node !== 'object') return;
    if (node['Index Name']) indexes.add(node['Index Name']);
    if (node['Node Type'] === 'Seq Scan') seqScans.add(node['Relation Name']);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk((plan as any)[0].Plan);
  return { indexes, seqScans };
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

async function main(): Promise<void> {
  let stopPostgres: (() => Promise<void>) | undefined;
  let adminUrl = process.env.DATABASE_URL;
  let tempDir: string | undefined;
  if (!adminUrl) {
    tempDir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-console-bench-'));
    const postgres = await startEmbeddedPostgres({ dataDir: path.join(tempDir, 'pg'), port: await freePort(), database: 'postgres', persistent: false });
    adminUrl = postgres.adminUrl;
    stopPostgres = postgres.stop;
  }
  const name = `onceflow_console_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const raw = createPool(url.toString(), { max: 10 });
  const db = capturing(raw);
  try {
    await migrate(raw);
    let t0 = Date.now();
    await seed(raw, JOBS);
    const counts = (await raw.query(`SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM attempts) AS attempts, (SELECT count(*) FROM effects) AS effects, (SELECT count(*) FROM job_events) AS events, (SELECT count(*) FROM settlements) AS settlements`)).rows[0];
    console.log(`seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(counts)}`);

    const config = loadConfig({ DATABASE_URL: url.toString(), ONCEFLOW_API_KEYS: 'alice:k_alice', ONCEFLOW_OPERATOR_KEYS: OPERATOR_KEY, LOG_LEVEL: 'warn' });
    const operations = createRegistry();
    const providers = createSimProviders({ primary: 'http://127.0.0.1:9', backup: 'http://127.0.0.1:9' });
    await recordBaselines(raw, operations, () => SIM_ROUTE);
    const waiter = new JobWaiter(url.toString());
    // Pages read the ledger only; nothing here reaches Temporal.
    const workflows = { client: undefined, taskQueue: 'bench', searchAttributes: false, workflowTaskTimeoutMs: 10_000 } as unknown as WorkflowTarget;
    const app = await buildApp({ config, db: db.pool, workflows, operations, contracts: apiContracts(config, providers, () => SIM_ROUTE), metrics: createMetrics(), waiter, temporalReady: async () => undefined, logger: false });

    // Sign in as a browser does.
    const signInPage = await app.inject({ method: 'GET', url: '/console/sign-in' });
    const formToken = /name="_csrf" value="([^"]+)"/.exec(signInPage.body)![1]!;
    const signedIn = await app.inject({
      method: 'POST',
      url: '/console/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `onceflow_console_sign_in=${formToken}` },
      payload: new URLSearchParams({ _csrf: formToken, key: OPERATOR_KEY }).toString(),
    });
    const cookie = String([signedIn.headers['set-cookie']].flat().find((text) => String(text).startsWith('onceflow_console='))).split(';')[0]!;

    const sample = (await raw.query(`SELECT (SELECT id FROM jobs WHERE status = 'succeeded' AND operation = 'support.reply' ORDER BY created_at LIMIT 1 OFFSET 5000) AS succeeded,
                                            (SELECT id FROM jobs WHERE status = 'awaiting_resolution' LIMIT 1) AS awaiting,
                                            (SELECT idempotency_key FROM jobs ORDER BY created_at LIMIT 1 OFFSET 777) AS key`)).rows[0];
    const pages: Array<[string, string]> = [
      ['needs attention', '/console/attention'],
      ['job story (succeeded)', `/console/jobs/${sample.succeeded}`],
      ['job story (awaiting)', `/console/jobs/${sample.awaiting}`],
      ['providers and routes', '/console/providers'],
      ['overview, 24 h', '/console/overview?hours=24'],
      ['overview, 7 d', '/console/overview?hours=168'],
      ['search: id prefix', `/console/search?q=${String(sample.succeeded).slice(0, 8)}`],
      ['search: whole id', `/console/search?q=${sample.succeeded}&status=succeeded`],
      ['search: idempotency key', `/console/search?q=${sample.key}`],
      ['search: principal', '/console/search?principal=alice'],
      ['search: operation', '/console/search?operation=ticket.summarize'],
      ['search: principal+operation+status', '/console/search?principal=carol&operation=support.reply&status=failed'],
      ['search: status', '/console/search?status=awaiting_resolution'],
    ];
    console.log(`\n${JOBS.toLocaleString('en-US')} jobs; ${RUNS} timed runs per page after 3 warm-ups; app.inject (no network)\n`);
    console.log('| page | median ms | p95 ms | max ms | statements | indexes used | tables read whole |');
    console.log('| --- | ---: | ---: | ---: | ---: | --- | --- |');
    for (const [label, pageUrl] of pages) {
      for (let i = 0; i < 3; i++) {
        const warm = await app.inject({ method: 'GET', url: pageUrl, headers: { cookie, accept: 'text/html' } });
        if (warm.statusCode !== 200) throw new Error(`${pageUrl}: ${warm.statusCode} ${warm.body.slice(0, 300)}`);
      }
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        t0 = performance.now();
        await app.inject({ method: 'GET', url: pageUrl, headers: { cookie, accept: 'text/html' } });
        times.push(performance.now() - t0);
      }
      db.start();
      await app.inject({ method: 'GET', url: pageUrl, headers: { cookie, accept: 'text/html' } });
      const statements = db.stop();
      const indexes = new Set<string>();
      const seqScans = new Set<string>();
      for (const statement of statements) {
        const { rows } = await raw.query(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values);
        const summary = planSummary(rows[0]['QUERY PLAN']);
        summary.indexes.forEach((index) => indexes.add(index));
        summary.seqScans.forEach((table) => seqScans.add(table));
      }
      times.sort((a, b) => a - b);
      console.log(`| ${label} | ${percentile(times, 0.5).toFixed(1)} | ${percentile(times, 0.95).toFixed(1)} | ${times[times.length - 1]!.toFixed(1)} | ${statements.length} | ${[...indexes].sort().join(', ')} | ${[...seqScans].sort().join(', ') || '—'} |`);
    }
    await app.close();
    await waiter.close();
  } finally {
    await raw.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    await stopPostgres?.();
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
