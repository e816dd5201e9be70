import type { ChildProcess } from 'node:child_process';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';
import { until } from '../harness/poll';
import { startWorkerProcess } from '../harness/worker-process';

describe('a worker killed mid-attempt', () => {
  const env = {
    ONCEFLOW_ATTEMPT_TIMEOUT_MS: '20000',
    ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '1000',
    ONCEFLOW_RECONCILE_INTERVAL_MS: '300',
  };
  let stack: TestStack;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack.close();
  });

  it('leaves the attempt unknown, not failed, and starts no second attempt while it is unknown', async () => {
    // Arrange: a worker process takes the attempt; the provider records it and never answers.
    child = await startWorkerProcess(stack, env);
    const jobId = (await submitReply(stack, { message: 'Hi @sim(sim-primary:hang)', ticketId: 'T-killed' })).json().id;
    await until(() => stack.sims.primary.requests().some((r) => r.messages.some((m) => m.content.includes('T-killed'))));

    // Act: the worker dies without a word; another worker takes over.
    child.kill('SIGKILL');
    await stack.startWorker();
    const unknown = await waitForJob(stack, jobId, (job) => job.attempts[0]?.status === 'unknown');
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // ten reconcile intervals

    // Assert
    const job = await readJob(stack, jobId);
    expect(unknown.attempts[0].error).toEqual({ class: 'worker_lost', detail: expect.any(String) });
    expect(job.status).toBe('awaiting_resolution');
    expect(job.attempts).toHaveLength(1);
    expect(job.attempts[0].status).toBe('unknown');
    expect(stack.sims.backup.requests().filter((r) => !r.requestId.startsWith('verify-'))).toHaveLength(0);

    // And an operator's resolution is what lets it go on.
    const resolved = await stack.app.inject({
      method: 'POST',
      url: `/v1/jobs/${jobId}/attempts/${job.attempts[0].id}/resolution`,
      headers: auth(KEYS.operator),
      payload: { outcome: 'failed', reason: 'worker host lost; provider request presumed dropped' },
    });
    expect(resolved.statusCode).toBe(200);
    const done = await waitForJob(stack, jobId, isTerminalJob);
    expect(done.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'failed'],
      ['sim-backup', 'succeeded'],
    ]);
  }, 60_000);
});
