import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataDir } from '../../src/paths';
import { collectHistories, listHistories, replayHistories } from '../../src/temporal/histories';
import { readHarnessState } from './state';
import './quiet-runtime';

/** Where the run's workflow histories go, for the replay gate (`npm run replay`). */
export const TEST_HISTORIES_DIR = path.join(dataDir, 'replay', 'tests');

export default async function globalTeardown(): Promise<void> {
  let replayFailures: string[] = [];
  try {
    // The replay gate: every history the tests made replays against the workflow code, or the run fails.
    const state = readHarnessState();
    rmSync(TEST_HISTORIES_DIR, { recursive: true, force: true });
    const connection = await Connection.connect({ address: state.temporalAddress });
    const saved = await collectHistories(new Client({ connection, namespace: state.temporalNamespace }), TEST_HISTORIES_DIR);
    await connection.close();
    const failures = await replayHistories(listHistories([TEST_HISTORIES_DIR]), { workflowBundle: { codePath: state.workflowBundlePath } });
    replayFailures = failures.map((failure) => `${failure.file}: ${failure.error}`);
    // Silent when it passes, so jest's summary stays the last thing a run prints; the count goes to a file.
    mkdirSync(TEST_HISTORIES_DIR, { recursive: true });
    writeFileSync(path.join(TEST_HISTORIES_DIR, 'REPLAYED'), `saved ${saved} workflow histories; replayed them: ${failures.length} failed\n`);
  } catch (err) {
    replayFailures = [`could not save and replay the workflow histories: ${(err as Error).message}`];
  }
  const stops = (globalThis as { __onceflowStops?: Array<() => Promise<void>> }).__onceflowStops ?? [];
  await Promise.allSettled(stops.map((stop) => stop()));
  if (replayFailures.length > 0) throw new Error(`the replay gate failed:\n${replayFailures.join('\n')}`);
}
