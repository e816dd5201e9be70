import type { EffectsView } from '../../api/effects-routes';
import type { ProvidersView } from '../../api/providers-routes';
import type { RouteVersionView } from '../../api/route-versions-routes';
import type { VerificationRecord } from '../../ledger/contracts';
import { drillsInOrder } from '../../ledger/effect-verifications';
import { EntryCheck, type EntryProbe } from '../../ledger/entry-verifications';
import { html, timeText, type Html } from '../html';
import { page, type SignedIn } from '../layout';

export interface RoutesData {
  operations: Array<{
    operation: string;
    baseline: string;
    serving: { version: string; canary: { version: string; sharePercent: number; expiresAt: string } | null };
    versions: RouteVersionView[];
  }>;
}

export interface ProvidersData {
  providers: ProvidersView;
  /** Each effect's claims, its newest verification (the drills) and what recovery may do now. */
  effects: EffectsView;
  /** The newest verification of each (operation, provider, model), with its evidence per probe. */
  verifications: Map<string, VerificationRecord>;
  routes: RoutesData;
}

export const verificationKey = (operation: string, provider: string, model: string): string => `${operation}\u0000${provider}\u0000${model}`;

interface ProbeSample {
  ok?: boolean;
  outcome?: string;
  requestId?: string;
  error?: string;
  violations?: unknown;
}
interface ProbeFixture {
  name?: string;
  passed?: boolean;
  render?: { ok?: boolean; promptTokens?: number; budgetTokens?: number; problems?: unknown[] };
  samples?: ProbeSample[];
}

const RECOVERY = { settle_or_send: 'recovers by its lookup', repeat: 'recovers by repeating', review: 'recovery goes to review' } as const;

interface DrillView {
  passed?: boolean;
  skipped?: boolean;
  why?: string;
  detail?: string;
  keys?: string[];
  requests?: Array<{ method: string; url: string; status?: number }>;
  ms?: number;
}

function drillsTable(drills: Record<string, DrillView>): Html {
  return html`<table><thead><tr><th>Drill</th><th>Result</th><th>What it showed</th><th>Requests</th><th class="num">ms</th></tr></thead><tbody>
  ${drillsInOrder(drills).map(([drill, result]) => html`<tr data-drill="${drill}">
    <td>${drill.replace(/_/g, ' ')}</td>
    <td>${result.skipped ? html`<span class="muted">skipped</span>` : result.passed ? html`<span class="status succeeded">pass</span>` : html`<span class="status failed">fail</span>`}</td>
    <td>${result.skipped ? (result.why ?? '') : (result.detail ?? '')}</td>
    <td class="mono">${(result.requests ?? []).map((request) => html`${request.method} ${request.url} → ${request.status ?? 'no answer'}<br>`)}</td>
    <td class="num">${result.ms ?? ''}</td>
  </tr>`)}
  </tbody></table>`;
}

/** Each provider's contract verification per probe, demotions, each effect's drills, and every operation's route versions with their counters. */
export function providersPage(data: ProvidersData, signedIn: SignedIn): string {
  const body = html`
<h1>Providers and routes</h1>
${data.providers.providers.map((provider) => html`<section class="card" data-provider="${provider.name}">
  <h2>${provider.name} <span class="muted">${provider.kind}</span></h2>
  ${provider.routes.length === 0 ? html`<p class="muted">On no route.</p>` : provider.routes.map((step) => {
    const verification = data.verifications.get(verificationKey(step.operation, provider.name, step.model));
    return html`<div class="card">
    <h3>${step.operation} · step ${step.position + 1} (${step.role}) · <span class="mono">${step.model}</span>
      ${step.eligible ? html`<span class="status succeeded">eligible</span>` : html`<span class="status failed">${step.reason === 'demoted' ? 'demoted' : 'not eligible'}</span>`}</h3>
    <dl class="facts">
      <dt>Now</dt><dd>${step.detail}</dd>
      <dt>Current contract</dt><dd>schema v${step.schemaVersion}, template <span class="mono">${step.templateHash}</span></dd>
      <dt>Newest verification</dt><dd>${step.latestVerification
        ? html`${timeText(step.latestVerification.verifiedAt)}: ${step.latestVerification.passed ? 'passed' : 'failed'}, ${step.latestVerification.samples} sample(s) per probe, against schema v${step.latestVerification.schemaVersion} and template <span class="mono">${step.latestVerification.templateHash}</span>`
        : html`<span class="muted">never verified</span>`}</dd>
    </dl>
    ${verification ? probesTable(verification) : ''}
  </div>`;
  })}
</section>`)}

<h2>Model aliases and their entries</h2>
<p class="muted">An alias is verified through each protocol entry on its own, with that protocol's official client (POST /v1/entries/verify).</p>
${data.providers.aliases.length === 0 ? html`<p class="muted">No model alias is declared.</p>` : data.providers.aliases.map((alias) => html`<section class="card" data-alias="${alias.alias}">
  <h3>${alias.alias} <span class="mono muted">${alias.aliasDigest}</span></h3>
  <table><thead><tr><th>Entry</th><th>State</th><th>Client</th><th>Newest verification</th><th>Checks</th></tr></thead><tbody>
  ${alias.entries.map((entry) => html`<tr data-entry="${entry.entry}">
    <td>${entry.entry}</td>
    <td>${entry.verified ? html`<span class="status succeeded">verified</span>` : html`<span class="status failed">not verified</span>`}<div class="muted">${entry.detail}</div></td>
    <td class="mono">${entry.client}</td>
    <td>${entry.latestVerification ? html`${timeText(entry.latestVerification.verifiedAt)}: ${entry.latestVerification.passed ? 'passed' : 'failed'}, with <span class="mono">${entry.latestVerification.client}</span>` : html`<span class="muted">never verified</span>`}</td>
    <td>${((entry.latestVerification?.probes ?? []) as unknown as EntryProbe[]).map((probe) => html`<div>${probe.name}: ${Object.values(EntryCheck).map((check) => {
      const result = probe.checks?.[check];
      return html`<span title="${result?.detail ?? 'not run'}">${result ? (result.passed ? '✓' : '✗') : '–'} ${check}</span> `;
    })}${probe.jobId ? html` <a class="mono" href="/console/jobs/${probe.jobId}">${probe.jobId.slice(0, 8)}</a>` : ''}</div>`)}</td>
  </tr>`)}
  </tbody></table>
</section>`)}

<h2>Effects</h2>
<p class="muted">What recovery may rely on: a lookup or a deduplication only while its drills hold a current pass (onceflow effects verify).</p>
${data.effects.effects.map((effect) => html`<section class="card" data-effect="${effect.name}">
  <h3>${effect.name} <span class="status ${effect.recovery === 'review' ? 'failed' : 'succeeded'}">${RECOVERY[effect.recovery]}</span></h3>
  <dl class="facts">
    <dt>Lookup</dt><dd>${!effect.claims.lookup ? html`<span class="muted">none declared</span>` : effect.trust.lookup.current ? 'verified' : html`not verified: ${effect.trust.lookup.why ?? ''}`}</dd>
    <dt>Deduplicates</dt><dd>${!effect.claims.deduplicates ? html`<span class="muted">not claimed</span>` : effect.trust.dedupe.current ? 'verified' : html`not verified: ${effect.trust.dedupe.why ?? ''}`}</dd>
    <dt>Newest verification</dt><dd>${effect.latestVerification ? html`${timeText(effect.latestVerification.verifiedAt)}: ${effect.latestVerification.passed ? 'passed' : 'failed'}, against <span class="mono">${effect.latestVerification.host}</span>` : html`<span class="muted">never verified</span>`}</dd>
  </dl>
  ${effect.latestVerification ? drillsTable(effect.latestVerification.drills as Record<string, DrillView>) : ''}
</section>`)}

<h2>Route versions</h2>
${data.routes.operations.map((operation) => html`<section class="card" data-operation="${operation.operation}">
  <h3>${operation.operation}</h3>
  <dl class="facts">
    <dt>Baseline</dt><dd class="mono">${operation.baseline}</dd>
    <dt>Serving new jobs</dt><dd class="mono">${operation.serving.version}</dd>
    <dt>Canary</dt><dd>${operation.serving.canary ? html`<span class="mono">${operation.serving.canary.version}</span> on ${operation.serving.canary.sharePercent}% of new jobs until ${timeText(operation.serving.canary.expiresAt)}` : html`<span class="muted">none running</span>`}</dd>
  </dl>
  <table><thead><tr><th>Version</th><th>State</th><th>Steps</th><th class="num">Admitted</th><th class="num">Open</th><th>Last window</th><th>Owner / why</th></tr></thead><tbody>
  ${operation.versions.map((version) => html`<tr>
    <td class="mono">${version.version}<div class="muted">${version.kind}</div></td>
    <td>${version.state}${version.sharePercent !== undefined ? html`<div class="muted">${version.sharePercent}% share</div>` : ''}</td>
    <td>${version.steps.map((step, i) => html`${i > 0 ? ' → ' : ''}${step.provider}/<span class="mono">${step.model}</span>`)}</td>
    <td class="num">${version.admitted}</td><td class="num">${version.open}</td>
    <td>${version.window.jobs} of ${version.window.size}: ${version.window.succeeded} succeeded, ${version.window.failed} failed, ${version.window.cancelled} cancelled; ${version.window.withUnknowns} with unknowns, ${version.window.withContractViolations} with contract violations, ${version.window.withEffectsInReview} with effects in review</td>
    <td>${version.owner ?? ''}${version.reason ? html`<div class="muted">${version.reason}</div>` : ''}${version.changedBy ? html`<div class="muted">by ${version.changedBy}</div>` : ''}</td>
  </tr>`)}
  </tbody></table>
</section>`)}
`;
  return page({ title: 'Providers and routes', section: 'providers', signedIn }, body);
}

/** A verification's probes: per fixture, the render check and each sample's outcome. */
function probesTable(verification: VerificationRecord): Html {
  const fixtures = (Array.isArray(verification.evidence.fixtures) ? verification.evidence.fixtures : []) as ProbeFixture[];
  const error = typeof verification.evidence.error === 'string' ? verification.evidence.error : undefined;
  return html`<table class="probes"><thead><tr><th>Probe</th><th>Render</th><th>Samples</th></tr></thead><tbody>
  ${fixtures.map((fixture) => html`<tr>
    <td>${fixture.name ?? '—'} ${fixture.passed ? html`<span class="status succeeded">passed</span>` : html`<span class="status failed">failed</span>`}</td>
    <td>${fixture.render?.ok ? html`fits: ${fixture.render.promptTokens ?? '?'} of ${fixture.render.budgetTokens ?? '?'} tokens` : html`<span class="muted">${JSON.stringify(fixture.render?.problems ?? [])}</span>`}</td>
    <td>${(fixture.samples ?? []).map((sample) => html`<div>${sample.ok ? '✓' : '✗'} ${sample.outcome ?? ''}${sample.error ? html` <span class="muted">${sample.error}</span>` : ''}${sample.violations ? html` <span class="muted">${JSON.stringify(sample.violations)}</span>` : ''}${sample.requestId ? html` <span class="mono muted">${sample.requestId}</span>` : ''}</div>`)}</td>
  </tr>`)}
  ${error ? html`<tr><td colspan="3">${error}</td></tr>` : ''}
  </tbody></table>`;
}
