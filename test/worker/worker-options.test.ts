import { loadConfig } from '../../src/config';
import { ConfigError } from '../../src/config-error';
import { createWorker } from '../../src/worker/worker';
import { connectDevTemporal, workflowBundle, type DevTemporal } from '../harness/temporal';

describe('the worker options taken from the configuration', () => {
  let temporal: DevTemporal;
  beforeAll(async () => {
    temporal = await connectDevTemporal();
  });
  afterAll(async () => {
    await temporal?.close();
  });

  it('keeps 500 workflows in memory unless ONCEFLOW_WORKER_CACHED_WORKFLOWS says otherwise, and refuses fewer than 2', () => {
    expect(loadConfig({}).temporal.cachedWorkflows).toBe(500);
    expect(loadConfig({ ONCEFLOW_WORKER_CACHED_WORKFLOWS: '64' }).temporal.cachedWorkflows).toBe(64);
    expect(() => loadConfig({ ONCEFLOW_WORKER_CACHED_WORKFLOWS: '1' })).toThrow(ConfigError);
  });

  it('gives a workflow activation 60 s before the SDK stops it unless ONCEFLOW_WORKFLOW_ISOLATE_TIMEOUT_MS says otherwise, and refuses under 1 s or past the vm limit', () => {
    expect(loadConfig({}).temporal.isolateTimeoutMs).toBe(60_000);
    expect(loadConfig({ ONCEFLOW_WORKFLOW_ISOLATE_TIMEOUT_MS: '120000' }).temporal.isolateTimeoutMs).toBe(120_000);
    expect(() => loadConfig({ ONCEFLOW_WORKFLOW_ISOLATE_TIMEOUT_MS: '999' })).toThrow(ConfigError);
    expect(() => loadConfig({ ONCEFLOW_WORKFLOW_ISOLATE_TIMEOUT_MS: '4294967296' })).toThrow(ConfigError);
  });

  it("gives the SDK the configured cache size, sticky queue timeout and isolate deadline, not the SDK's defaults (a cache sized from the heap limit, a 5 s deadline a paused process trips)", async () => {
    const config = loadConfig({ TEMPORAL_NAMESPACE: temporal.namespace, ONCEFLOW_TASK_QUEUE: temporal.taskQueue, ONCEFLOW_WORKER_CACHED_WORKFLOWS: '37', ONCEFLOW_STICKY_QUEUE_TIMEOUT_MS: '1500', ONCEFLOW_WORKFLOW_ISOLATE_TIMEOUT_MS: '45000' });
    const worker = await createWorker({ connection: temporal.nativeConnection, temporal: config.temporal, activities: {} as never, workflowBundle: workflowBundle() });
    // Run and stopped at once, so the connection can close.
    const running = worker.run();
    worker.shutdown();
    await running;
    expect({ cache: worker.options.maxCachedWorkflows, sticky: worker.options.stickyQueueScheduleToStartTimeoutMs, isolate: worker.options.isolateExecutionTimeoutMs, taskQueue: worker.options.taskQueue }).toEqual({
      cache: 37,
      sticky: 1500,
      isolate: 45_000,
      taskQueue: temporal.taskQueue,
    });
  });
});
