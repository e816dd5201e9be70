import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

describe('the stack on the Temporal dev server', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  it('runs a submitted job through its workflow to a terminal state', async () => {
    // Arrange
    const body = { operation: 'support.reply', input: { ticketId: 'T-1', customerMessage: 'Hello', channel: 'email' } };

    // Act
    const response = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': 'harness-1', prefer: 'wait=20' },
      payload: body,
    });

    // Assert
    expect(response.statusCode).toBe(200);
    const job = response.json();
    expect(job.status).toBe('succeeded');
    const handle = stack.temporal.client.workflow.getHandle(job.workflowId);
    await expect(handle.result()).resolves.toBe('succeeded');
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });
});
