import { randomUUID } from 'node:crypto';
import { AttemptStatus, commitAttemptResult, getAttempt, markAttemptRunning, noteEvidence, openAttempt } from '../../src/ledger/attempts';
import { RUNTIME_RECORD_SQL } from '../../src/ledger/contracts';
import { isTerminalJob, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

/** The relations and indexes a plan reads, from EXPLAIN (FORMAT JSON). */
function planned(plan: unknown): { relations: string[]; indexes: string[]; seqScans: string[] } {
  const found = { relations: [] as string[], indexes: [] as string[], seqScans: [] as string[] };
  const walk = (node: Record<string, unknown>): void => {
    if (typeof node['Relation Name'] === 'string') found.relations.push(node['Relation Name']);
    if (typeof node['Index Name'] === 'string') found.indexes.push(node['Index Name']);
    if (node['Node Type'] === 'Seq Scan') found.seqScans.push(String(node['Relation Name']));
    for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
  };
  walk((plan as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
  return found;
}

describe('the ledger stays bounded and in one lock order', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_ATTEMPT_BACKOFF_MS: '300' } });
  });
  afterAll(() => stack.close());

  async function explain(sql: string, params: unknown[]): Promise<ReturnType<typeof planned>> {
    const client = await stack.db.pool.connect();
    try {
      // With sequential scans priced out, a plan still scans sequentially only when no index can serve it.
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
      return planned(rows[0]['QUERY PLAN']);
    } finally {
      await client.query('RESET enable_seqscan');
      client.release();
    }
  }

  it("reads a provider's run-time record from its own index, without touching jobs", async () => {
    const plan = await explain(RUNTIME_RECORD_SQL, ['support.reply', 'sim-primary', 'sim-small', 20]);
    expect(plan.indexes).toContain('attempts_runtime_idx');
    expect(plan.seqScans).toEqual([]);
    expect(plan.relations).not.toContain('jobs');
  });

  it('finds the rows record.write wrote for a job by index', async () => {
    const plan = await explain('SELECT * FROM effect_records WHERE job_id = $1', [randomUUID()]);
    expect(plan.indexes).toContain('effect_records_job_id_idx');
    expect(plan.seqScans).toEqual([]);
  });

  /** Deadlocks PostgreSQL detected in this database (retried transactions hide them from callers, not from it). */
  async function deadlocks(): Promise<number> {
    // Backends report their counts within a second of going idle.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const { rows } = await stack.db.pool.query<{ deadlocks: string }>('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()');
    return Number(rows[0]!.deadlocks);
  }

  it('never deadlocks when evidence is noted while the attempt commits: every write takes the job row first', async () => {
    const before = await deadlocks();
    const errors: unknown[] = [];
    for (let round = 0; round < 25; round++) {
      // Arrange
      const jobId = (await submitReply(stack, { message: `deadlock ${round}`, key: randomUUID() })).json().id;
      const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
      if (opened.kind !== 'opened') throw new Error('no attempt');
      await markAttemptRunning(stack.db.pool, opened.attempt.id);

      // Act
      const results = await Promise.allSettled([
        noteEvidence(stack.db.pool, opened.attempt.id, { lastLookup: { round } }),
        commitAttemptResult(stack.db.pool, opened.attempt.id, { reply: 'hi', escalate: false }, { terminal: false }),
        noteEvidence(stack.db.pool, opened.attempt.id, { lastLookup: { round, again: true } }),
      ]);
      errors.push(...results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason));
      expect((await getAttempt(stack.db.pool, opened.attempt.id))?.status).toBe(AttemptStatus.succeeded);
    }

    // Assert
    expect(errors).toEqual([]);
    expect((await deadlocks()) - before).toBe(0);
  });

  it('notes evidence on an attempt of a finished job behind a write that holds the job row, without a deadlock: the job row is taken first', async () => {
    // Arrange: a finished job whose attempt is still running (its answer may come late); a finished
    // job's attempt rows refresh the job's stored details, so a write to one also writes the job row.
    const jobId = (await submitReply(stack, { message: 'finished first', key: randomUUID() })).json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    await markAttemptRunning(stack.db.pool, opened.attempt.id);
    await stack.db.pool.query(`UPDATE jobs SET status = 'failed', terminal_at = now() WHERE id = $1`, [jobId]);
    const before = await deadlocks();
    const holder = await stack.db.pool.connect();
    try {
      // A write that takes the job row, then the attempt's, as every ledger write does.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [jobId]);

      // Act: evidence is noted meanwhile; once it waits, the holder goes on to the attempt row.
      const noting = noteEvidence(stack.db.pool, opened.attempt.id, { lastLookup: { found: false } });
      while ((await stack.db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rowCount === 0) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await holder.query(`UPDATE attempts SET evidence = COALESCE(evidence, '{}'::jsonb) || '{"held": true}'::jsonb WHERE id = $1`, [opened.attempt.id]);
      await holder.query('COMMIT');
      await noting;
    } finally {
      holder.release();
    }

    // Assert
    expect((await deadlocks()) - before).toBe(0);
    expect((await getAttempt(stack.db.pool, opened.attempt.id))?.evidence).toMatchObject({ held: true, lastLookup: { found: false } });
  });

  it('backs off before the same provider again also when the fallback between them is not eligible', async () => {
    // Arrange: the backup has no verification, so every attempt goes to the primary, which refuses (400).
    await stack.db.pool.query(`DELETE FROM provider_contracts WHERE provider = 'sim-backup'`);
    await stack.startWorker();

    // Act
    const job = await waitForJob(stack, (await submitReply(stack, { message: 'Hi @sim(sim-primary:status=400)' })).json().id, isTerminalJob);
    await stack.stopWorker();

    // Assert
    const full = await readJob(stack, job.id);
    const started = full.attempts.map((a: { startedAt: string }) => Date.parse(a.startedAt));
    const ended = full.attempts.map((a: { endedAt: string }) => Date.parse(a.endedAt));
    expect(full.attempts.map((a: { provider: string }) => a.provider)).toEqual(['sim-primary', 'sim-primary', 'sim-primary']);
    expect(started[1] - ended[0]).toBeGreaterThanOrEqual(300);
    expect(started[2] - ended[1]).toBeGreaterThanOrEqual(600);
  }, 30_000);
});
