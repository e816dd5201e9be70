import { Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';

/**
 * Connects to Temporal, turning the SDK's retry-forever into a one-line error.
 * @throws Error naming TEMPORAL_ADDRESS when the server does not answer.
 */
export async function connectTemporal(address: string): Promise<Connection> {
  try {
    return await Connection.connect({ address, connectTimeout: '5 seconds' });
  } catch (err) {
    throw new Error(`Temporal at ${address} is not reachable (${(err as Error).message}); check TEMPORAL_ADDRESS or unset it to run the dev server`);
  }
}

let runtimeInstalled = false;

/**
 * Installs the Temporal runtime once per process: warnings and errors only, and
 * no signal handlers of its own (each entry point shuts down in its own order).
 */
export function installTemporalRuntime(level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' = 'WARN'): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger(level), shutdownSignals: [] });
  runtimeInstalled = true;
}

