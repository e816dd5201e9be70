/**
 * The run's report: a table by fault kind (trials, how many really ran their
 * fault, how many could not, and the trials with each kind of violation), the
 * seed, and one reproduction line per failed trial.
 */
import { VIOLATION_KINDS, type ViolationKind } from './checks';
import type { TrialRecord } from './trial';

/** What the report reads of a trial, in either round. */
export interface ReportRecord {
  plan: { trial: number };
  kinds: string[];
  ran: Record<string, boolean>;
  violations: Array<{ kind: string; detail: string }>;
  durationMs: number;
  error?: string;
}

export interface RunSummary {
  seed: number;
  concurrency: number;
  durationMs: number;
  records: ReportRecord[];
  /** The violation kinds, as columns (default: the core round's). */
  columns?: readonly string[];
  /** The round, when not the core one: its reproduction lines name it. */
  round?: string;
}

const COLUMNS = Object.keys(VIOLATION_KINDS) as ViolationKind[];

export function reproduction(seed: number, trial: number, round?: string): string {
  return `npm run chaos -- ${round ? `--round ${round} ` : ''}--seed ${seed} --trial ${trial}`;
}

function row(label: string, cells: Array<string | number>, widths: number[]): string {
  return [label.padEnd(widths[0]!), ...cells.map((cell, i) => String(cell).padStart(widths[i + 1]!))].join(' ');
}

export function renderReport(summary: RunSummary): string {
  const { records } = summary;
  const columns = summary.columns ?? COLUMNS;
  const kinds = [...new Set(records.flatMap((r) => r.kinds))].sort();
  const widths = [34, 6, 5, 7, ...columns.map((c) => Math.max(c.length, 3))];
  const lines: string[] = [];
  lines.push(row('fault kind', ['trials', 'ran', 'not-run', ...columns], widths));
  lines.push('-'.repeat(widths.reduce((a, b) => a + b + 1, 0)));
  const count = (subset: ReportRecord[], kind?: string): Array<string | number> => {
    const ran = kind ? subset.filter((r) => r.ran[kind]).length : subset.filter((r) => !r.error).length;
    const notRun = kind ? subset.filter((r) => r.ran[kind] === false).length : subset.filter((r) => r.error).length;
    return [subset.length, ran, notRun, ...columns.map((column) => subset.filter((r) => r.violations.some((v) => v.kind === column)).length || '.')];
  };
  for (const kind of kinds) lines.push(row(kind, count(records.filter((r) => r.kinds.includes(kind)), kind), widths));
  lines.push('-'.repeat(widths.reduce((a, b) => a + b + 1, 0)));
  lines.push(row('all trials', count(records), widths));

  const failed = records.filter((r) => r.violations.length > 0);
  const broken = records.filter((r) => r.error);
  lines.push('');
  lines.push(`seed ${summary.seed}: ${records.length} trials in ${(summary.durationMs / 1000).toFixed(0)} s (concurrency ${summary.concurrency}); ${failed.length} with violations; ${broken.length} the suite could not finish`);
  lines.push(`(ran: the fault acted on a job that was not yet terminal; not-run: it could not, e.g. the job had ended; the "all trials" row counts suite errors as not-run)`);
  if (failed.length) {
    lines.push('');
    lines.push('violations (one line each: reproduction, faults, first violation):');
    for (const record of failed) {
      const first = record.violations[0]!;
      lines.push(`  ${reproduction(summary.seed, record.plan.trial, summary.round)}   # ${record.kinds.join(' ')} → ${[...new Set(record.violations.map((v) => v.kind))].join(', ')}: ${first.detail}`);
    }
  }
  if (broken.length) {
    lines.push('');
    lines.push('trials the suite could not finish:');
    for (const record of broken) lines.push(`  ${reproduction(summary.seed, record.plan.trial, summary.round)}   # ${record.error!.split('\n')[0]}`);
  }
  return lines.join('\n');
}

/** The one-line log of a finished trial. */
export function trialLine(record: TrialRecord): string {
  const verdict = record.error ? `SUITE ERROR ${record.error.split('\n')[0]}` : record.violations.length ? `VIOLATION ${[...new Set(record.violations.map((v) => v.kind))].join(',')}` : 'ok';
  const notRun = Object.keys(record.notRun);
  const status = record.observation?.jobs.find((j) => j.idempotencyKey === record.plan.idempotencyKey)?.status ?? 'no job';
  return `trial ${record.plan.trial} ${(record.durationMs / 1000).toFixed(1)}s [${record.kinds.join(' ')}]${notRun.length ? ` (not run: ${notRun.join(' ')})` : ''} → ${status}: ${verdict}`;
}
