/** The one-line log of a finished gateway trial. */
import type { GatewayTrialRecord } from './trial';

export function gatewayTrialLine(record: GatewayTrialRecord): string {
  const verdict = record.error ? `SUITE ERROR ${record.error.split('\n')[0]}` : record.violations.length ? `VIOLATION ${[...new Set(record.violations.map((v) => v.kind))].join(',')}` : 'ok';
  const notRun = Object.keys(record.notRun);
  const jobs = record.observation?.jobs ?? [];
  const statuses = Object.entries(jobs.reduce<Record<string, number>>((count, job) => ({ ...count, [job.status]: (count[job.status] ?? 0) + 1 }), {}))
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  return `trial ${record.plan.trial} ${(record.durationMs / 1000).toFixed(1)}s ${record.plan.kind} [${record.kinds.join(' ')}]${notRun.length ? ` (not run: ${notRun.join(' ')})` : ''} → ${statuses || 'no job'}: ${verdict}`;
}
