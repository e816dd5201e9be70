import { randomUUID } from 'node:crypto';
import { countJobEnded, UNRECORDED_ROUTE } from '../../src/metrics/job-outcomes';
import { createMetrics } from '../../src/metrics/metrics';
import { routeVersionOf } from '../../src/providers/route-version';
import { SIM_ROUTE } from '../../src/sim/providers';
import { pollUntil } from '../harness/poll';
import { auth, isTerminalJob, KEYS, runReply, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

type Counts = Record<string, number>;

/** The job-outcome counts of one operation and route, by outcome. */
async function outcomes(metrics: { jobOutcomes: { get(): Promise<{ values: Array<{ labels: Record<string, unknown>; value: number }> }> } }, route: string, operation = 'support.reply'): Promise<Counts> {
  const counts: Counts = {};
  for (const { labels, value } of (await metrics.jobOutcomes.get()).values) {
    if (labels.operation === operation && labels.route === route) counts[String(labels.outcome)] = value;
  }
  return counts;
}

/** What changed between two readings; outcomes that did not change are left out. */
function delta(before: Counts, after: Counts): Counts {
  const changed: Counts = {};
  for (const [outcome, value] of Object.entries(after)) if (value !== (before[outcome] ?? 0)) changed[outcome] = value - (before[outcome] ?? 0);
  return changed;
}

/**
 * The counts' change since `before`, once it is `expected` (or after 5 s):
 * the worker counts a job just after its terminal write commits, so a reader
 * that saw the job terminal may be a moment early. Read once more a little
 * later, so a count that arrives twice is seen.
 */
async function settledDelta(metrics: Parameters<typeof outcomes>[0], route: string, before: Counts, expected: Counts, operation?: string): Promise<Counts> {
  await pollUntil(async () => JSON.stringify(delta(before, await outcomes(metrics, route, operation))) === JSON.stringify(expected), { timeoutMs: 5_000, everyMs: 25 });
  await new Promise((resolve) => setTimeout(resolve, 200));
  return delta(before, await outcomes(metrics, route, operation));
}

describe('job outcomes by operation and route version (the denominators of success and harm)', () => {
  let stack: TestStack;
  const route = routeVersionOf(SIM_ROUTE);
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  const run = (message: string) => runReply(stack, message);

  it('records the route version with the job, and counts it admitted and succeeded once however often it was submitted', async () => {
    // Arrange
    const before = await outcomes(stack.metrics, route);
    const key = randomUUID();

    // Act: two clicks, then a third once it is done
    const [first, second] = await Promise.all([submitReply(stack, { key, message: 'Counted once' }), submitReply(stack, { key, message: 'Counted once' })]);
    const job = await waitForJob(stack, first.json().id, isTerminalJob);
    const third = await submitReply(stack, { key, message: 'Counted once' });

    // Assert
    expect(new Set([first.json().id, second.json().id, third.json().id]).size).toBe(1);
    expect(job.status).toBe('succeeded');
    const { rows } = await stack.db.pool.query('SELECT route_version FROM jobs WHERE id = $1', [job.id]);
    expect(rows[0].route_version).toBe(route);
    expect(await settledDelta(stack.metrics, route, before, { admitted: 1, succeeded: 1 })).toEqual({ admitted: 1, succeeded: 1 });
  });

  it('counts a job whose first attempt became unknown among the jobs with unknowns, though it succeeded', async () => {
    const before = await outcomes(stack.metrics, route);
    const job = await run('Hi @sim(sim-primary:status=503)');
    expect(job.status).toBe('succeeded');
    expect(await settledDelta(stack.metrics, route, before, { admitted: 1, succeeded: 1, with_unknowns: 1 })).toEqual({ admitted: 1, succeeded: 1, with_unknowns: 1 });
  });

  it('counts a job whose first answer broke the contract among the jobs with contract violations', async () => {
    const before = await outcomes(stack.metrics, route);
    const job = await run('Hi @sim(sim-primary:extra-key)');
    expect(job.status).toBe('succeeded');
    expect(await settledDelta(stack.metrics, route, before, { admitted: 1, succeeded: 1, with_contract_violations: 1 })).toEqual({ admitted: 1, succeeded: 1, with_contract_violations: 1 });
  });

  it('counts a job whose attempts all failed as failed', async () => {
    const before = await outcomes(stack.metrics, route);
    const job = await run('Hi @sim(*:status=400)');
    expect(job.status).toBe('failed');
    expect(await settledDelta(stack.metrics, route, before, { admitted: 1, failed: 1 })).toEqual({ admitted: 1, failed: 1 });
  });

  it.each([
    ['when its first answer wins', 'A short note.', { admitted: 1, succeeded: 1 }],
    ['when its answer is found by a reconciliation lookup', 'A late note. @sim(*:late=2600)', { admitted: 1, succeeded: 1, with_unknowns: 1 }],
  ])('counts a job of an operation without effects as succeeded %s', async (_how, text, expected) => {
    // Arrange
    const before = await outcomes(stack.metrics, route, 'ticket.summarize');

    // Act
    const submitted = await stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() }, payload: { operation: 'ticket.summarize', input: { ticketId: 'T-count', text } } });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob, 20_000);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts[0]).toMatchObject({ provider: 'sim-primary', status: 'succeeded', ...('with_unknowns' in expected ? { evidence: expect.objectContaining({ lookup: expect.objectContaining({ found: true }) }) } : {}) });
    expect(await settledDelta(stack.metrics, route, before, expected, 'ticket.summarize')).toEqual(expected);
  });

  it('counts a job cancelled through the API as cancelled, once, and a second cancel not at all', async () => {
    // Arrange: a job whose provider never answers
    const before = await outcomes(stack.metrics, route);
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:hang)' });
    const jobId = submitted.json().id;

    // Act
    const cancelled = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: auth(KEYS.alice), payload: {} });
    const again = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: auth(KEYS.alice), payload: {} });

    // Assert
    expect([cancelled.statusCode, again.statusCode]).toEqual([200, 409]);
    expect(await settledDelta(stack.metrics, route, before, { admitted: 1, cancelled: 1 })).toEqual({ admitted: 1, cancelled: 1 });
  });

  it('counts a terminal job that had an effect in review among the jobs with effects in review, and an open job not at all', async () => {
    // Arrange: a job recorded before route versions were, whose effect went to review and was settled by an operator
    const metrics = createMetrics();
    const { rows } = await stack.db.pool.query(
      `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id)
       VALUES ('alice', 'support.reply', $1, 'sha256:x', 1, '{}', $1) RETURNING id`,
      [`review-${randomUUID()}`],
    );
    const jobId = rows[0].id;
    await stack.db.pool.query(`INSERT INTO job_events (job_id, type) VALUES ($1, 'effect.needs_review')`, [jobId]);

    // Act: counted while open (a caller that did not end it), then after its terminal write
    await countJobEnded(stack.db.pool, metrics, jobId);
    const whileOpen = await outcomes(metrics, UNRECORDED_ROUTE);
    await stack.db.pool.query(`UPDATE jobs SET status = 'cancelled', terminal_at = now() WHERE id = $1`, [jobId]);
    await countJobEnded(stack.db.pool, metrics, jobId);

    // Assert
    expect(whileOpen).toEqual({});
    expect(await outcomes(metrics, UNRECORDED_ROUTE)).toEqual({ cancelled: 1, with_effects_in_review: 1 });
  });
});
