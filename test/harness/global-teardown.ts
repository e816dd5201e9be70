import { rmSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataDir } from '../../src/paths';
import { collectHistories } from '../../src/temporal/histories';
import { readHarnessState } from './state';

/** Where the run's workflow histories go, for the replay gate (`npm run replay`). */
export const TEST_HISTORIES_DIR = path.join(dataDir, 'replay', 'tests');

export default async function globalTeardown(): Promise<void> {
  try {
    // Every history the tests made is replayed against the workflow code afterwards (the replay gate).
    const state = readHarnessState();
    rmSync(TEST_HISTORIES_DIR, { recursive: true, force: true });
    const connection = await Connection.connect({ address: state.temporalAddress });
    const saved = await collectHistories(new Client({ connection, namespace: state.temporalNamespace }), TEST_HISTORIES_DIR);
    await connection.close();
    process.stderr.write(`[harness] saved ${saved} workflow histories in ${TEST_HISTORIES_DIR}\n`);
  } catch (err) {
    process.stderr.write(`[harness] could not save the workflow histories: ${(err as Error).message}\n`);
  }
  const stops = (globalThis as { __onceflowStops?: Array<() => Promise<void>> }).__onceflowStops ?? [];
  await Promise.allSettled(stops.map((stop) => stop()));
}
