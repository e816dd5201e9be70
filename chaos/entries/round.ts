/**
 * `npm run chaos -- --round entries`: the stack with the round's aliases
 * (chaos/entries/operations.yaml) and a short entry wait, so the SDKs see
 * the 409 of a running job and retry it; its trials, scheduled as the
 * core's are (a trial that kills a process runs alone); its report by fault kind.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderReport } from '../report';
import { schedule } from '../scheduler';
import { startStack, type ChaosStack } from '../stack';
import type { Supervisor } from '../supervisor';
import { loadOperations } from '../../src/operations/load';
import { projectRoot } from '../../src/paths';
import { ENTRIES_VIOLATION_KINDS } from './checks';
import { drawEntriesPlan, entriesRunsAlone } from './draw';
import { runEntriesTrial, type EntriesContext, type EntriesTrialRecord } from './trial';

export const ENTRIES_OPERATIONS_FILE = path.join(projectRoot, 'chaos', 'entries', 'operations.yaml');

export interface EntriesRoundOptions {
  seed: number;
  trialNumbers: number[];
  repeat: number;
  concurrency: number;
  settleMs: number;
  minutes?: number;
  keep: boolean;
  json?: string;
  /** Keep each job's workflow history here, for the replay gate. */
  histories?: string;
  log: (line: string) => void;
  started: number;
  interrupted: () => boolean;
  /** Hands the stack to the caller's signal handler, which stops it. */
  onStack: (stack: ChaosStack) => void;
}

/** The one-line log of a finished entries trial. */
export function entriesTrialLine(record: EntriesTrialRecord): string {
  const verdict = record.error ? `SUITE ERROR ${record.error.split('\n')[0]}` : record.violations.length ? `VIOLATION ${[...new Set(record.violations.map((v) => v.kind))].join(',')}` : 'ok';
  const notRun = Object.keys(record.notRun);
  const jobs = record.observation?.jobs ?? [];
  const statuses = Object.entries(jobs.reduce<Record<string, number>>((count, job) => ({ ...count, [job.status]: (count[job.status] ?? 0) + 1 }), {}))
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  const requests = record.observation?.exchanges.length ?? 0;
  return `trial ${record.plan.trial} ${(record.durationMs / 1000).toFixed(1)}s [${record.kinds.join(' ')}]${notRun.length ? ` (not run: ${notRun.join(' ')})` : ''} → ${requests} requests, ${statuses || 'no job'}: ${verdict}`;
}

/** @returns the exit code: 1 on any violation or a trial the suite could not finish. */
export async function runEntriesRound(supervisor: Supervisor, options: EntriesRoundOptions): Promise<number> {
  const { log } = options;
  const aliases = loadOperations(ENTRIES_OPERATIONS_FILE).registry;
  let stack: ChaosStack | undefined;
  let records: EntriesTrialRecord[] = [];
  try {
    stack = await startStack(supervisor, { log, keepRunDir: options.keep, extraEnv: { ONCEFLOW_OPERATIONS_FILE: ENTRIES_OPERATIONS_FILE, ONCEFLOW_ENTRY_WAIT_SECONDS: '2' } });
    options.onStack(stack);
    const ctx: EntriesContext = { stack, windows: [], log, ...(options.histories ? { historiesDir: options.histories } : {}), aliases };
    const runs = options.trialNumbers.flatMap((trial) => Array.from({ length: options.repeat }, (_, k) => ({ trial, tag: k === 0 ? '' : `r${k}` })));
    const jobs = runs.map(({ trial, tag }) => {
      const plan = drawEntriesPlan(options.seed, trial, tag);
      return { alone: entriesRunsAlone(plan), run: () => runEntriesTrial(ctx, plan, { settleMs: options.settleMs }) };
    });
    const stopAt = options.minutes === undefined ? Infinity : options.started + options.minutes * 60_000;
    records = await schedule(jobs, options.concurrency, (record) => log(entriesTrialLine(record)), () => options.interrupted() || Date.now() >= stopAt);
    if (records.length < jobs.length && !options.interrupted()) log(`--minutes ${options.minutes}: ${records.length} of ${jobs.length} trials ran in the time given`);
  } finally {
    if (!options.interrupted()) await stack?.stop();
  }
  if (options.interrupted()) return 130;
  records.sort((a, b) => a.plan.trial - b.plan.trial);
  if (options.json) writeFileSync(path.resolve(options.json), JSON.stringify({ seed: options.seed, round: 'entries', records }, null, 1));
  console.log('');
  console.log(renderReport({ seed: options.seed, concurrency: options.concurrency, durationMs: Date.now() - options.started, records, columns: Object.keys(ENTRIES_VIOLATION_KINDS), round: 'entries' }));
  if (options.keep && stack) log(`logs kept in ${stack.runDir}`);
  return records.some((r) => r.violations.length > 0 || r.error) ? 1 : 0;
}
