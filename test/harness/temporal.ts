import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection } from '@temporalio/worker';
import { readHarnessState } from './state';

export interface DevTemporal {
  client: Client;
  connection: Connection;
  nativeConnection: NativeConnection;
  namespace: string;
  /** A task queue of this test file's own, so files never pick up each other's tasks. */
  taskQueue: string;
  close(): Promise<void>;
}

/** Connects to the run's Temporal dev server. */
export async function connectDevTemporal(): Promise<DevTemporal> {
  const state = readHarnessState();
  const connection = await Connection.connect({ address: state.temporalAddress });
  const nativeConnection = await NativeConnection.connect({ address: state.temporalAddress });
  return {
    client: new Client({ connection, namespace: state.temporalNamespace }),
    connection,
    nativeConnection,
    namespace: state.temporalNamespace,
    taskQueue: `test-${randomUUID()}`,
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** The workflow bundle built once by the global setup. */
export function workflowBundle(): { codePath: string } {
  return { codePath: readHarnessState().workflowBundlePath };
}

/**
 * A time-skipping environment on Temporal's Java test server (one per test
 * file). The SDK gives the server 5 s to accept connections, which a JVM
 * starting on a loaded machine can miss: a start that timed out is tried
 * again (up to three times), after its server, if it came up late, is stopped.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const { testServerPath } = readHarnessState();
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping(
        testServerPath ? { server: { executable: { type: 'existing-path', path: testServerPath } } } : undefined,
      );
    } catch (err) {
      const late = /ephemeral server at [\d.]+:(\d+) did not start within/.exec((err as Error).message);
      if (!late || attempt === 3) throw err;
      spawnSync('pkill', ['-f', `io.temporal.testserver.TestServer ${late[1]}$`]);
    }
  }
}
