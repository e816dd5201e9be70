import { JobStatus } from '../../jobs/status';
import type { AttemptOutcomeCount, JobsPerHour, OperationCost } from '../../ledger/overview';
import { horizontalBars, legend, stackedColumns } from '../charts';
import { html } from '../html';
import { page, type SignedIn } from '../layout';

export interface OverviewData {
  hours: number;
  since: Date;
  jobsPerHour: JobsPerHour[];
  attempts: AttemptOutcomeCount[];
  effects: Array<{ name: string; status: string; effects: number }>;
  costs: OperationCost[];
}

/** The windows the overview offers, in hours. */
export const OVERVIEW_WINDOWS = [1, 6, 24, 168] as const;

/** Jobs per status over time, attempts by outcome, effects by status and cost by operation, as inline SVG charts. */
export function overviewPage(data: OverviewData, signedIn: SignedIn): string {
  const hourMs = 3_600_000;
  const columns: Date[] = [];
  for (let t = data.since.getTime(); t < data.since.getTime() + data.hours * hourMs; t += hourMs) columns.push(new Date(t));
  const statuses = Object.values(JobStatus);
  const stacks = statuses.map((status) => ({
    key: status,
    values: columns.map((column) => data.jobsPerHour.find((row) => row.status === status && row.hour.getTime() === column.getTime())?.jobs ?? 0),
  }));
  const totalJobs = data.jobsPerHour.reduce((sum, row) => sum + row.jobs, 0);
  const label = (date: Date) => (data.hours > 24 ? `${date.toISOString().slice(5, 10)} ${date.toISOString().slice(11, 13)}h` : `${date.toISOString().slice(11, 13)}:00`);
  const body = html`
<h1>Overview <span class="muted">— the last ${data.hours} h</span></h1>
<p>${OVERVIEW_WINDOWS.map((hours) => html`<a href="/console/overview?hours=${hours}" ${hours === data.hours ? html`aria-current="page"` : ''}>${hours} h</a> · `)}<span class="muted">From the ledger (jobs, attempts, effects, settlements): the rows the counters of /metrics count as they are written. Hours are UTC.</span></p>
<section class="card" id="chart-jobs">
  <h2>Jobs created per hour, by their status now (${totalJobs})</h2>
  ${legend(statuses)}
  ${stackedColumns({ columns: columns.map(label), stacks }, { title: 'Jobs created per hour by status' })}
</section>
<div class="grid2">
<section class="card" id="chart-attempts">
  <h2>Attempts by outcome</h2>
  ${horizontalBars(
    data.attempts.map((row) => ({ label: row.errorClass ? `${row.status} (${row.errorClass})` : row.status, value: row.attempts, colourKey: row.status })),
    { title: 'Attempts by outcome' },
  )}
</section>
<section class="card" id="chart-effects">
  <h2>Effects by status</h2>
  ${horizontalBars(
    data.effects.map((row) => ({ label: `${row.name}: ${row.status}`, value: row.effects, colourKey: row.status })),
    { title: 'Effects by status' },
  )}
</section>
</div>
<section class="card" id="chart-cost">
  <h2>Cost by operation <span class="muted">(settled jobs: what the providers cost; billable under each job's policy)</span></h2>
  ${horizontalBars(
    data.costs.map((row) => ({ label: `${row.operation}${row.currency ? ` (${row.currency})` : ''}`, value: Number(row.providerCost), text: `${row.providerCost} ${row.currency ?? ''}`, colourKey: 'running' })),
    { title: 'Cost by operation', width: 720 },
  )}
  ${data.costs.length > 0 ? html`<table><thead><tr><th>Operation</th><th>Currency</th><th class="num">Jobs</th><th class="num">Input tokens</th><th class="num">Output tokens</th><th class="num">Provider cost</th><th class="num">Billable</th></tr></thead><tbody>
  ${data.costs.map((row) => html`<tr><td>${row.operation}</td><td>${row.currency ?? '—'}</td><td class="num">${row.jobs}</td><td class="num">${row.inputTokens}</td><td class="num">${row.outputTokens}</td><td class="num">${row.providerCost}</td><td class="num">${row.billable}</td></tr>`)}
  </tbody></table>` : ''}
</section>
`;
  return page({ title: 'Overview', section: 'overview', signedIn }, body);
}
