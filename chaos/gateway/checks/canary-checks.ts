/**
 * Canary routes, checked against their own thresholds and the operators'
 * changes: a canary stops by the next job after its window crosses a
 * threshold, never without one, and every new job goes where the route
 * versions said at its admission.
 */
import { inCanaryShare } from '../../../src/canary/share';
import type { GatewayObservation, GwJob, RouteVersionObs } from '../observation';
import type { GatewayViolation } from './kinds';

/** A stop is written just after the terminal write (or the wait) that crossed: this close, a job admitted meanwhile raced it. */
export const CANARY_RACE_MS = 300;
/** How long after the crossing the canary must have left `running`. */
export const CANARY_STOP_MS = 1_500;

type Harm = 'contract_violations' | 'unknowns' | 'effects_in_review' | 'failed';

/**
 * When each job of the version did harm: a contract violation or a failure
 * when the job ended (the window is of ended jobs), an unknown attempt or an
 * effect in review as soon as the job was blocked on it.
 */
function harmsOf(obs: GatewayObservation, jobs: GwJob[]): Array<{ harm: Harm; at: number; jobId: string }> {
  const harms: Array<{ harm: Harm; at: number; jobId: string }> = [];
  for (const job of jobs) {
    const firstEvent = (type: string) => obs.events.filter((e) => e.jobId === job.id && e.type === type).reduce<number | undefined>((min, e) => (min === undefined || e.at < min ? e.at : min), undefined);
    const unknownAt = firstEvent('attempt.unknown');
    const reviewAt = firstEvent('effect.needs_review');
    if (unknownAt !== undefined) harms.push({ harm: 'unknowns', at: unknownAt, jobId: job.id });
    if (reviewAt !== undefined) harms.push({ harm: 'effects_in_review', at: reviewAt, jobId: job.id });
    if (job.terminalAt === null) continue;
    if (obs.attempts.some((a) => a.jobId === job.id && a.errorClass === 'contract_violation')) harms.push({ harm: 'contract_violations', at: job.terminalAt, jobId: job.id });
    if (job.status === 'failed') harms.push({ harm: 'failed', at: job.terminalAt, jobId: job.id });
  }
  return harms.sort((a, b) => a.at - b.at);
}

/** The first moment the version's harms cross one of its thresholds, and which. */
export function crossingOf(obs: GatewayObservation, version: RouteVersionObs): { at: number; harm: Harm; count: number } | undefined {
  const t = version.thresholds;
  if (!t) return undefined;
  const jobs = obs.jobs.filter((j) => j.operation === version.operation && j.routeVersion === version.version);
  // The fewest harms that cross a share of the fixed window (thresholds.ts: harm × 100 > percent × window).
  const over = (percent: number) => Math.floor((percent * t.window) / 100) + 1;
  const needed: Partial<Record<Harm, number>> = {
    contract_violations: over(t.contractViolationsPercent),
    unknowns: over(t.unknownsPercent),
    effects_in_review: t.effectsInReview + 1,
    ...(t.failedPercent !== null ? { failed: over(t.failedPercent) } : {}),
  };
  let first: { at: number; harm: Harm; count: number } | undefined;
  const harms = harmsOf(obs, jobs);
  for (const [harm, count] of Object.entries(needed) as Array<[Harm, number]>) {
    const nth = harms.filter((h) => h.harm === harm)[count - 1];
    if (nth && (!first || nth.at < first.at)) first = { at: nth.at, harm, count };
  }
  return first;
}

const LEAVES_RUNNING = new Set(['canary.promoted', 'canary.stopped', 'canary.rolled_back', 'canary.superseded']);

export function checkCanaryStops(obs: GatewayObservation): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const version of obs.canary?.versions ?? []) {
    if (!version.thresholds) continue;
    const left = version.events.filter((e) => LEAVES_RUNNING.has(e.type)).sort((a, b) => a.at - b.at)[0];
    const leftAt = left?.at ?? Infinity;
    const crossing = crossingOf(obs, version);
    const name = `canary ${version.version} (${version.operation})`;
    const selfStop = version.events.find((e) => e.type === 'canary.stopped' && e.by === 'canary' && e.cause === 'threshold');
    if (!crossing || crossing.at >= leftAt) {
      if (selfStop && !crossing) violations.push({ kind: 'canary-stop', detail: `${name} stopped by itself at a threshold, though its jobs crossed none` });
      continue;
    }
    const when = `its ${crossing.count}${crossing.count === 1 ? 'st' : 'th'} job with ${crossing.harm.replace(/_/g, ' ')} crossed its threshold at ${new Date(crossing.at).toISOString()}`;
    const late = obs.jobs.filter((j) => j.routeVersion === version.version && j.createdAt > crossing.at + CANARY_RACE_MS && j.createdAt < leftAt);
    if (late.length) violations.push({ kind: 'canary-stop', detail: `${name}: ${when}, yet ${late.length} later job(s) were admitted to it (first ${late[0]!.createdAt - crossing.at} ms after)` });
    else if (leftAt > crossing.at + CANARY_STOP_MS) violations.push({ kind: 'canary-stop', detail: `${name}: ${when}; it was ${left ? `left running until ${left.type} ${leftAt - crossing.at} ms later` : `still ${version.state} at the end`}` });
  }
  return violations;
}

interface RouteState {
  running?: RouteVersionObs;
  serving: string;
  /** The promoted version, if any (the baseline serves when there is none). */
  promoted?: string;
}

/** What served new jobs of the operation after each change, from the versions' events (one state per change). */
function routeTimeline(obs: GatewayObservation, operation: string): Array<{ at: number; state: RouteState }> {
  const versions = (obs.canary?.versions ?? []).filter((v) => v.operation === operation);
  const changes = versions.flatMap((v) => v.events.map((e) => ({ ...e, version: v }))).sort((a, b) => a.at - b.at);
  const baseline = obs.canary?.baseline[operation] ?? '';
  const initial = obs.canary?.initialServing[operation] ?? baseline;
  let state: RouteState = { serving: initial, ...(initial !== baseline ? { promoted: initial } : {}) };
  // Which promoted version each promotion superseded, and whether it is still superseded (not rolled back since).
  const supersededBy = new Map<string, string>();
  const ended = new Set<string>();
  const timeline = [{ at: -Infinity, state }];
  for (const change of changes) {
    const { version } = change;
    const wasRunning = state.running?.version === version.version;
    if (change.type === 'canary.started') state = { ...state, running: version };
    else if (change.type === 'canary.promoted') {
      if (state.promoted) supersededBy.set(version.version, state.promoted);
      state = { serving: version.version, promoted: version.version };
    } else if (change.type === 'canary.stopped' && wasRunning) state = { serving: state.serving, ...(state.promoted ? { promoted: state.promoted } : {}) };
    else if (change.type === 'canary.rolled_back') {
      ended.add(version.version);
      // Running: back to what it was tried against. Promoted: to the version its promotion superseded, if that one
      // is still superseded (an operator's rollback of it stands), else to the baseline.
      if (wasRunning) state = { serving: state.serving, ...(state.promoted ? { promoted: state.promoted } : {}) };
      else if (state.promoted === version.version) {
        // A canary running meanwhile runs on, against what serves now.
        const restored = supersededBy.get(version.version);
        const running = state.running ? { running: state.running } : {};
        state = restored && !ended.has(restored) ? { ...running, serving: restored, promoted: restored } : { ...running, serving: baseline };
      }
    } else continue;
    timeline.push({ at: change.at, state });
  }
  return timeline;
}

function allowed(state: RouteState, jobId: string): string[] {
  if (!state.running) return [state.serving];
  return [inCanaryShare(jobId, state.running.shareBp ?? 0) ? state.running.version : state.serving];
}

export function checkCanaryRoutes(obs: GatewayObservation): GatewayViolation[] {
  if (!obs.canary) return [];
  const violations: GatewayViolation[] = [];
  for (const operation of Object.keys(obs.canary.initialServing)) {
    const timeline = routeTimeline(obs, operation);
    for (const job of obs.jobs.filter((j) => j.operation === operation)) {
      // The state at admission; a change within the race margin may have come first or not.
      const states = timeline.filter((entry, i) => {
        const until = timeline[i + 1]?.at ?? Infinity;
        return entry.at <= job.createdAt + CANARY_RACE_MS && until >= job.createdAt - CANARY_RACE_MS;
      });
      const expected = new Set(states.flatMap((entry) => allowed(entry.state, job.id)));
      if (job.routeVersion !== null && !expected.has(job.routeVersion)) {
        violations.push({ kind: 'canary-route', detail: `job ${job.id} (${operation}) was admitted to ${job.routeVersion}; the route versions said ${[...expected].join(' or ')} at ${new Date(job.createdAt).toISOString()}` });
      }
    }
  }
  return violations.slice(0, 3);
}
