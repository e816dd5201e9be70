/**
 * `onceflow histories collect --out DIR [--limit N]` saves the histories of
 * closed job workflows (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE).
 * `onceflow histories replay DIR...` replays every saved history against this
 * version's workflow code; exits 1 when one does not replay.
 */
import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import { loadConfig } from '../config';
import { connectTemporal, installTemporalRuntime } from '../temporal/connect';
import { collectHistories, listHistories, replayHistories } from '../temporal/histories';

export const HISTORIES_USAGE = 'usage: onceflow histories collect --out DIR [--limit N] | onceflow histories replay DIR...';

export async function historiesCommand(command: string | undefined, args: string[]): Promise<number> {
  if (command === 'collect') {
    const { values } = parseArgs({ args, options: { out: { type: 'string' }, limit: { type: 'string' } }, strict: true });
    if (!values.out) throw new Error(HISTORIES_USAGE);
    const config = loadConfig();
    const connection = await connectTemporal(config.temporal.connection);
    try {
      const saved = await collectHistories(new Client({ connection, namespace: config.temporal.namespace }), values.out, values.limit ? { limit: Number(values.limit) } : {});
      console.log(`saved ${saved} histories in ${values.out}`);
      return 0;
    } finally {
      await connection.close();
    }
  }
  if (command === 'replay') {
    const { positionals } = parseArgs({ args, allowPositionals: true, strict: true });
    if (positionals.length === 0) throw new Error(HISTORIES_USAGE);
    installTemporalRuntime();
    const histories = listHistories(positionals);
    const failures = await replayHistories(histories, { workflowsPath: require.resolve('../workflows') });
    for (const failure of failures) console.error(`does not replay: ${failure.file}: ${failure.error}`);
    console.log(`replayed ${histories.length} histories from ${positionals.join(', ')}: ${failures.length} failed`);
    return failures.length ? 1 : 0;
  }
  throw new Error(HISTORIES_USAGE);
}
