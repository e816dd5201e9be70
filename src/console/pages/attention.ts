import type { AwaitingJob, EffectInReview } from '../../ledger/attention';
import { durationText, html, jsonText, timeText, type Html } from '../html';
import { page, statusBadge, type SignedIn } from '../layout';

export interface AttentionData {
  awaiting: AwaitingJob[];
  inReview: EffectInReview[];
  counts: { awaiting: number; inReview: number };
  now: Date;
}

const jobLink = (jobId: string): Html => html`<a class="mono" href="/console/jobs/${jobId}">${jobId.slice(0, 8)}</a>`;

/** What waits for a person: unknown attempts nobody can prove and effects nobody can repeat safely, oldest first. */
export function attentionPage(data: AttentionData, signedIn: SignedIn): string {
  const { now } = data;
  const body = html`
<h1>Needs attention</h1>
<div class="counts">
  <div class="card"><div class="big" data-count="awaiting">${data.counts.awaiting}</div>jobs awaiting resolution</div>
  <div class="card"><div class="big" data-count="in-review">${data.counts.inReview}</div>effects in review</div>
</div>

<h2>Jobs awaiting resolution <span class="muted">(an attempt is unknown; no new attempt may start)</span></h2>
${data.awaiting.length === 0
  ? html`<p class="muted">None.</p>`
  : html`<table id="awaiting"><thead><tr><th>Job</th><th>Waiting</th><th>Principal</th><th>Operation</th><th>Attempt</th><th>Why</th><th>Evidence</th></tr></thead><tbody>
${data.awaiting.map((job) => html`<tr data-job="${job.jobId}">
  <td>${jobLink(job.jobId)}<div class="muted">created ${timeText(job.createdAt)}</div></td>
  <td>${durationText(now.getTime() - job.waitingSince.getTime())}<div class="muted">since ${timeText(job.waitingSince)}</div></td>
  <td>${job.principalId}</td>
  <td>${job.operation}</td>
  <td>${job.attempt ? html`#${job.attempt.seq} ${job.attempt.provider} / <span class="mono">${job.attempt.model}</span> ${statusBadge('unknown')}` : html`<span class="muted">none unknown</span>`}</td>
  <td>${job.attempt?.errorClass ? html`<strong>${job.attempt.errorClass}</strong> ` : ''}${job.attempt?.errorDetail ?? ''}</td>
  <td>${job.attempt?.evidence ? html`<pre>${jsonText(job.attempt.evidence, 600)}</pre>` : html`<span class="muted">no lookup yet</span>`}</td>
</tr>`)}
</tbody></table>`}
${data.counts.awaiting > data.awaiting.length ? html`<p class="muted">The oldest ${data.awaiting.length} of ${data.counts.awaiting}; <a href="/console/search?status=awaiting_resolution">search</a> lists them all.</p>` : ''}

<h2>Effects in review <span class="muted">(neither looked up nor safely repeatable)</span></h2>
${data.inReview.length === 0
  ? html`<p class="muted">None.</p>`
  : html`<table id="in-review"><thead><tr><th>Job</th><th>Effect</th><th>Waiting</th><th>Principal</th><th>Operation</th><th>What the downstream said</th><th>Tries</th></tr></thead><tbody>
${data.inReview.map((effect) => html`<tr data-job="${effect.jobId}" data-effect="${effect.name}">
  <td>${jobLink(effect.jobId)}<div class="muted">created ${timeText(effect.jobCreatedAt)}</div></td>
  <td class="mono">${effect.name}</td>
  <td>${durationText(now.getTime() - effect.waitingSince.getTime())}<div class="muted">since ${timeText(effect.waitingSince)}</div></td>
  <td>${effect.principalId}</td>
  <td>${effect.operation}</td>
  <td>${effect.error ? html`<pre>${jsonText(effect.error, 600)}</pre>` : html`<span class="muted">nothing recorded</span>`}</td>
  <td class="num">${effect.tries}${effect.owners > 1 ? html`<div class="muted">${effect.owners} owners</div>` : ''}${effect.lookupFailures > 0 ? html`<div class="muted">${effect.lookupFailures} failed lookups</div>` : ''}</td>
</tr>`)}
</tbody></table>`}
`;
  return page({ title: 'Needs attention', section: 'attention', signedIn, refreshMs: 10_000 }, body);
}
