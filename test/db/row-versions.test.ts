import { randomUUID } from 'node:crypto';
import type { PoolClient } from 'pg';
import { checkout } from '../../src/db/pool';
import { commitAndClaim, openFirstAttempt, type AttemptRecord } from '../../src/ledger/attempts';
import { beginEffectTry, settleEffectAndJob } from '../../src/ledger/effects';
import { admitJob, type JobRecord } from '../../src/ledger/jobs';
import { createTestDatabase, type TestDatabase } from '../harness/database';

const DIGEST = `sha256:${'b'.repeat(64)}`;
const USAGE = { inputTokens: 12, outputTokens: 5, model: 'sim-small', latencyMs: 40 };

/** Rows a transaction wrote, by table, as PostgreSQL counts them before it commits: inserted, and new versions of existing rows. */
type Written = Record<'jobs' | 'attempts' | 'effects', { inserted: number; updated: number }>;

/**
 * Each of a job's ledger steps writes a row as often as the step changes it,
 * no more: every new version of a row is a heap tuple and, unless the update
 * is HOT, an entry in each of its table's indexes; a terminal job's row also
 * carries its details document, rebuilt with each version. These tests count
 * the versions (pg_stat_xact_user_tables, the step's own transaction) and
 * check that the document a terminal job keeps is what its child tables say.
 */
describe("a job's ledger steps, by the row versions each writes", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  /** Runs `step` in a transaction of its own and returns what it returned with what it wrote, committed. */
  async function counted<T>(step: (client: PoolClient) => Promise<T>): Promise<{ value: T; written: Written }> {
    const { client, release } = await checkout(db.pool);
    try {
      // The counts include a connection's earlier transactions until it reports them (at most once a second, when idle):
      // within one transaction nothing is reported, so the step's own are the difference.
      const count = async () =>
        (
          await client.query<{ relname: keyof Written; ins: string; upd: string }>(
            `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd FROM pg_stat_xact_user_tables WHERE relname IN ('jobs', 'attempts', 'effects')`,
          )
        ).rows;
      await client.query('BEGIN');
      const before = await count();
      const value = await step(client);
      const after = await count();
      await client.query('COMMIT');
      const written = { jobs: { inserted: 0, updated: 0 }, attempts: { inserted: 0, updated: 0 }, effects: { inserted: 0, updated: 0 } };
      for (const row of after) {
        const earlier = before.find((b) => b.relname === row.relname);
        written[row.relname] = { inserted: Number(row.ins) - Number(earlier?.ins ?? 0), updated: Number(row.upd) - Number(earlier?.upd ?? 0) };
      }
      return { value, written };
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    } finally {
      release();
    }
  }

  async function newJob(): Promise<JobRecord> {
    const { job } = await admitJob(db.pool, {
      principalId: 'alice',
      operation: 'support.reply',
      idempotencyKey: randomUUID(),
      requestDigest: DIGEST,
      schemaVersion: 1,
      input: { message: 'hi' },
      workflowId: `wf-${randomUUID()}`,
      routeVersion: 'v1',
    });
    return job;
  }

  async function openSent(job: JobRecord): Promise<{ attempt: AttemptRecord; written: Written }> {
    const { value, written } = await counted((client) =>
      openFirstAttempt(client, { jobId: job.id, attemptId: randomUUID(), workflowId: job.workflowId, routeVersion: 'v1', provider: 'sim-primary', model: 'sim-small', minAttemptMs: 0, send: true }),
    );
    return { attempt: value!.attempt, written };
  }

  /** Whether the details document the job row keeps is the one its attempts, effects and events make now. */
  async function detailsAreCurrent(jobId: string): Promise<{ kept: unknown; current: unknown }> {
    const { rows } = await db.pool.query('SELECT details AS kept, job_details(id) AS current FROM jobs WHERE id = $1', [jobId]);
    return rows[0];
  }

  it('opens a first attempt already sent as one new attempt row, not a row and then its sending mark', async () => {
    // Arrange
    const job = await newJob();

    // Act
    const { attempt, written } = await openSent(job);

    // Assert
    expect(attempt.status).toBe('running');
    expect(written.attempts).toEqual({ inserted: 1, updated: 0 });
    expect(written.jobs).toEqual({ inserted: 0, updated: 1 });
  });

  it("commits the winner with its usage as one new version of its attempt, and claims the effect", async () => {
    // Arrange
    const job = await newJob();
    const { attempt } = await openSent(job);

    // Act
    const { value, written } = await counted((client) => commitAndClaim(client, attempt, { reply: 'ok' }, { terminal: false, usage: USAGE, claim: { name: 'send_reply', owner: 'w1', leaseMs: 60_000 } }));

    // Assert
    expect(value.outcome).toBe('succeeded');
    expect(value.claimed).toBeDefined();
    expect(written.attempts).toEqual({ inserted: 0, updated: 1 });
    expect(written.effects).toEqual({ inserted: 1, updated: 0 });
    const { rows } = await db.pool.query('SELECT status, usage_reported, input_tokens, output_tokens, ended_at IS NOT NULL AS ended FROM attempts WHERE id = $1', [attempt.id]);
    expect(rows[0]).toEqual({ status: 'succeeded', usage_reported: true, input_tokens: '12', output_tokens: '5', ended: true });
  });

  it("settles the job's last effect with the terminal write as one new version of the job row, whose details name every event", async () => {
    // Arrange
    const job = await newJob();
    const { attempt } = await openSent(job);
    const { claimed } = await commitAndClaim(db.pool, attempt, { reply: 'ok' }, { terminal: false, usage: USAGE, claim: { name: 'send_reply', owner: 'w1', leaseMs: 60_000 } });
    await beginEffectTry(db.pool, claimed!.id, 'w1');

    // Act
    const { value, written } = await counted((client) => settleEffectAndJob(client, { effectId: claimed!.id, owner: 'w1', status: 'succeeded', receipt: { id: 'r-1' } }, { result: { reply: 'ok', receipt: { id: 'r-1' } } }));

    // Assert
    expect(value.ended?.status).toBe('succeeded');
    expect(written.jobs).toEqual({ inserted: 0, updated: 1 });
    expect(written.effects).toEqual({ inserted: 0, updated: 1 });
    const { kept, current } = await detailsAreCurrent(job.id);
    expect(kept).toEqual(current);
    expect((kept as { events: Array<{ type: string }> }).events.map((event) => event.type).slice(-2)).toEqual(['effect.settled', 'job.succeeded']);
  });

  it('commits an answer that ends a job without effects as two versions of the job row (the winner, then the terminal write) and one of its attempt, whose details name every event', async () => {
    // Arrange
    const job = await newJob();
    const { attempt } = await openSent(job);

    // Act
    const { value, written } = await counted((client) => commitAndClaim(client, attempt, { reply: 'ok' }, { terminal: true, usage: USAGE }));

    // Assert
    expect(value.outcome).toBe('succeeded');
    expect(value.ended?.status).toBe('succeeded');
    expect(written.jobs.updated).toBeLessThanOrEqual(2);
    expect(written.attempts).toEqual({ inserted: 0, updated: 1 });
    const { kept, current } = await detailsAreCurrent(job.id);
    expect(kept).toEqual(current);
    expect((kept as { attempts: Array<{ status: string }> }).attempts.map((a) => a.status)).toEqual(['succeeded']);
    expect((kept as { events: Array<{ type: string }> }).events.map((event) => event.type).slice(-2)).toEqual(['attempt.succeeded', 'job.succeeded']);
  });
});
