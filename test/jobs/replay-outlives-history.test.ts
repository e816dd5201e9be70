import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

describe('replay outlives history (invariant 9)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  it("returns a finished job's stored result after its workflow history was deleted, without asking Temporal", async () => {
    // Arrange: a finished job, then its history deleted through the Temporal API.
    const key = `history-${randomUUID()}`;
    const body = { operation: 'support.reply', input: { ticketId: 'T-3', customerMessage: 'Where is it?', channel: 'email' } };
    const submit = () => stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(KEYS.alice), 'idempotency-key': key, prefer: 'wait=20' }, payload: body });
    const first = (await submit()).json();
    expect(first.status).toBe('succeeded');
    const handle = stack.temporal.client.workflow.getHandle(first.workflowId);
    await handle.result();
    await stack.temporal.client.workflowService.deleteWorkflowExecution({ namespace: stack.temporal.namespace, workflowExecution: { workflowId: first.workflowId } });
    // The dev server deletes asynchronously (about half a minute here).
    await expect(waitForNotFound(() => handle.describe())).resolves.toBe(true);
    // And the API's Temporal client now fails on any use.
    const original = stack.workflows.client;
    stack.workflows.client = new Proxy({} as Client, {
      get() {
        throw new Error('Temporal must not be asked to replay a finished job');
      },
    });

    // Act
    const replay = await submit();

    // Assert
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().id).toBe(first.id);
    expect(replay.json().result).toEqual(first.result);
    stack.workflows.client = original;
  }, 120_000);
});

async function waitForNotFound(describe: () => Promise<unknown>): Promise<boolean> {
  for (let i = 0; i < 900; i++) {
    try {
      await describe();
    } catch (err) {
      if (/not found/i.test(String((err as Error).message))) return true;
      throw err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
