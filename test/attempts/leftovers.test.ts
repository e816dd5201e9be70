import { randomUUID } from 'node:crypto';
import { DEFAULT_SWEEPER } from '../../src/worker/activity-deps';
import type { CompletionAnswer, LookupResult, ProviderAdapter } from '../../src/providers/types';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

/**
 * What an attempt cost is learned after its job moved on: the sweeper asks
 * the provider of every attempt still unknown in an ended job, and once more
 * of one an operator resolved (invariant 15: its cost belongs in the totals
 * once the provider says what it did). Those it cannot ask (a provider
 * without a lookup) never crowd out those it can.
 */
describe('attempts whose cost is still to learn', () => {
  let stack: TestStack;
  /** A provider with no lookup: nothing can be learned of its unknown attempts. */
  const blind: ProviderAdapter = {
    name: 'blind',
    kind: 'openai-compatible',
    async complete(): Promise<CompletionAnswer> {
      throw new Error('not called in these tests');
    },
  };
  /** A provider whose lookup answers as the test says, counting the asks. */
  const told: { answers: LookupResult[]; asks: number } = { answers: [], asks: 0 };
  const scripted: ProviderAdapter = {
    name: 'scripted',
    kind: 'openai-compatible',
    async complete(): Promise<CompletionAnswer> {
      throw new Error('not called in these tests');
    },
    async lookup(): Promise<LookupResult> {
      told.asks++;
      return told.answers.shift() ?? { found: false };
    },
  };
  beforeAll(async () => {
    stack = await startTestStack({ extraProviders: [blind, scripted] });
  });
  afterAll(() => stack.close());

  /** An ended job with an attempt left unknown on `provider`, started `ageMs` ago. */
  async function leftover(provider: string, ageMs: number): Promise<string> {
    const { rows } = await stack.db.pool.query(
      `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id, status, terminal_at)
       VALUES ('alice', 'support.reply', $1, 'sha256:x', 1, '{}', $1, 'cancelled', now()) RETURNING id`,
      [`leftover-${randomUUID()}`],
    );
    const attemptId = randomUUID();
    await stack.db.pool.query(
      `INSERT INTO attempts (id, job_id, operation, seq, provider, model, job_version, status, started_at)
       VALUES ($1, $2, 'support.reply', 1, $3, 'sim-small', 0, 'unknown', now() - $4 * interval '1 millisecond')`,
      [attemptId, rows[0].id, provider, ageMs],
    );
    return attemptId;
  }

  it("looks up a leftover its provider can tell about, though a sweep's batch of older ones cannot be asked", async () => {
    // Arrange: a sweep's batch (500) of older leftovers on a provider without a lookup, then one the simulator never received
    await Promise.all(Array.from({ length: DEFAULT_SWEEPER.batchSize }, (_, i) => leftover('blind', 3_600_000 + i)));
    const askable = await leftover('sim-primary', 600_000);

    // Act
    await stack.activities.sweepJobs();

    // Assert: the simulator's lookup said it never arrived
    const { rows } = await stack.db.pool.query('SELECT status, error_class FROM attempts WHERE id = $1', [askable]);
    expect(rows[0]).toEqual({ status: 'failed', error_class: 'not_executed' });
  });

  it('learns once more what an attempt an operator resolved cost, when its provider completed it after all', async () => {
    // Arrange: the primary completes its request 2.5 s after it came (the attempt is unknown at 2 s); an operator gives up on it, the backup wins
    const submitted = await submitReply(stack, { message: 'Resolved too soon @sim(sim-primary:late=2500)' });
    const waiting = await waitForJob(stack, submitted.json().id, (job) => job.status === 'awaiting_resolution');
    const resolved = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${waiting.id}/attempts/${waiting.attempts[0].id}/resolution`, headers: auth(KEYS.operator), payload: { outcome: 'failed', reason: 'presumed lost' } });
    expect(resolved.statusCode).toBe(200);
    const ended = await waitForJob(stack, waiting.id, (job) => isTerminalJob(job) && job.settlement !== undefined);
    expect(ended.attempts[0].usage).toEqual({ reported: false });
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    // Act
    await stack.activities.sweepJobs();

    // Assert: its usage is known, added after the settlement; the operator's resolution stands
    const after = await readJob(stack, waiting.id);
    expect(after.attempts[0]).toMatchObject({ status: 'failed', resolution: expect.objectContaining({ by: expect.any(String) }), usage: expect.objectContaining({ reported: true }) });
    expect(after.settlement.adjustments).toEqual([expect.objectContaining({ attemptId: waiting.attempts[0].id })]);
  });

  /** An ended job with an attempt on `provider` an operator resolved a moment ago, its usage unknown. */
  async function resolvedLeftover(provider: string): Promise<string> {
    const attemptId = await leftover(provider, 60_000);
    await stack.db.pool.query(
      `UPDATE attempts SET status = 'failed', ended_at = now() - interval '10 seconds', resolution = jsonb_build_object('outcome', 'failed', 'reason', 'presumed lost', 'by', 'ops', 'at', to_char((now() - interval '5 seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) WHERE id = $1`,
      [attemptId],
    );
    // As a resolution does: the slot's version moves on, so its late answer cannot win.
    await stack.db.pool.query('UPDATE jobs SET version = version + 1 WHERE id = (SELECT job_id FROM attempts WHERE id = $1)', [attemptId]);
    return attemptId;
  }
  const sweepAfterInterval = async () => {
    await new Promise((resolve) => setTimeout(resolve, 600));
    await stack.activities.sweepJobs();
  };

  it('asks about a resolved attempt once its provider answers, however it answers (completed without usage too)', async () => {
    // Arrange: the provider completed the request but reports no usage
    const attemptId = await resolvedLeftover('scripted');
    told.asks = 0;
    told.answers = [{ found: true, status: 'completed', content: JSON.stringify({ reply: 'late', escalate: false }), raw: {} }];

    // Act: three sweeps, each after the reconcile interval
    for (let i = 0; i < 3; i++) await sweepAfterInterval();

    // Assert
    expect(told.asks).toBe(1);
    const { rows } = await stack.db.pool.query(`SELECT count(*)::int AS n FROM job_events e JOIN attempts a ON a.job_id = e.job_id WHERE a.id = $1 AND e.type = 'attempt.race_lost'`, [attemptId]);
    expect(rows[0].n).toBe(1);
  });

  it('asks again about a resolved attempt while its provider says it is still executing', async () => {
    // Arrange
    const attemptId = await resolvedLeftover('scripted');
    told.asks = 0;
    told.answers = [{ found: true, status: 'executing' }, { found: true, status: 'completed', content: JSON.stringify({ reply: 'late', escalate: false }), raw: {}, usage: { inputTokens: 7, outputTokens: 3 } }];

    // Act
    for (let i = 0; i < 3; i++) await sweepAfterInterval();

    // Assert: executing, then completed with its usage, then nothing more to ask
    expect(told.asks).toBe(2);
    const { rows } = await stack.db.pool.query('SELECT usage_reported, input_tokens::int FROM attempts WHERE id = $1', [attemptId]);
    expect(rows[0]).toEqual({ usage_reported: true, input_tokens: 7 });
  });
});

