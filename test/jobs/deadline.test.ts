import { randomUUID } from 'node:crypto';
import { createRegistry } from '../../src/operations/registry';
import { commitAttemptResult, markAttemptRunning, openAttempt } from '../../src/ledger/attempts';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, waitForJob, type TestStack } from '../harness/stack';

const supportReply = createRegistry().get('support.reply')!;
const INPUT = { ticketId: 'T-deadline', customerMessage: 'Where is my order?', channel: 'email' };

function submit(stack: TestStack, opts: { key?: string; deadline?: string | string[]; operation?: string; message?: string }) {
  return stack.app.inject({
    method: 'POST',
    url: '/v1/jobs',
    headers: { ...auth(KEYS.alice), 'idempotency-key': opts.key ?? randomUUID(), ...(opts.deadline !== undefined ? { 'request-deadline': opts.deadline } : {}) },
    payload: { operation: opts.operation ?? 'support.reply', input: { ...INPUT, ...(opts.message ? { customerMessage: opts.message } : {}) } },
  });
}

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

describe('the caller\'s deadline at the API (Request-Deadline)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // No worker: these jobs stay as the request left them.
    stack = await startTestStack({
      worker: false,
      operations: createRegistry([supportReply, { ...supportReply, name: 'support.bounded', deadline: { defaultMs: 60_000, maxMs: 120_000 } }]),
    });
  });
  afterAll(() => stack.close());

  it('stores the deadline of the request that created the job, outside the digest; a retry with another deadline gets the same job, unchanged', async () => {
    // Arrange
    const key = randomUUID();
    const first = inMs(3_600_000);

    // Act
    const created = await submit(stack, { key, deadline: first });
    const retried = await submit(stack, { key, deadline: inMs(7_200_000) });
    const bare = await submit(stack, { key });

    // Assert
    expect(created.statusCode).toBe(202);
    expect([retried.statusCode, bare.statusCode]).toEqual([200, 200]);
    expect(new Set([created.json().id, retried.json().id, bare.json().id]).size).toBe(1);
    expect(retried.json().requestDigest).toBe(created.json().requestDigest);
    expect(retried.json().deadline).toBe(first);
    expect((await readJob(stack, created.json().id)).deadline).toBe(first);
  });

  it.each([
    ['a word', 'tomorrow'],
    ['a day that does not exist', '2027-02-30T10:00:00Z'],
    ['no offset', '2027-01-01T10:00:00'],
    ['a space for the T', '2027-01-01 10:00:00Z'],
    ['an hour past 23', '2027-01-01T24:00:00Z'],
    ['an offset past 23 hours', '2027-01-01T10:00:00+24:00'],
  ])('refuses %s with 400 invalid-deadline and writes nothing', async (_what, value) => {
    const key = randomUUID();
    const response = await submit(stack, { key, deadline: value });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ type: expect.stringMatching(/\/invalid-deadline$/), status: 400, detail: expect.stringContaining('Request-Deadline') });
    const { rows } = await stack.db.pool.query('SELECT 1 FROM jobs WHERE idempotency_key = $1', [key]);
    expect(rows).toHaveLength(0);
  });

  it('takes an empty Request-Deadline as none', async () => {
    const response = await submit(stack, { deadline: '' });
    expect(response.statusCode).toBe(202);
    expect(response.json().deadline).toBeUndefined();
  });

  it('refuses a deadline already past for a new key, and still answers a retry of an existing key that sends it', async () => {
    // Arrange
    const key = randomUUID();
    const created = await submit(stack, { key, deadline: inMs(1_500) });
    await new Promise((resolve) => setTimeout(resolve, 1_600));

    // Act
    const fresh = await submit(stack, { deadline: created.json().deadline });
    const retry = await submit(stack, { key, deadline: created.json().deadline });

    // Assert
    expect(fresh.statusCode).toBe(400);
    expect(fresh.json()).toMatchObject({ type: expect.stringMatching(/\/invalid-deadline$/), detail: expect.stringContaining('has already passed') });
    expect(retry.statusCode).toBe(200);
    expect(retry.json().id).toBe(created.json().id);
  });

  it("gives a request that names no deadline the operation's default, and shortens a later one to the operation's maximum", async () => {
    // Act
    const before = Date.now();
    const defaulted = await submit(stack, { operation: 'support.bounded' });
    const shortened = await submit(stack, { operation: 'support.bounded', deadline: inMs(86_400_000) });
    const after = Date.now();
    const none = await submit(stack, {});

    // Assert
    const defaultAt = Date.parse(defaulted.json().deadline);
    const shortenedAt = Date.parse(shortened.json().deadline);
    expect(defaultAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(defaultAt).toBeLessThanOrEqual(after + 60_000);
    expect(shortenedAt).toBeGreaterThanOrEqual(before + 120_000);
    expect(shortenedAt).toBeLessThanOrEqual(after + 120_000);
    expect(none.json().deadline).toBeUndefined();
  });
});

describe('the caller\'s deadline in the ledger', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      worker: false,
      // One provider, tried again after a minute's backoff.
      route: [{ provider: 'sim-primary', model: 'sim-small' }],
      env: { ONCEFLOW_ATTEMPT_BACKOFF_MS: '60000', ONCEFLOW_MAX_ATTEMPTS: '5' },
      operations: createRegistry([
        supportReply,
        { ...supportReply, name: 'support.strict', effectsAfterDeadline: false },
        { ...supportReply, name: 'support.slow', deadline: { minAttemptMs: 60_000 } },
      ]),
    });
  });
  afterAll(() => stack.close());

  /** A job whose AI step has a winner (committed without claiming an effect), then its deadline passed. */
  async function wonThenPastDeadline(operation: string): Promise<string> {
    const jobId = (await submit(stack, { operation, deadline: inMs(60_000) })).json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt opened');
    await markAttemptRunning(stack.db.pool, opened.attempt.id);
    await commitAttemptResult(stack.db.pool, opened.attempt.id, { reply: 'On its way.', escalate: false }, { terminal: false });
    await stack.db.pool.query(`UPDATE jobs SET deadline_at = now() - interval '1 second' WHERE id = $1`, [jobId]);
    return jobId;
  }

  it('fails a job with a winner before any claim once its deadline passed, when the operation performs no effects after it', async () => {
    // Arrange
    const jobId = await wonThenPastDeadline('support.strict');

    // Act
    const step = await stack.activities.advanceJob({ jobId, attemptId: randomUUID() });

    // Assert
    expect(step).toMatchObject({ kind: 'terminal', status: 'failed' });
    const job = await readJob(stack, jobId);
    expect(job.error).toMatchObject({ type: 'deadline_exceeded', detail: expect.stringContaining('before any effect was claimed') });
    expect(job.effects).toEqual([]);
  });

  it('performs the effects of a job whose AI step won, past its deadline, by default', async () => {
    const jobId = await wonThenPastDeadline('support.reply');
    const step = await stack.activities.advanceJob({ jobId, attemptId: randomUUID() });
    expect(step).toMatchObject({ kind: 'effects', names: ['message.send'] });
  });

  it('sends nothing for an attempt opened before the deadline and sent after it', async () => {
    // Arrange: the step that opened the attempt was lost before it sent it; the deadline has passed since.
    const jobId = (await submit(stack, { deadline: inMs(60_000), message: 'T-opened-late' })).json().id;
    const attemptId = randomUUID();
    const opened = await openAttempt(stack.db.pool, { jobId, attemptId, provider: 'sim-primary', model: 'sim-small' });
    expect(opened.kind).toBe('opened');
    await stack.db.pool.query(`UPDATE jobs SET deadline_at = now() - interval '1 second' WHERE id = $1`, [jobId]);

    // Act: the step runs again with its attempt id
    const step = await stack.activities.advanceJob({ jobId, attemptId, send: true });

    // Assert
    expect(step).toMatchObject({ kind: 'called', report: { status: 'failed', class: 'deadline_exceeded' } });
    expect(stack.sims.primary.requests().filter((r) => r.messages.some((m) => m.content.includes('T-opened-late')))).toHaveLength(0);
  });

  it('fails the job rather than back off past the time one more attempt needs', async () => {
    // Arrange: the only provider failed just now; trying it again waits a minute, with 30 s left.
    const jobId = (await submit(stack, { deadline: inMs(30_000) })).json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt opened');
    await stack.db.pool.query(`UPDATE attempts SET status = 'failed', ended_at = now(), error_class = 'server_error', error_detail = 'answered 500' WHERE id = $1`, [opened.attempt.id]);

    // Act
    const step = await stack.activities.advanceJob({ jobId, attemptId: randomUUID() });

    // Assert
    expect(step).toMatchObject({ kind: 'terminal', status: 'failed' });
    expect((await readJob(stack, jobId)).error).toMatchObject({ type: 'deadline_exceeded', detail: expect.stringContaining("backoff") });
  });

  it('starts no attempt with less time left than the operation needs for one, and fails the job at once', async () => {
    // Arrange: 30 s left; the operation needs 60 s for an attempt.
    const jobId = (await submit(stack, { operation: 'support.slow', deadline: inMs(30_000) })).json().id;

    // Act
    const step = await stack.activities.advanceJob({ jobId, attemptId: randomUUID(), send: true });

    // Assert
    expect(step).toMatchObject({ kind: 'terminal', status: 'failed' });
    const job = await readJob(stack, jobId);
    expect(job.attempts).toEqual([]);
    expect(job.error).toMatchObject({ type: 'deadline_exceeded', detail: expect.stringMatching(/ms were left before the deadline, less than the 60000 ms one attempt needs/) });
    expect(stack.sims.primary.requests().filter((r) => r.messages.some((m) => m.content.includes('T-deadline')))).toHaveLength(0);
  });
});

describe('a deadline passing while an attempt is unknown, on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { ONCEFLOW_ATTEMPT_TIMEOUT_MS: '20000', ONCEFLOW_RECONCILE_INTERVAL_MS: '300' } });
  });
  afterAll(() => stack.close());

  it('cuts the call at the deadline, waits with nothing new started, then fails deadline_exceeded after a not-executed resolution, showing the deadline each attempt used', async () => {
    // Arrange: the primary never answers; the attempt timeout (20 s) is far longer than the deadline (6 s).
    const submitted = await submit(stack, { message: 'Hi @sim(sim-primary:hang) T-cut', deadline: inMs(6_000) });
    const jobId = submitted.json().id;

    // Act 1: the call is cut at the deadline; the attempt is unknown, and the deadline passes.
    const waiting = await waitForJob(stack, jobId, (job) => job.attempts[0]?.status === 'unknown', 15_000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(waiting.deadline) - Date.now()) + 1_000));

    // Assert 1
    const cutAfterMs = Date.parse(waiting.attempts[0].endedAt ?? waiting.updatedAt) - Date.parse(waiting.attempts[0].startedAt);
    expect(cutAfterMs).toBeLessThan(9_000);
    const still = await readJob(stack, jobId);
    expect(still.status).toBe('awaiting_resolution');
    expect(still.attempts).toHaveLength(1);
    expect(stack.sims.backup.requests().filter((r) => r.messages.some((m) => m.content.includes('T-cut')))).toHaveLength(0);

    // Act 2: an operator settles it as not executed.
    const resolved = await stack.app.inject({
      method: 'POST',
      url: `/v1/jobs/${jobId}/attempts/${still.attempts[0].id}/resolution`,
      headers: auth(KEYS.operator),
      payload: { outcome: 'failed', reason: 'the provider confirmed it dropped the request' },
    });
    const done = await waitForJob(stack, jobId, isTerminalJob);

    // Assert 2
    expect(resolved.statusCode).toBe(200);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ type: 'deadline_exceeded' });
    expect(done.attempts).toHaveLength(1);
    expect(done.attempts[0].deadlineUsed).toEqual({ ms: expect.any(Number), share: expect.any(Number) });
    expect(done.attempts[0].deadlineUsed.share).toBeGreaterThan(0.5);
    expect(stack.sims.backup.requests().filter((r) => r.messages.some((m) => m.content.includes('T-cut')))).toHaveLength(0);
  }, 40_000);
});
