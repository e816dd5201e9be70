import type { JobSearchHit } from '../../ledger/job-search';
import { JobStatus } from '../../jobs/status';
import { consolePath, html, timeText } from '../html';
import { page, statusBadge, type SignedIn } from '../layout';

export interface SearchForm {
  q?: string;
  principal?: string;
  operation?: string;
  status?: string;
}

export interface SearchData {
  form: SearchForm;
  operations: string[];
  /** Undefined when nothing was asked yet. */
  hits?: JobSearchHit[];
  /** The cursor of the next (older) page. */
  next?: string;
}

/** Search jobs by id (or its first characters), idempotency key, principal, operation and status; newest first. */
export function searchPage(data: SearchData, signedIn: SignedIn): string {
  const { form } = data;
  const body = html`
<h1>Search jobs</h1>
<form class="card" method="get" action="/console/search" id="search-form">
  <div class="grid2">
    <label>Job id, its first characters, or an idempotency key <input type="text" name="q" value="${form.q ?? ''}"></label>
    <label>Principal <input type="text" name="principal" value="${form.principal ?? ''}"></label>
    <label>Operation <select name="operation"><option value="">any</option>${data.operations.map((name) => html`<option value="${name}" ${name === form.operation ? html`selected` : ''}>${name}</option>`)}</select></label>
    <label>Status <select name="status"><option value="">any</option>${Object.values(JobStatus).map((status) => html`<option value="${status}" ${status === form.status ? html`selected` : ''}>${status}</option>`)}</select></label>
  </div>
  <p><button class="primary" type="submit">Search</button></p>
</form>
${data.hits === undefined
  ? html`<p class="muted">Give at least one criterion.</p>`
  : data.hits.length === 0
    ? html`<p class="muted" id="no-hits">No job matches.</p>`
    : html`<table id="hits"><thead><tr><th>Job</th><th>Status</th><th>Principal</th><th>Operation</th><th>Idempotency key</th><th>Created</th><th>Updated</th></tr></thead><tbody>
${data.hits.map((hit) => html`<tr data-job="${hit.id}">
  <td><a class="mono" href="/console/jobs/${hit.id}">${hit.id}</a></td><td>${statusBadge(hit.status)}</td><td>${hit.principalId}</td><td>${hit.operation}</td>
  <td class="mono">${hit.idempotencyKey}</td><td>${timeText(hit.createdAt)}</td><td>${timeText(hit.updatedAt)}</td></tr>`)}
</tbody></table>
${data.next ? html`<nav class="pager"><a href="${consolePath('/search', { ...form, before: data.next })}">Older jobs →</a></nav>` : ''}`}
`;
  return page({ title: 'Search', section: 'search', signedIn, searchText: form.q ?? '' }, body);
}
