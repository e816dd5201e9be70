/**
 * `npm run chaos -- --round entries`: the stack with the round's aliases
 * (chaos/entries/operations.yaml) and a short entry wait, so the SDKs see
 * the 409 of a running job and retry it; its trials, scheduled as the
 * core's are (a trial that kills a process runs alone); its report by fault kind.
 */
import path from 'node:path';
import { reportRound, roundTrialLine, runRoundTrials, type RoundOptions } from '../round';
import { startStack, type ChaosStack } from '../stack';
import type { Supervisor } from '../supervisor';
import { loadOperations } from '../../src/operations/load';
import { projectRoot } from '../../src/paths';
import { ENTRIES_VIOLATION_KINDS } from './checks';
import { drawEntriesPlan, entriesRunsAlone } from './draw';
import { runEntriesTrial, type EntriesContext, type EntriesTrialRecord } from './trial';

export const ENTRIES_OPERATIONS_FILE = path.join(projectRoot, 'chaos', 'entries', 'operations.yaml');

/** The one-line log of a finished entries trial. */
export function entriesTrialLine(record: EntriesTrialRecord): string {
  return roundTrialLine(record, record.observation?.jobs ?? [], { after: `${record.observation?.exchanges.length ?? 0} requests, ` });
}

/** @returns the exit code: 1 on any violation or a trial the suite could not finish. */
export async function runEntriesRound(supervisor: Supervisor, options: RoundOptions): Promise<number> {
  const { log } = options;
  const aliases = loadOperations(ENTRIES_OPERATIONS_FILE).registry;
  let stack: ChaosStack | undefined;
  let records: EntriesTrialRecord[] = [];
  try {
    stack = await startStack(supervisor, { log, keepRunDir: options.keep, extraEnv: { ONCEFLOW_OPERATIONS_FILE: ENTRIES_OPERATIONS_FILE, ONCEFLOW_ENTRY_WAIT_SECONDS: '2' } });
    options.onStack(stack);
    const ctx: EntriesContext = { stack, windows: [], log, ...(options.histories ? { historiesDir: options.histories } : {}), aliases };
    records = await runRoundTrials(options, { draw: drawEntriesPlan, alone: entriesRunsAlone, run: (plan) => runEntriesTrial(ctx, plan, { settleMs: options.settleMs }), line: entriesTrialLine });
  } finally {
    if (!options.interrupted()) await stack?.stop();
  }
  if (options.interrupted()) return 130;
  return reportRound(options, 'entries', records, Object.keys(ENTRIES_VIOLATION_KINDS), stack);
}
