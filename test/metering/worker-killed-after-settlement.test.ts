import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { isTerminalJob, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';
import { startWorkerProcess } from '../harness/worker-process';

describe('a worker killed between the terminal write and the end of the workflow', () => {
  let stack: TestStack;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack.close();
  });

  it('leaves one settlement, one message and one succeeded job after another worker finishes the workflow', async () => {
    // Arrange: a worker that commits the job's terminal write (and its settlement), then never reports it.
    child = await startWorkerProcess(stack, { HALT_AFTER_TERMINAL_WRITE: '1' });
    const halted = new Promise<string>((resolve) => {
      createInterface({ input: child!.stdout! }).on('line', (line) => {
        if (line.startsWith('terminal ')) resolve(line.slice('terminal '.length));
      });
    });
    const submitted = await submitReply(stack, { message: 'Settled before the crash', ticketId: 'T-settled-kill' });
    const jobId = submitted.json().id;
    expect(await halted).toBe(jobId);
    const workflow = stack.temporal.client.workflow.getHandle(submitted.json().workflowId);

    // Act: the worker dies with the settlement committed and the workflow still running; another takes over.
    child.kill('SIGKILL');
    const whenKilled = await workflow.describe();
    const settledWhenKilled = await stack.db.pool.query('SELECT job_status FROM settlements WHERE job_id = $1', [jobId]);
    await stack.startWorker();
    await workflow.result();

    // Assert: the window was reached (terminal and settled, workflow not done), and the rerun wrote nothing more.
    expect(whenKilled.status.name).toBe('RUNNING');
    expect(settledWhenKilled.rows).toEqual([{ job_status: 'succeeded' }]);
    const job = await waitForJob(stack, jobId, isTerminalJob);
    expect(job.status).toBe('succeeded');
    const { rows } = await stack.db.pool.query('SELECT count(*)::int AS n FROM settlements WHERE job_id = $1', [jobId]);
    expect(rows[0].n).toBe(1);
    expect(stack.sims.downstream.deliveries().filter((d) => d.ticketId === 'T-settled-kill')).toHaveLength(1);
    expect((await readJob(stack, jobId)).settlement).toMatchObject({ jobStatus: 'succeeded' });
  }, 60_000);
});
