import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRegistry } from '../../src/operations/registry';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';
import { until } from '../harness/poll';
import { startWorkerProcess } from '../harness/worker-process';

// The demo file's support.reply (operations/demo.yaml).
const supportReply = createRegistry().get('support.reply')!;

/**
 * support.reply end to end: attempt, winner, message sent once, receipt
 * stored, result replayed. The messaging simulator's own record is the proof:
 * exactly one delivery per job in every test.
 */
describe('the message of support.reply', () => {
  let stack: TestStack;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack.close();
  });

  const deliveries = (ticketId: string) => stack.sims.downstream.deliveries().filter((d) => d.ticketId === ticketId);

  it('is sent once, and its receipt is in the result that every retry gets back', async () => {
    // Arrange
    const ticketId = `T-${randomUUID().slice(0, 8)}`;
    const key = randomUUID();

    // Act
    const first = await submitReply(stack, { key, ticketId, message: 'Where is my parcel?', wait: 20 });
    const replay = await submitReply(stack, { key, ticketId, message: 'Where is my parcel?' });

    // Assert
    expect(first.json().status).toBe('succeeded');
    const sent = deliveries(ticketId);
    expect(sent).toHaveLength(1);
    expect(first.json().result).toEqual({ reply: expect.stringContaining('sim-primary'), escalate: false, messageId: sent[0]!.messageId });
    expect(first.json().effects).toEqual([expect.objectContaining({ name: 'message.send', status: 'succeeded', receipt: { messageId: sent[0]!.messageId } })]);
    expect(replay.statusCode).toBe(200);
    expect(replay.json().result.messageId).toBe(sent[0]!.messageId);
  });

  it('is sent once for a double click: many identical submissions at once', async () => {
    // Arrange
    const ticketId = `T-${randomUUID().slice(0, 8)}`;
    const key = randomUUID();

    // Act
    const responses = await Promise.all(Array.from({ length: 20 }, () => submitReply(stack, { key, ticketId, message: 'Refund my order' })));
    const job = await waitForJob(stack, responses[0]!.json().id, isTerminalJob);

    // Assert
    expect(new Set(responses.map((r) => r.json().id)).size).toBe(1);
    expect(job.status).toBe('succeeded');
    expect(deliveries(ticketId)).toHaveLength(1);
  });

  it('is sent once when the connection drops after the downstream recorded it: recovery finds the receipt', async () => {
    // Arrange
    const ticketId = `T-${randomUUID().slice(0, 8)}`;

    // Act: the customer's message carries the directive, the reply repeats it, the downstream resets.
    const submitted = await submitReply(stack, { ticketId, message: 'Please confirm @sink(reset)' });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    const sent = deliveries(ticketId);
    expect(sent).toHaveLength(1);
    expect(job.status).toBe('succeeded');
    expect(job.result.messageId).toBe(sent[0]!.messageId);
    expect(job.effects[0]).toMatchObject({ status: 'succeeded', owners: 2, receipt: { messageId: sent[0]!.messageId, foundBy: 'lookup' } });
    expect(job.events.map((e: any) => e.type)).toEqual(expect.arrayContaining(['effect.claimed', 'effect.recovered', 'effect.settled']));
    // What the first try met, and how recovery settled it, are in the job itself.
    expect(job.events.find((e: any) => e.type === 'effect.ambiguous')?.detail).toMatchObject({ name: 'message.send', try: 1, class: 'connection_lost' });
    expect(job.effects[0]).toMatchObject({ tries: 1, lastLookup: expect.objectContaining({ found: true }) });
  });

  it('is sent once when the worker dies between the send and the ledger write', async () => {
    // Arrange: a worker of its own process; the downstream records at once and answers 400 ms later.
    await stack.stopWorker();
    child = await startWorkerProcess(stack, { ONCEFLOW_EFFECT_LEASE_MS: '1500', ONCEFLOW_EFFECT_CALL_TIMEOUT_MS: '1000', ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '1000' });
    const ticketId = `T-${randomUUID().slice(0, 8)}`;
    const submitted = await submitReply(stack, { ticketId, message: 'Cancel my order @sink(delay=400)' });

    // Act: kill it the moment the message is recorded, before the answer; another worker takes over.
    await until(() => deliveries(ticketId).length > 0);
    child.kill('SIGKILL');
    await stack.startWorker();
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob, 60_000);

    // Assert
    const sent = deliveries(ticketId);
    expect(sent).toHaveLength(1);
    expect(job.status).toBe('succeeded');
    expect(job.result.messageId).toBe(sent[0]!.messageId);
    expect(job.effects[0]).toMatchObject({ status: 'succeeded', receipt: { foundBy: 'lookup' } });
  }, 90_000);

  it('cannot be cancelled once the message was claimed', async () => {
    const submitted = await submitReply(stack, { message: 'Thanks', wait: 20 });
    const response = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${submitted.json().id}/cancel`, headers: auth(KEYS.alice), payload: {} });
    expect(response.statusCode).toBe(409);
  });
});

describe('an effect that can be neither looked up nor safely repeated', () => {
  let stack: TestStack;
  let webhook: Server;
  const received: string[] = [];
  beforeAll(async () => {
    // A receiver that takes the request, then drops the connection without answering.
    webhook = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push(String(request.headers['idempotency-key']));
        void body;
        response.socket?.destroy();
      });
    });
    await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
    const notify = { ...supportReply, name: 'support.notify', effects: ['webhook.notify'], finalize: undefined };
    stack = await startTestStack({
      operations: createRegistry([supportReply, notify]),
      env: { ONCEFLOW_WEBHOOK_URL: `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/hook`, ONCEFLOW_WEBHOOK_DEDUPLICATES: '0' },
    });
  });
  afterAll(async () => {
    await stack.close();
    await new Promise((resolve) => webhook.close(resolve));
  });

  it('goes to needs_review, is not sent again, and is settled only by an operator', async () => {
    // Arrange / Act
    const submitted = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() },
      payload: { operation: 'support.notify', input: { ticketId: 'T-hook', customerMessage: 'ping', channel: 'chat' } },
    });
    const jobId = submitted.json().id;
    const inReview = await waitForJob(stack, jobId, (job) => job.effects[0]?.status === 'needs_review');
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // more than a lease: nothing happens by itself

    // Assert 1
    const still = await readJob(stack, jobId);
    expect(received).toHaveLength(1);
    expect(still.status).toBe('running');
    expect(still.effects[0]).toMatchObject({ status: 'needs_review', error: { class: 'no_lookup_unsafe_to_repeat' } });
    expect(inReview.events.map((e: any) => e.type)).toContain('effect.needs_review');

    // Act 2: a principal may not settle it; an operator may.
    const denied = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/effects/webhook.notify/resolution`, headers: auth(KEYS.alice), payload: { outcome: 'succeeded', reason: 'x' } });
    const resolved = await stack.app.inject({
      method: 'POST',
      url: `/v1/jobs/${jobId}/effects/webhook.notify/resolution`,
      headers: auth(KEYS.operator),
      payload: { outcome: 'succeeded', reason: 'receiver confirmed delivery by phone', receipt: { ticket: 'OPS-17' } },
    });
    const done = await waitForJob(stack, jobId, isTerminalJob);

    // Assert 2
    expect(denied.statusCode).toBe(403);
    expect(resolved.statusCode).toBe(200);
    expect(done.status).toBe('succeeded');
    expect(done.effects[0]).toMatchObject({ status: 'succeeded', receipt: { ticket: 'OPS-17' }, resolution: { outcome: 'succeeded', by: expect.stringMatching(/^operator:/) } });
    expect(received).toHaveLength(1);
  }, 30_000);
});

describe('a record written in the application database', () => {
  let stack: TestStack;
  beforeAll(async () => {
    const archive = { ...supportReply, name: 'support.archive', effects: ['record.write'], finalize: undefined };
    stack = await startTestStack({ operations: createRegistry([supportReply, archive]) });
  });
  afterAll(() => stack.close());

  it('is committed with its settlement, once', async () => {
    const submitted = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID(), prefer: 'wait=20' },
      payload: { operation: 'support.archive', input: { ticketId: 'T-rec', customerMessage: 'archive me', channel: 'email' } },
    });
    const job = submitted.json();
    expect(job.status).toBe('succeeded');
    const { rows } = await stack.db.pool.query('SELECT effect_key, payload FROM effect_records WHERE job_id = $1', [job.id]);
    expect(rows).toHaveLength(1);
    expect(job.effects[0]).toMatchObject({ name: 'record.write', status: 'succeeded', receipt: { recordKey: rows[0].effect_key } });
    expect(rows[0].payload.output.reply).toContain('sim-primary');
  });
});
