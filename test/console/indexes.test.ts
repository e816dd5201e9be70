import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { openAttempt } from '../../src/ledger/attempts';
import { KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';
import { HTML, signIn } from './console-http';

interface Statement {
  text: string;
  values: unknown[];
}

/** Records every statement run through the pool while `during` runs. */
async function statementsOf(pool: Pool, during: () => Promise<unknown>): Promise<Statement[]> {
  const seen: Statement[] = [];
  const original = pool.query;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: Pool, ...args: unknown[]) {
    const [first, second] = args as [string | { text: string; values?: unknown[] }, unknown[] | undefined];
    seen.push(typeof first === 'string' ? { text: first, values: second ?? [] } : { text: first.text, values: first.values ?? [] });
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  };
  try {
    await during();
  } finally {
    pool.query = original;
  }
  return seen;
}

/**
 * How a plan reads, with sequential scans priced out (so one is left only
 * where no index can serve): the tables it reads whole, scanned or through
 * an index whose leading column no condition narrows, and how many sorts it does.
 */
async function howPlanned(pool: Pool, statement: Statement): Promise<{ readWhole: string[]; sorts: number }> {
  // A partial index holds only the rows its predicate names (effects in review): reading all of it is the condition.
  // A condition narrows a B-tree only through its leading column; on a later column alone it reads the whole index.
  const indexes = (await pool.query<{ name: string; partial: boolean; leading: string | null }>(
    `SELECT i.indexrelid::regclass::text AS name, i.indpred IS NOT NULL AS partial, a.attname AS leading
       FROM pg_index i LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]`,
  )).rows;
  const partial = new Set(indexes.filter((index) => index.partial).map((index) => index.name));
  const leading = new Map(indexes.filter((index) => index.leading !== null).map((index) => [index.name, index.leading!]));
  const client = await pool.connect();
  try {
    await client.query('SET enable_seqscan = off');
    const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values);
    const readWhole: string[] = [];
    let sorts = 0;
    const walk = (node: Record<string, unknown>): void => {
      const type = String(node['Node Type']);
      if (type === 'Seq Scan') readWhole.push(String(node['Relation Name']));
      if (/^(Index Scan|Index Only Scan|Bitmap Index Scan)$/.test(type) && node['Index Cond'] === undefined && !partial.has(String(node['Index Name']))) readWhole.push(`${String(node['Index Name'])} (no condition)`);
      const column = leading.get(String(node['Index Name']));
      if (node['Index Cond'] !== undefined && column && !new RegExp(`\\b${column}\\b`).test(String(node['Index Cond']))) readWhole.push(`${String(node['Index Name'])} (not by ${column})`);
      if (type === 'Sort' || type === 'Incremental Sort') sorts++;
      for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
    };
    walk(rows[0]['QUERY PLAN'][0].Plan);
    return { readWhole, sorts };
  } finally {
    await client.query('RESET enable_seqscan');
    client.release();
  }
}

/**
 * Every statement a console page runs has an index to read (timings with
 * 100,000 jobs are `npm run bench:console`'s; this holds at any size).
 */
describe('the console pages read the ledger through indexes', () => {
  let stack: TestStack;
  let cookie: string;
  let jobId: string;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    ({ cookie } = await signIn(stack.app, KEYS.operator));
    jobId = (await submitReply(stack, { message: 'indexed', key: randomUUID() })).json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    await stack.db.pool.query(`UPDATE attempts SET status = 'unknown' WHERE id = $1`, [opened.attempt.id]);
    await stack.db.pool.query(`UPDATE jobs SET status = 'awaiting_resolution' WHERE id = $1`, [jobId]);
    // Enough rows, over a week, for the planner to choose as it would on a real ledger (on a handful it may read anything).
    await stack.db.pool.query(
      `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, status, workflow_id, created_at, terminal_at)
       SELECT (ARRAY['alice', 'bob', 'carol'])[1 + g % 3], (ARRAY['support.reply', 'ticket.summarize'])[1 + g % 2], 'seed-' || g, 'sha256:' || md5(g::text), 1, '{}'::jsonb,
              CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'succeeded' END, 'wf-seed-' || g, now() - interval '7 days' * (5000 - g) / 5000, now() - interval '7 days' * (5000 - g) / 5000
         FROM generate_series(1, 5000) AS g`,
    );
    await stack.db.pool.query(
      `INSERT INTO attempts (job_id, operation, seq, provider, model, status, job_version, started_at, ended_at)
       SELECT id, operation, 1, 'sim-primary', 'sim-small', status, 0, created_at, created_at FROM jobs WHERE idempotency_key LIKE 'seed-%'`,
    );
    await stack.db.pool.query(
      `INSERT INTO settlements (job_id, run, principal_id, operation, job_status, billing, currency, provider_cost, billable, input_tokens, output_tokens, attempts, attempts_unpriced, attempt_costs, settled_at)
       SELECT id, 1, principal_id, operation, status, 'winner', 'USD', 0.0001, 0.0001, 10, 5, 1, 0, '[]'::jsonb, terminal_at FROM jobs WHERE idempotency_key LIKE 'seed-%'`,
    );
    await stack.db.pool.query('ANALYZE');
  });
  afterAll(() => stack.close());

  /** Each page; `inOrder`: its rows come from an index in the page's order, with no sort of every match. */
  const pages = (): Array<{ url: string; inOrder?: boolean }> => [
    { url: '/console/attention' },
    { url: `/console/jobs/${jobId}` },
    { url: '/console/overview?hours=24' },
    { url: '/console/overview?hours=168' },
    { url: `/console/search?q=${jobId.slice(0, 8)}` },
    { url: `/console/search?q=${jobId}&status=awaiting_resolution` },
    { url: '/console/search?q=some-idempotency-key' },
    { url: '/console/search?principal=alice', inOrder: true },
    { url: '/console/search?operation=support.reply', inOrder: true },
    { url: '/console/search?status=failed', inOrder: true },
    { url: '/console/search?principal=alice&operation=support.reply&status=accepted' },
  ];

  it.each([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])('page %i: every statement narrows its tables through an index', async (index) => {
    // Arrange
    const { url, inOrder } = pages()[index]!;

    // Act
    let status = 0;
    const statements = await statementsOf(stack.db.pool, async () => {
      status = (await stack.app.inject({ method: 'GET', url, headers: { ...HTML, cookie } })).statusCode;
    });

    // Assert
    expect([url, status]).toEqual([url, 200]);
    expect(statements.length).toBeGreaterThan(1);
    for (const statement of statements) {
      const plan = await howPlanned(stack.db.pool, statement);
      const text = statement.text.replace(/\s+/g, ' ').slice(0, 160);
      expect([url, text, plan.readWhole]).toEqual([url, text, []]);
      if (inOrder && /FROM jobs j/.test(statement.text)) expect([url, text, plan.sorts]).toEqual([url, text, 0]);
    }
  });
});
