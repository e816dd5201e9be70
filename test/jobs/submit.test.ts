import { randomUUID } from 'node:crypto';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { admitJob } from '../../src/ledger/jobs';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

const input = (over: Record<string, unknown> = {}) => ({ ticketId: 'T-42', customerMessage: 'My parcel is late.', channel: 'email', ...over });

describe('POST /v1/jobs', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  const submit = (key: string, body: unknown, headers: Record<string, string> = {}, apiKey: string = KEYS.alice) =>
    stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(apiKey), 'idempotency-key': key, ...headers }, payload: body as object });

  const countJobs = async (key: string): Promise<number> =>
    Number((await stack.db.pool.query('SELECT count(*) FROM jobs WHERE idempotency_key = $1', [key])).rows[0].count);

  it('returns the same job to dozens of concurrent submissions of one key: one 202, the rest 200 replayed, one workflow', async () => {
    // Arrange
    const key = `storm-${randomUUID()}`;
    const body = { operation: 'support.reply', input: input() };

    // Act
    const responses = await Promise.all(Array.from({ length: 40 }, () => submit(key, body)));

    // Assert
    const ids = new Set(responses.map((r) => r.json().id));
    expect(ids.size).toBe(1);
    expect(responses.filter((r) => r.statusCode === 202)).toHaveLength(1);
    expect(responses.filter((r) => r.statusCode === 200 && r.headers['idempotent-replayed'] === 'true')).toHaveLength(39);
    expect(await countJobs(key)).toBe(1);
    const workflowId = responses[0]!.json().workflowId;
    const runs = [];
    for await (const run of stack.temporal.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(run);
    expect(runs).toHaveLength(1);
  });

  it('rejects the same key with another input with 409 and leaves the original job untouched', async () => {
    // Arrange
    const key = `conflict-${randomUUID()}`;
    const first = await submit(key, { operation: 'support.reply', input: input() }, { prefer: 'wait=20' });
    const before = await stack.db.pool.query('SELECT * FROM jobs WHERE id = $1', [first.json().id]);

    // Act
    const second = await submit(key, { operation: 'support.reply', input: input({ customerMessage: 'Something else' }) });

    // Assert
    expect(second.statusCode).toBe(409);
    expect(second.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(second.json().type).toMatch(/idempotency-key-reused$/);
    expect(second.json().id).toBeUndefined();
    const after = await stack.db.pool.query('SELECT * FROM jobs WHERE id = $1', [first.json().id]);
    expect(after.rows[0]).toEqual(before.rows[0]);
    expect(await countJobs(key)).toBe(1);
  });

  it('treats the same key by another principal as a separate job', async () => {
    // Arrange
    const key = `shared-${randomUUID()}`;
    const body = { operation: 'support.reply', input: input() };

    // Act
    const alice = await submit(key, body, {}, KEYS.alice);
    const bob = await submit(key, body, {}, KEYS.bob);

    // Assert
    expect(alice.statusCode).toBe(202);
    expect(bob.statusCode).toBe(202);
    expect(bob.json().id).not.toBe(alice.json().id);
    expect(bob.json().workflowId).not.toBe(alice.json().workflowId);
  });

  it('replays a key with the same input reordered and re-spaced (canonical digest)', async () => {
    // Arrange
    const key = `canon-${randomUUID()}`;
    const first = await submit(key, { operation: 'support.reply', input: input() });

    // Act
    const again = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': key, 'content-type': 'application/json' },
      payload: '{ "input": { "channel": "email",   "customerMessage": "My parcel is late.", "ticketId": "T-42" }, "operation": "support.reply" }',
    });

    // Assert
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(first.json().id);
  });

  it('repairs a job whose row was written but whose workflow never started', async () => {
    // Arrange: the crash between the insert and workflow.start, reproduced by writing only the row.
    const key = `repair-${randomUUID()}`;
    const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: key };
    const { job } = await admitJob(stack.db.pool, { ...scope, input: input(), schemaVersion: 1, requestDigest: requestDigest('support.reply', 1, input()), workflowId: jobWorkflowId(scope) });
    await expect(stack.temporal.client.workflow.getHandle(job.workflowId).describe()).rejects.toThrow(/not found/i);

    // Act
    const retry = await submit(key, { operation: 'support.reply', input: input() }, { prefer: 'wait=20' });

    // Assert
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json().id).toBe(job.id);
    expect(retry.json().status).toBe('succeeded');
  });

  it('answers a retry of a finished job with its stored result', async () => {
    // Arrange
    const key = `done-${randomUUID()}`;
    const first = await submit(key, { operation: 'support.reply', input: input() }, { prefer: 'wait=20' });
    expect(first.json().status).toBe('succeeded');

    // Act
    const replay = await submit(key, { operation: 'support.reply', input: input() });

    // Assert
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().result).toEqual(first.json().result);
  });

  it('counts created, replayed and conflicting submissions separately', async () => {
    // Arrange
    const key = `metrics-${randomUUID()}`;
    const read = async () => (await stack.app.inject({ method: 'GET', url: '/metrics' })).body;
    const value = (text: string, name: string) =>
      text.split('\n').filter((l) => l.startsWith(name)).reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    const before = await read();

    // Act
    await submit(key, { operation: 'support.reply', input: input() });
    await submit(key, { operation: 'support.reply', input: input() });
    await submit(key, { operation: 'support.reply', input: input({ channel: 'chat' }) });

    // Assert
    const after = await read();
    expect(value(after, 'onceflow_jobs_created_total') - value(before, 'onceflow_jobs_created_total')).toBe(1);
    expect(value(after, 'onceflow_jobs_replayed_total') - value(before, 'onceflow_jobs_replayed_total')).toBe(1);
    expect(value(after, 'onceflow_idempotency_conflicts_total') - value(before, 'onceflow_idempotency_conflicts_total')).toBe(1);
  });
});
