import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMessageSend } from '../../src/effects/message-send';
import { createEffectAdapters } from '../../src/effects/registry';
import { createEffectRunner } from '../../src/effects/runner';
import { claimEffect, getEffect } from '../../src/ledger/effects';
import { failJob } from '../../src/ledger/jobs';
import { removeExpiredJobs } from '../../src/ledger/retention';
import { createMetrics } from '../../src/metrics/metrics';
import { createRegistry } from '../../src/operations/registry';
import { startSimDownstream, type SimDownstream } from '../../src/sim/downstream-server';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { jobWithWinner as jobWithWinnerIn } from '../harness/effect-jobs';
import { connectionLost, interceptQueries, onStatements, pause } from '../harness/db-faults';
import { isTerminalJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

const LEASE_MS = 1_500;

describe('a fault between the winning attempt and the claim of its effect', () => {
  let stack: TestStack;
  const deliveries = (ticketId: string) => stack.sims.downstream.deliveries().filter((d) => d.ticketId === ticketId);
  afterEach(() => stack.close());

  it('does not fail the job when the claim meets a transient database error: the claim is retried and the message sent once', async () => {
    // Arrange: the first claim's statement fails as a dropped connection would.
    stack = await startTestStack({ activityDb: (pool) => interceptQueries(pool, onStatements(/INSERT INTO effects/, 1, connectionLost)) });
    const ticketId = `T-${randomUUID().slice(0, 8)}`;

    // Act
    const job = await waitForJob(stack, (await submitReply(stack, { ticketId, message: 'Refund please' })).json().id, isTerminalJob, 30_000);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(deliveries(ticketId)).toHaveLength(1);
    expect(job.result.messageId).toBe(deliveries(ticketId)[0]!.messageId);
  }, 40_000);

  it('sends once, and succeeds, when Temporal gives up on a slow claim that then completes: the claim decides, not the timeout', async () => {
    // Arrange: the first claim (made by the winning call itself) stalls, holding the job row, for
    // longer than that call's whole budget (the 2 s attempt, 5 s of grace, the 1.5 s lease): Temporal
    // gives up on the call, and the stalled claim then wins; the call, given up on, sends nothing.
    stack = await startTestStack({ activityDb: (pool) => interceptQueries(pool, onStatements(/INSERT INTO effects/, 1, pause(2_000 + 5_000 + LEASE_MS + 1_500))) });
    const ticketId = `T-${randomUUID().slice(0, 8)}`;

    // Act
    const job = await waitForJob(stack, (await submitReply(stack, { ticketId, message: 'Where is it?' })).json().id, isTerminalJob, 30_000);
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS)); // the slow claim has long finished

    // Assert
    expect(job.status).toBe('succeeded');
    expect(deliveries(ticketId)).toHaveLength(1);
    expect(job.result.messageId).toBe(deliveries(ticketId)[0]!.messageId);
  }, 40_000);

  it('names the workflow run in the owner of each claim', async () => {
    // Arrange
    stack = await startTestStack();

    // Act
    const job = await waitForJob(stack, (await submitReply(stack, { message: 'Owner?' })).json().id, isTerminalJob);

    // Assert
    const { runId } = await stack.temporal.client.workflow.getHandle(job.workflowId).describe();
    const claimed = job.events.find((e: { type: string }) => e.type === 'effect.claimed');
    expect(claimed.detail.owner).toBe(`${job.workflowId}/${runId}/${claimed.detail.owner.split('/')[2]}`);
    expect(claimed.detail.owner).toMatch(/\/\d+#1$/);
  });
});

describe('the effect ledger under a failing or slow downstream', () => {
  let db: TestDatabase;
  let downstream: SimDownstream;
  let custom: Server;
  let customUrl = '';
  let answer: (res: import('node:http').ServerResponse) => void = (res) => res.end();
  beforeAll(async () => {
    [db, downstream] = await Promise.all([createTestDatabase(), startSimDownstream({})]);
    custom = createServer((req, res) => {
      req.resume();
      req.on('end', () => answer(res));
    });
    await new Promise<void>((resolve) => custom.listen(0, '127.0.0.1', resolve));
    customUrl = `http://127.0.0.1:${(custom.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    custom.close();
    await Promise.all([db.drop(), downstream.close()]);
  });

  const runnerFor = (baseUrl: string, leaseMs = 200) =>
    createEffectRunner({
      db: db.pool,
      metrics: createMetrics(),
      adapters: new Map([['message.send', createMessageSend({ baseUrl, deduplicates: false, timeoutMs: 100 })]]),
      operations: createRegistry(),
      // Lookups are asked past the default bound here: what is counted, not where it ends (recovery.test.ts).
      settings: { leaseMs, maxTries: 3, backoffMs: 20, callTimeoutMs: 100, maxLookupFailures: 100 },
    });

  const jobWithWinner = (reply: string) => jobWithWinnerIn(db.pool, reply);
  const events = async (jobId: string) => (await db.pool.query<{ type: string }>('SELECT type FROM job_events WHERE job_id = $1 ORDER BY id', [jobId])).rows.map((r) => r.type);
  const expireLease = (jobId: string) => db.pool.query(`UPDATE effects SET lease_expires_at = now() - interval '1 second' WHERE job_id = $1`, [jobId]);

  it('keeps a long Retry-After in the lease instead of sleeping through it, then tries again without a lookup', async () => {
    // Arrange: the downstream turns the message away for an hour.
    const { jobId } = await jobWithWinner('Later, please.');
    answer = (res) => res.writeHead(429, { 'retry-after': '3600', 'content-type': 'application/json' }).end('{"error":"slow down"}');

    // Act
    const first = await runnerFor(customUrl).perform(jobId, 'message.send', { owner: 'worker-a', deadlineMs: Date.now() + 1_000 });
    const held = await getEffect(db.pool, jobId, 'message.send');
    answer = (res) => res.writeHead(201, { 'content-type': 'application/json' }).end('{"messageId":"m-after-wait"}');
    await expireLease(jobId); // the hour has passed
    const second = await runnerFor(customUrl).recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(first).toMatchObject({ status: 'pending', jobTerminal: false });
    expect(held).toMatchObject({ phase: 'not_performed', tries: 1, leaseOwner: 'worker-a' });
    expect(held!.leaseRemainingMs).toBeGreaterThan(3_500_000);
    expect(second).toMatchObject({ status: 'succeeded', receipt: { messageId: 'm-after-wait' }, jobTerminal: true, jobStatus: 'succeeded' });
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ tries: 2, lookupFailures: 0 });
  });

  it('sends nothing for a caller already given up on: its claim stays claimed, for recovery to perform', async () => {
    // Arrange: the caller's activity was cancelled (or timed out) before its claim came back.
    const { jobId } = await jobWithWinner('Given up on.');
    let calls = 0;
    answer = (res) => {
      calls += 1;
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"messageId":"m-given-up"}');
    };

    // Act
    const state = await runnerFor(customUrl, 60_000).perform(jobId, 'message.send', { owner: 'worker-a', signal: AbortSignal.abort() });

    // Assert
    expect(state).toMatchObject({ status: 'pending', jobTerminal: false });
    expect(calls).toBe(0);
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ status: 'pending', phase: 'claimed', tries: 0, leaseOwner: 'worker-a' });
  });

  it('takes any 2xx with a messageId as sent', async () => {
    // Arrange
    const { jobId } = await jobWithWinner('Accepted.');
    answer = (res) => res.writeHead(202, { 'content-type': 'application/json' }).end('{"messageId":"m-202"}');

    // Act
    const state = await runnerFor(customUrl).perform(jobId, 'message.send', { owner: 'worker-a' });

    // Assert
    expect(state).toMatchObject({ status: 'succeeded', receipt: { messageId: 'm-202' } });
  });

  it('does not grow the job history while receipt lookups keep failing: the row counts them', async () => {
    // Arrange: the message went out and the answer was lost; then the downstream went away.
    const { jobId, ticketId } = await jobWithWinner('Lost answer @sink(reset)');
    const send = await startSimDownstream({});
    const first = await runnerFor(send.url).perform(jobId, 'message.send', { owner: 'worker-a' });
    expect(first.status).toBe('pending');
    await send.close();

    // Act: ten lease periods of failed lookups.
    for (let i = 0; i < 10; i++) {
      await expireLease(jobId);
      await runnerFor(send.url).recover(jobId, 'message.send', { owner: `worker-${i}` });
    }

    // Assert
    const effect = await getEffect(db.pool, jobId, 'message.send');
    expect(effect).toMatchObject({ status: 'pending', phase: 'sending', owners: 11, lookupFailures: 10 });
    expect((await events(jobId)).filter((type) => type === 'effect.recovered')).toHaveLength(1);
    expect(send.deliveries().filter((d) => d.ticketId === ticketId)).toHaveLength(1);
  });

  it('refuses to fail a job while one of its effects is claimed and unsettled', async () => {
    // Arrange
    const { jobId } = await jobWithWinner('Claimed.');
    await claimEffect(db.pool, { jobId, name: 'message.send', owner: 'worker-a', leaseMs: LEASE_MS });

    // Act
    const failed = await failJob(db.pool, jobId, { type: 'effect_failed', detail: 'decided elsewhere' });

    // Assert
    expect(failed).toBe(false);
    expect((await db.pool.query('SELECT status FROM jobs WHERE id = $1', [jobId])).rows[0].status).toBe('running');
  });

  it('keeps the rows record.write wrote when retention removes their job: they are the application\'s data', async () => {
    // Arrange
    const { jobId } = await jobWithWinner('Recorded.');
    const runner = createEffectRunner({
      db: db.pool,
      metrics: createMetrics(),
      adapters: createEffectAdapters(
        { messagesUrl: downstream.url, messagesDeduplicate: false, callTimeoutMs: 100, leaseMs: 200, maxTries: 1, maxLookupFailures: 10, verificationMaxAgeMs: 3_600_000, backoffMs: 1, webhookDeduplicates: false },
        db.pool,
      ),
      operations: createRegistry(),
      settings: { leaseMs: 200, maxTries: 1, backoffMs: 1 },
    });
    await runner.perform(jobId, 'record.write', { owner: 'worker-a' });
    await db.pool.query(`UPDATE jobs SET status = 'failed', terminal_at = now() - interval '40 days', output = output WHERE id = $1`, [jobId]);

    // Act
    await removeExpiredJobs(db.pool, 30);

    // Assert
    expect((await db.pool.query('SELECT 1 FROM jobs WHERE id = $1', [jobId])).rowCount).toBe(0);
    expect((await db.pool.query('SELECT payload FROM effect_records WHERE job_id = $1', [jobId])).rows).toEqual([{ payload: expect.objectContaining({ operation: 'support.reply' }) }]);
  });
});
