/**
 * What the gateway and entries rounds share: their options, running their
 * seeded trials on the scheduler (a trial that changes what others see runs
 * alone), a trial's one-line log, and the report and exit code at the end.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderReport, type ReportRecord } from './report';
import { schedule } from './scheduler';
import type { ChaosStack } from './stack';

export interface RoundOptions {
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

/** A round's trials: how each plan is drawn, whether it runs alone, how it runs, how its end is logged. */
export interface RoundTrials<P, R> {
  draw(seed: number, trial: number, tag: string): P;
  alone(plan: P): boolean;
  run(plan: P): Promise<R>;
  line(record: R): string;
}

/** Runs every trial the options select (each --repeat under its own tag), until done, interrupted or out of minutes. */
export async function runRoundTrials<P, R>(options: RoundOptions, trials: RoundTrials<P, R>): Promise<R[]> {
  const runs = options.trialNumbers.flatMap((trial) => Array.from({ length: options.repeat }, (_, k) => ({ trial, tag: k === 0 ? '' : `r${k}` })));
  const jobs = runs.map(({ trial, tag }) => {
    const plan = trials.draw(options.seed, trial, tag);
    return { alone: trials.alone(plan), run: () => trials.run(plan) };
  });
  const stopAt = options.minutes === undefined ? Infinity : options.started + options.minutes * 60_000;
  const records = await schedule(jobs, options.concurrency, (record) => options.log(trials.line(record)), () => options.interrupted() || Date.now() >= stopAt);
  if (records.length < jobs.length && !options.interrupted()) options.log(`--minutes ${options.minutes}: ${records.length} of ${jobs.length} trials ran in the time given`);
  return records;
}

/** Prints the round's report (and writes --json). @returns the exit code: 1 on any violation or a trial the suite could not finish. */
export function reportRound(options: RoundOptions, round: string, records: ReportRecord[], columns: readonly string[], stack: ChaosStack | undefined): number {
  records.sort((a, b) => a.plan.trial - b.plan.trial);
  if (options.json) writeFileSync(path.resolve(options.json), JSON.stringify({ seed: options.seed, round, records }, null, 1));
  console.log('');
  console.log(renderReport({ seed: options.seed, concurrency: options.concurrency, durationMs: Date.now() - options.started, records, columns, round }));
  if (options.keep && stack) options.log(`logs kept in ${stack.runDir}`);
  return records.some((r) => r.violations.length > 0 || r.error) ? 1 : 0;
}

/** The one-line log of a finished trial: its kinds, what did not run, its jobs by status, its verdict. */
export function roundTrialLine(record: ReportRecord & { notRun: Record<string, string> }, jobs: Array<{ status: string }>, extra: { before?: string; after?: string } = {}): string {
  const verdict = record.error ? `SUITE ERROR ${record.error.split('\n')[0]}` : record.violations.length ? `VIOLATION ${[...new Set(record.violations.map((v) => v.kind))].join(',')}` : 'ok';
  const notRun = Object.keys(record.notRun);
  const statuses = Object.entries(jobs.reduce<Record<string, number>>((count, job) => ({ ...count, [job.status]: (count[job.status] ?? 0) + 1 }), {}))
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  return `trial ${record.plan.trial} ${(record.durationMs / 1000).toFixed(1)}s ${extra.before ?? ''}[${record.kinds.join(' ')}]${notRun.length ? ` (not run: ${notRun.join(' ')})` : ''} → ${extra.after ?? ''}${statuses || 'no job'}: ${verdict}`;
}

/** Runs one trial into its record; never throws (a failure of the suite itself is recorded as `error`), and times it. */
export async function timedTrial<R extends { error?: string; durationMs: number }>(record: R, execute: (record: R, startedAt: number) => Promise<void>): Promise<R> {
  const startedAt = Date.now();
  try {
    await execute(record, startedAt);
  } catch (err) {
    record.error = (err as Error).stack ?? String(err);
  }
  record.durationMs = Date.now() - startedAt;
  return record;
}
