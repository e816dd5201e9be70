import type { JobView } from '../../api/schemas';
import type { AttemptRecord } from '../../ledger/attempts';
import type { EffectRecord } from '../../ledger/effects';
import { isTerminal } from '../../jobs/status';
import { html, jsonText, durationText, timeText, type Html } from '../html';
import { csrfField, page, statusBadge, type SignedIn } from '../layout';

export interface JobStory {
  /** The job as the API shows it (events, settlement, links). */
  view: JobView;
  principalId: string;
  input: Record<string, unknown> | undefined;
  /** The ledger's attempts and effects, with what the API view leaves out (usage, lanes, leases). */
  attempts: AttemptRecord[];
  effects: EffectRecord[];
  now: Date;
}

/** Event types that record a person's decision: the audit trail. */
const AUDITED = new Set(['attempt.resolved', 'effect.resolved', 'job.cancelled']);

const NOTICES: Record<string, string> = {
  attempt: 'The attempt is resolved. The job goes on to its next attempt along the verified route.',
  effect: 'The effect is settled. The job goes on with what you recorded.',
};

/** One job's story: intent, attempts, effects, audit trail and events, with the forms that settle what waits. */
export function jobStoryPage(story: JobStory, signedIn: SignedIn, notice?: string): string {
  const { view } = story;
  const terminal = isTerminal(view.status);
  const audit = view.events.filter((event) => AUDITED.has(event.type));
  const body = html`
${notice && NOTICES[notice] ? html`<div class="notice ok" role="status">${NOTICES[notice]}</div>` : ''}
<h1>Job <span class="mono">${view.id}</span> ${statusBadge(view.status)}</h1>
<section class="card" aria-labelledby="intent">
  <h2 id="intent">Intent</h2>
  <dl class="facts">
    <dt>Operation</dt><dd>${view.operation} (schema v${view.schemaVersion})</dd>
    <dt>Principal</dt><dd><a href="/console/search?principal=${encodeURIComponent(story.principalId)}">${story.principalId}</a></dd>
    <dt>Idempotency key</dt><dd class="mono">${view.idempotencyKey}</dd>
    <dt>Request digest</dt><dd class="mono">${view.requestDigest}</dd>
    <dt>Created</dt><dd>${timeText(view.createdAt)} (${durationText(story.now.getTime() - Date.parse(view.createdAt))} ago)</dd>
    <dt>Updated</dt><dd>${timeText(view.updatedAt)}</dd>
    ${view.deadline ? html`<dt>Deadline</dt><dd>${timeText(view.deadline)}</dd>` : ''}
    ${view.run > 1 ? html`<dt>Run</dt><dd>${view.run}</dd>` : ''}
    <dt>Workflow</dt><dd><a href="${view.links.temporalUi}" rel="noopener noreferrer" target="_blank">${view.workflowId}</a> <span class="muted">(Temporal UI)</span></dd>
  </dl>
  <div class="grid2">
    <div><h3>Input</h3><pre>${jsonText(story.input)}</pre></div>
    ${view.status === 'succeeded' ? html`<div><h3>Result</h3><pre>${jsonText(view.result)}</pre></div>` : ''}
    ${view.error ? html`<div><h3>Error</h3><pre>${jsonText(view.error)}</pre></div>` : ''}
  </div>
</section>

<section class="card" aria-labelledby="attempts">
  <h2 id="attempts">Attempts (${story.attempts.length})</h2>
  ${story.attempts.length === 0 ? html`<p class="muted">No attempt yet.</p>` : html`<ol class="timeline">${story.attempts.map((attempt) => attemptItem(view, attempt, story, signedIn))}</ol>`}
</section>

<section class="card" aria-labelledby="effects">
  <h2 id="effects">Effects (${story.effects.length})</h2>
  ${story.effects.length === 0 ? html`<p class="muted">No effect claimed.</p>` : story.effects.map((effect) => effectItem(view, effect, story.now, signedIn))}
</section>

${view.settlement ? html`<section class="card" aria-labelledby="settlement"><h2 id="settlement">Settlement</h2><pre>${jsonText(view.settlement)}</pre></section>` : ''}

<section class="card" aria-labelledby="audit">
  <h2 id="audit">Audit trail</h2>
  ${audit.length === 0
    ? html`<p class="muted">No one has acted on this job.</p>`
    : html`<table class="audit"><thead><tr><th>When</th><th>What</th><th>Who</th><th>Why</th></tr></thead><tbody>
      ${audit.map((event) => html`<tr><td>${timeText(event.at)}</td><td>${event.type}${auditSubject(event.detail as Record<string, unknown>)}</td><td>${String((event.detail as Record<string, unknown>).by ?? '—')}</td><td>${String((event.detail as Record<string, unknown>).reason ?? '—')}</td></tr>`)}
    </tbody></table>`}
</section>

<section class="card" aria-labelledby="events">
  <h2 id="events">Events (${view.events.length})</h2>
  <table><thead><tr><th>When</th><th>Event</th><th>Detail</th></tr></thead><tbody>
  ${view.events.map((event) => html`<tr><td class="mono">${timeText(event.at)}</td><td>${event.type}</td><td class="mono">${Object.keys(event.detail).length > 0 ? JSON.stringify(event.detail) : ''}</td></tr>`)}
  </tbody></table>
</section>`;
  return page({ title: `Job ${view.id.slice(0, 8)}`, section: 'job', signedIn, ...(terminal ? {} : { refreshMs: 2_000 }) }, body);
}

function auditSubject(detail: Record<string, unknown>): Html {
  if (typeof detail.attemptId === 'string') return html` <span class="mono muted">${detail.attemptId.slice(0, 8)}</span> → ${String(detail.outcome ?? '')}`;
  if (typeof detail.name === 'string') return html` <span class="mono">${detail.name}</span> → ${String(detail.outcome ?? '')}`;
  return html``;
}

function attemptItem(view: JobView, attempt: AttemptRecord, story: JobStory, signedIn: SignedIn): Html {
  const endMs = attempt.endedAt ? attempt.endedAt.getTime() : story.now.getTime();
  const winner = view.attempts.find((candidate) => candidate.status === 'succeeded');
  const usage = attempt.usage;
  return html`<li class="${attempt.status}" data-attempt="${attempt.id}">
  <div><strong>#${attempt.seq}</strong> ${attempt.provider} / <span class="mono">${attempt.model}</span> ${statusBadge(attempt.status)}
    ${attempt.lane > 0 ? html`<span class="muted">hedge, lane ${attempt.lane}</span>` : ''} ${attempt.run > 1 ? html`<span class="muted">run ${attempt.run}</span>` : ''}</div>
  <div class="muted">started ${timeText(attempt.startedAt)}, ${attempt.endedAt ? html`ended ${timeText(attempt.endedAt)} after ${durationText(endMs - attempt.startedAt.getTime())}` : html`${durationText(endMs - attempt.startedAt.getTime())} so far`}
    · <span class="mono">${attempt.id}</span></div>
  ${attempt.errorClass ? html`<div>Error: <strong>${attempt.errorClass}</strong> ${attempt.errorDetail ?? ''}</div>` : ''}
  ${attempt.status === 'discarded' ? html`<div>Lost the race: its answer came after ${winner ? html`attempt #${winner.seq}` : 'another change'} had won the result slot, and was discarded (never merged).</div>` : ''}
  <div>Usage: ${usage
    ? html`${usage.inputTokens} in / ${usage.outputTokens} out tokens${usage.cachedTokens ? html` (${usage.cachedTokens} cached)` : ''}${usage.model ? html`, model ${usage.model}` : ''}${usage.cost !== null ? html`, cost ${usage.cost} ${usage.currency ?? ''}` : html`, no price`}`
    : html`<span class="muted">not known yet</span>`}</div>
  ${attempt.evidence ? html`<details><summary>Evidence</summary><pre>${jsonText(attempt.evidence)}</pre></details>` : ''}
  ${attempt.resolution ? html`<div>Resolved <strong>${attempt.resolution.outcome}</strong> by <strong>${attempt.resolution.by}</strong> at ${timeText(attempt.resolution.at)}: “${attempt.resolution.reason}”</div>` : ''}
  ${attempt.status === 'unknown' ? resolveAttemptForm(view.id, attempt, signedIn) : ''}
</li>`;
}

function resolveAttemptForm(jobId: string, attempt: AttemptRecord, signedIn: SignedIn): Html {
  return html`<form class="resolve" method="post" action="/console/jobs/${jobId}/attempts/${attempt.id}/resolution" aria-label="Resolve attempt #${attempt.seq}">
  ${csrfField(signedIn)}
  <div>This attempt's outcome is unknown: the provider may or may not have executed it, so no new attempt starts until it is reconciled or resolved. Resolve it only when you know it will not answer.</div>
  <label for="outcome-${attempt.id}">Outcome</label>
  <select id="outcome-${attempt.id}" name="outcome"><option value="failed">failed: go on to the next attempt</option><option value="cancelled">cancelled</option></select>
  <label for="reason-${attempt.id}">Reason (required, kept in the audit trail)</label>
  <textarea id="reason-${attempt.id}" name="reason" required maxlength="2000" rows="2"></textarea>
  <button class="primary" type="submit">Resolve attempt #${attempt.seq}</button>
</form>`;
}

function effectItem(view: JobView, effect: EffectRecord, now: Date, signedIn: SignedIn): Html {
  const leaseLeftMs = effect.leaseExpiresAt ? effect.leaseExpiresAt.getTime() - now.getTime() : 0;
  return html`<div class="card" data-effect="${effect.name}">
  <h3><span class="mono">${effect.name}</span> ${statusBadge(effect.status)}</h3>
  <dl class="facts">
    <dt>Downstream key</dt><dd class="mono">${effect.key}</dd>
    <dt>Claim</dt><dd>phase ${effect.phase}; ${effect.tries} ${effect.tries === 1 ? 'try' : 'tries'}; ${effect.owners} ${effect.owners === 1 ? 'owner (never taken over)' : 'owners (taken over)'}</dd>
    <dt>Lease</dt><dd>${effect.leaseOwner ? html`<span class="mono">${effect.leaseOwner}</span>, ${effect.status === 'pending' ? (leaseLeftMs > 0 ? html`expires in ${durationText(leaseLeftMs)}` : html`expired ${durationText(-leaseLeftMs)} ago`) : html`ended with the settlement`}` : '—'}</dd>
    ${effect.lookupFailures > 0 ? html`<dt>Receipt lookups failed</dt><dd>${effect.lookupFailures}</dd>` : ''}
  </dl>
  ${effect.receipt ? html`<h3>Receipt</h3><pre>${jsonText(effect.receipt)}</pre>` : ''}
  ${effect.error ? html`<h3>What the downstream said</h3><pre>${jsonText(effect.error)}</pre>` : ''}
  ${effect.resolution ? html`<div>Settled <strong>${String(effect.resolution.outcome)}</strong> by <strong>${String(effect.resolution.by)}</strong> at ${timeText(String(effect.resolution.at))}: “${String(effect.resolution.reason)}”</div>` : ''}
  ${effect.status === 'needs_review' ? resolveEffectForm(view.id, effect, signedIn) : ''}
</div>`;
}

function resolveEffectForm(jobId: string, effect: EffectRecord, signedIn: SignedIn): Html {
  return html`<form class="resolve" method="post" action="/console/jobs/${jobId}/effects/${effect.name}/resolution" aria-label="Settle effect ${effect.name}">
  ${csrfField(signedIn)}
  <div>Onceflow could neither look this effect up nor repeat it safely. Check the downstream system, then say what happened.</div>
  <label for="effect-outcome-${effect.name}">What happened downstream</label>
  <select id="effect-outcome-${effect.name}" name="outcome"><option value="succeeded">succeeded: it happened</option><option value="failed">failed: it did not happen</option></select>
  <label for="effect-receipt-${effect.name}">Receipt found downstream (optional, a JSON object such as {"messageId": "…"})</label>
  <input type="text" id="effect-receipt-${effect.name}" name="receipt" maxlength="8000">
  <label for="effect-reason-${effect.name}">Reason (required, kept in the audit trail)</label>
  <textarea id="effect-reason-${effect.name}" name="reason" required maxlength="2000" rows="2"></textarea>
  <button class="primary" type="submit">Settle ${effect.name}</button>
</form>`;
}
