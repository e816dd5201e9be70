/**
 * The gateway round's catalogue: one function draws a trial's whole plan
 * from its own PRNG stream (the same one the core round derives from the
 * seed and the trial number), before anything runs.
 */
import { createPrng, trialSeed, type Prng } from '../prng';
import { SETTINGS } from '../settings';
import { LIARS, type DownstreamPlan, type LookupFault, type SendFault } from './downstream';
import type { BudgetPlan, CanaryAction, CanaryHarm, CanaryPlan, GatewayPlan, GatewayTrialKind, HostileTicket, IntentPlan, SimProvider } from './plan';
import { GW, GW_LIARS, type GatewayOperation } from './stack-config';

const AT = SETTINGS.attemptTimeoutMs;

const TEXTS = ['Where is my order?', 'My parcel arrived damaged, what now?', 'Can I change the delivery address?', 'The app logs me out every time.', 'I was charged twice.'];

export const TRIAL_KINDS: ReadonlyArray<readonly [GatewayTrialKind, number]> = [
  ['canary', 22],
  ['hedge', 20],
  ['storm429', 18],
  ['effect', 20],
  ['budget', 7],
  ['reopen', 13],
  ['liar', 12],
];

const sim = (provider: SimProvider | '*', behaviour: string): string => `@sim(${provider}:${behaviour})`;

/** A provider behaviour of a hedged job: answers that hang, come late or are lost on the way, or none at all. */
function hedgeBehaviour(rng: Prng, provider: SimProvider): string | undefined {
  const kind = rng.weighted<string>(
    provider === 'sim-primary'
      ? [['hang', 25], ['late', 25], ['slow', 10], ['gateway', 10], ['reset', 10], ['ok', 10], ['extra-key', 5], ['429', 5]]
      : [['ok', 35], ['hang', 20], ['late', 20], ['slow', 10], ['gateway', 10], ['reset', 5]],
  );
  switch (kind) {
    case 'ok':
      return undefined;
    case 'late':
      return `late=${rng.int(AT + 100, AT + 2_500)}`;
    case 'slow':
      return `delay=${rng.int(AT + 100, AT + 1_500)}`;
    case 'gateway':
      return `status=${rng.pick([502, 503, 504])}`;
    case '429':
      return 'status=429';
    default:
      return kind;
  }
}

/** A 429 with a Retry-After chosen (0 to 3 s), or the simulator's default of 1 s. */
function rateLimited(rng: Prng): { directive: string; retryAfterMs: number } {
  const seconds = rng.weighted<number | undefined>([[undefined, 2], [0, 1], [1, 1], [2, 2], [3, 2]]);
  return seconds === undefined ? { directive: 'status=429', retryAfterMs: 1_000 } : { directive: `status=429,retry-after=${seconds}`, retryAfterMs: seconds * 1_000 };
}

function sendFault(rng: Prng): SendFault {
  const kind = rng.weighted<SendFault['kind']>([['ok', 10], ['redirect', 30], ['redirect-no-location', 15], ['reset', 25], ['status', 20]]);
  const acted = rng.chance(0.5);
  switch (kind) {
    case 'ok':
      return { kind };
    case 'redirect':
      return { kind, code: rng.pick([301, 302, 303, 307, 308] as const), acted };
    case 'redirect-no-location':
      return { kind, code: rng.pick([300, 302, 303, 307] as const), acted };
    case 'reset':
      return { kind, acted };
    case 'status':
      return { kind, code: 500, acted };
  }
}

function lookupFault(rng: Prng): LookupFault | undefined {
  if (!rng.chance(0.5)) return undefined;
  return { kind: rng.pick([500, 401, 'hang'] as const), forMs: rng.int(500, 5_000) };
}

interface IntentSeed {
  operation: GatewayOperation;
  directives?: string[];
  startMs?: number;
  afterLabel?: string;
  deadlineAfterMs?: number;
  downstream?: DownstreamPlan;
  retryAfterMs?: IntentPlan['retryAfterMs'];
  raceResolveMs?: number;
  burst?: number;
  padTo?: number;
  hostile?: HostileTicket;
}

/** Names intents and their tickets uniquely per run (and per --repeat tag). */
function intentMaker(rng: Prng, runSeed: number, trial: number, tag: string) {
  let n = 0;
  return (seed: IntentSeed): IntentPlan => {
    const label = `i${n++}`;
    const burst = seed.burst ?? rng.weighted<number>([[1, 45], [rng.int(2, 4), 40], [rng.int(5, 8), 15]]);
    return {
      label,
      operation: seed.operation,
      key: `gw${tag}-${runSeed}-${trial}-${label}`,
      ticketId: `G${tag}-${runSeed}-${trial}-${label}`,
      text: rng.pick(TEXTS),
      directives: seed.directives ?? [],
      burst,
      startMs: seed.startMs ?? 0,
      ...(seed.afterLabel ? { afterLabel: seed.afterLabel } : {}),
      ...(seed.deadlineAfterMs !== undefined ? { deadlineAfterMs: seed.deadlineAfterMs } : {}),
      ...(seed.downstream ? { downstream: seed.downstream } : {}),
      ...(seed.retryAfterMs ? { retryAfterMs: seed.retryAfterMs } : {}),
      ...(seed.raceResolveMs !== undefined ? { raceResolveMs: seed.raceResolveMs } : {}),
      ...(seed.padTo ? { padTo: seed.padTo } : {}),
      ...(seed.hostile ? { hostile: seed.hostile } : {}),
    };
  };
}

function drawHedge(rng: Prng, make: ReturnType<typeof intentMaker>): IntentPlan[] {
  return Array.from({ length: rng.int(1, 3) }, () => {
    const primary = hedgeBehaviour(rng, 'sim-primary');
    const backup = hedgeBehaviour(rng, 'sim-backup');
    return make({
      operation: GW.lookup,
      directives: [...(primary ? [sim('sim-primary', primary)] : []), ...(backup ? [sim('sim-backup', backup)] : [])],
      startMs: rng.int(0, 1_500),
      ...(rng.chance(0.35) ? { raceResolveMs: rng.int(0, 2_500) } : {}),
      ...(rng.chance(0.25) ? { deadlineAfterMs: rng.int(3_000, 10_000) } : {}),
    });
  });
}

function drawStorm429(rng: Prng, make: ReturnType<typeof intentMaker>): IntentPlan[] {
  return Array.from({ length: rng.int(1, 2) }, () => {
    const primary = rateLimited(rng);
    const backupKind = rng.weighted<'429' | 'ok' | '503'>([['429', 80], ['ok', 12], ['503', 8]]);
    const backup = backupKind === '429' ? rateLimited(rng) : undefined;
    const directives = [sim('sim-primary', primary.directive), ...(backup ? [sim('sim-backup', backup.directive)] : backupKind === '503' ? [sim('sim-backup', 'status=503')] : [])];
    return make({
      operation: rng.chance(0.5) ? GW.ticket : GW.lookup,
      directives,
      startMs: rng.int(0, 800),
      retryAfterMs: { 'sim-primary': primary.retryAfterMs, ...(backup ? { 'sim-backup': backup.retryAfterMs } : {}) },
      ...(rng.chance(0.5) ? { deadlineAfterMs: rng.int(1_500, 9_000) } : {}),
    });
  });
}

function drawEffect(rng: Prng, make: ReturnType<typeof intentMaker>): IntentPlan[] {
  return Array.from({ length: rng.int(1, 2) }, () =>
    make({
      operation: GW.ticket,
      startMs: rng.int(0, 800),
      downstream: { send: sendFault(rng), ...(() => { const lookup = lookupFault(rng); return lookup ? { lookup } : {}; })() },
      ...(rng.chance(0.25) ? { hostile: rng.pick<HostileTicket>(['dot-dot', 'slashes', 'at-host', 'query-fragment', 'backslash']) } : {}),
    }),
  );
}

/** Tickets posted to a liar (invariant 14): its send answered, lost, refused or redirected, and no lookup fault (the lie is the lookup's). */
function drawLiar(rng: Prng, make: ReturnType<typeof intentMaker>): IntentPlan[] {
  return Array.from({ length: rng.int(1, 2) }, () => make({ operation: GW_LIARS[rng.pick(LIARS)].operation, startMs: rng.int(0, 800), downstream: { send: sendFault(rng) } }));
}

function drawReopen(rng: Prng, make: ReturnType<typeof intentMaker>): IntentPlan[] {
  const cause = rng.pick(['deadline', 'exhausted', 'storm'] as const);
  const limited = rateLimited(rng);
  const first = make({
    operation: GW.ticket,
    burst: 1,
    // deadline: less than one attempt's minimum, so the first run fails before any attempt.
    ...(cause === 'deadline' ? { deadlineAfterMs: rng.int(300, 900) } : {}),
    ...(cause === 'exhausted' ? { directives: [sim('*', 'status=400')] } : {}),
    ...(cause === 'storm' ? { directives: [sim('*', limited.directive)], retryAfterMs: { 'sim-primary': limited.retryAfterMs, 'sim-backup': limited.retryAfterMs }, deadlineAfterMs: rng.int(2_500, 5_000) } : {}),
  });
  const again = (after: IntentPlan): IntentPlan => ({
    ...make({ operation: GW.ticket, afterLabel: after.label, startMs: rng.int(0, 1_000), burst: rng.int(1, 4) }),
    key: first.key,
    ticketId: first.ticketId,
    text: first.text,
    directives: first.directives,
    retryAfterMs: first.retryAfterMs ?? {},
    sameAs: first.label,
  });
  const second = again(first);
  // A retry that fails again may be reopened once more.
  return cause === 'exhausted' && rng.chance(0.5) ? [first, second, again(second)] : [first, second];
}

function drawCanary(rng: Prng, make: ReturnType<typeof intentMaker>, names: (role: string) => string): { intents: IntentPlan[]; canary: CanaryPlan } {
  const brokenOnTicket = rng.chance(0.6);
  const harm = rng.pick<CanaryHarm>(brokenOnTicket ? ['extra-key', 'prose', 'hang', 'review'] : ['extra-key', 'prose', 'hang']);
  const brokenOp = brokenOnTicket ? GW.canaryTicket : GW.canaryLookup;
  const healthyOp = brokenOnTicket ? GW.canaryLookup : GW.canaryTicket;
  const intents: IntentPlan[] = [];
  let at = rng.int(200, 600);
  for (let i = rng.int(6, 10); i > 0; i--) {
    const toBroken = rng.chance(0.65);
    const harmful = rng.chance(0.6);
    // The harm names the broken canary's primary (sim-backup): the baseline and the healthy canary lead with sim-primary.
    const directives = harmful && harm !== 'review' ? [sim('sim-backup', harm)] : [];
    // Review: the downstream loses, unrecorded as done, only what the canary's primary wrote; the lookup then finds nothing.
    const lost: SendFault = rng.chance(0.5) ? { kind: 'reset', acted: false } : { kind: 'status', code: 500, acted: false };
    const downstream: DownstreamPlan | undefined = harmful && harm === 'review' ? { send: lost, onlyFrom: 'sim-backup' } : undefined;
    intents.push(make({ operation: toBroken ? brokenOp : healthyOp, directives, startMs: at, burst: rng.chance(0.7) ? 1 : rng.int(2, 3), ...(downstream ? { downstream } : {}) }));
    at += rng.int(300, 1_500);
  }
  const actions: CanaryAction[] = [];
  const someIntent = () => rng.pick(intents).label;
  if (rng.chance(0.35)) {
    // The healthy canary promoted, a second one promoted over it, then rolled back: new jobs must go back to the first.
    const order = [...intents].map((intent) => intent.label);
    const cut = (share: number) => order[Math.min(order.length - 1, Math.floor(order.length * share))]!;
    actions.push({ afterLabel: cut(0.1), delayMs: rng.int(0, 300), target: 'healthy', action: 'promote' });
    actions.push({ afterLabel: cut(0.3), delayMs: rng.int(0, 300), target: 'second', action: 'start-second' });
    actions.push({ afterLabel: cut(0.5), delayMs: rng.int(0, 300), target: 'second', action: 'promote' });
    actions.push({ afterLabel: cut(0.7), delayMs: rng.int(0, 300), target: 'second', action: 'rollback' });
    // Jobs of the healthy operation after the rollback: where they go is what the rollback decided.
    for (let extra = 0; extra < 2; extra++) {
      at += rng.int(500, 1_000);
      intents.push(make({ operation: healthyOp, startMs: at, burst: 1 }));
    }
  }
  for (let n = rng.weighted<number>([[0, 30], [1, 45], [2, 25]]); n > 0; n--) {
    actions.push({ afterLabel: someIntent(), delayMs: rng.int(0, 1_500), target: rng.chance(0.6) ? 'broken' : 'healthy', action: rng.pick(['promote', 'stop', 'rollback'] as const) });
  }
  return {
    intents,
    canary: {
      broken: { operation: brokenOp, version: names('broken'), harm, sharePercent: rng.chance(0.6) ? 100 : 50 },
      healthy: { operation: healthyOp, version: names('healthy'), sharePercent: rng.chance(0.6) ? 100 : 50 },
      second: { version: names('second') },
      actions,
    },
  };
}

function drawBudget(rng: Prng): BudgetPlan {
  // The prefill stops on what is settled so far; the late usage lands after it (about as much again, with a late share near 1):
  // from well under the budget to over it once the adjustments are in, while the settlements alone stay under.
  return { targetShare: 0.3 + rng.next() * 0.65, lateShare: 0.5 + rng.next() * 0.5, maxPrefill: 16, burst: rng.int(2, 6), padTo: rng.int(5_000, 7_500) };
}

/**
 * Draws the whole plan of one gateway trial. Same run seed and trial number, same plan.
 * @param runTag distinguishes the keys, tickets and canaries of repeated runs (--repeat); it changes no draw.
 */
export function drawGatewayPlan(runSeed: number, trial: number, runTag: string): GatewayPlan {
  // Its own stream, apart from the core round's draws for the same trial number.
  const rng = createPrng(trialSeed(runSeed ^ 0x67617465, trial));
  const kind = rng.weighted(TRIAL_KINDS);
  const make = intentMaker(rng, runSeed, trial, runTag);
  const names = (role: string) => `gw${runTag}-${runSeed >>> 0}-${trial}-${role}`;
  const base = { runSeed, trial, tag: runTag, kind, principal: `gw${runTag}-${runSeed}-${trial}`, operatorOutcome: rng.chance(0.7) ? ('failed' as const) : ('cancelled' as const) };
  switch (kind) {
    case 'canary': {
      const { intents, canary } = drawCanary(rng, make, names);
      return { ...base, intents, canary, awaitLeftovers: false };
    }
    case 'hedge': {
      const intents = drawHedge(rng, make);
      return { ...base, intents, awaitLeftovers: rng.chance(0.3) && intents.some((i) => i.directives.some((d) => /late|delay|reset/.test(d))) };
    }
    case 'storm429':
      return { ...base, intents: drawStorm429(rng, make), awaitLeftovers: false };
    case 'effect':
      return { ...base, intents: drawEffect(rng, make), awaitLeftovers: false };
    case 'reopen':
      return { ...base, intents: drawReopen(rng, make), awaitLeftovers: false };
    case 'liar':
      return { ...base, intents: drawLiar(rng, make), awaitLeftovers: false };
    case 'budget':
      // The prefill and the burst are made at run time, as the spend shows (runner: budget-intents.ts).
      return { ...base, intents: [], budget: drawBudget(rng), awaitLeftovers: true };
  }
}

/** The rows of the report a plan counts in. */
export function gatewayFaultKinds(plan: GatewayPlan): string[] {
  const kinds = new Set<string>([`gw:${plan.kind}`]);
  for (const intent of plan.intents) {
    for (const directive of intent.directives) {
      const [, provider, behaviour] = /^@sim\(([^:]+):([^)]+)\)$/.exec(directive) ?? [];
      if (!provider || !behaviour) continue;
      const shown = behaviour.startsWith('status=') ? behaviour : behaviour.replace(/=.*$/, '');
      kinds.add(`${provider === '*' ? 'both' : provider.replace('sim-', '')}:${shown}`);
    }
    if (intent.burst > 1) kinds.add('storm');
    if (intent.deadlineAfterMs !== undefined) kinds.add('deadline');
    if (intent.raceResolveMs !== undefined) kinds.add('race-resolution');
    if (intent.hostile) kinds.add(`hostile-ticket:${intent.hostile}`);
    if (intent.sameAs) kinds.add('reopen-retry');
    const send = intent.downstream?.send;
    if (send && !intent.downstream?.onlyFrom) kinds.add(`effect:${send.kind}${'code' in send ? `-${send.code}` : ''}${send.kind !== 'ok' ? (send.acted ? ' acted' : ' unacted') : ''}`);
    if (intent.downstream?.lookup) kinds.add(`lookup:${intent.downstream.lookup.kind}`);
    const liar = Object.entries(GW_LIARS).find(([, of]) => of.operation === intent.operation)?.[0];
    if (liar) kinds.add(`liar:${liar}`);
  }
  if (plan.canary) {
    kinds.add(`canary-harm:${plan.canary.broken.harm}`);
    for (const action of plan.canary.actions) kinds.add(action.target === 'second' ? `canary:second-${action.action.replace('start-second', 'start')}` : `canary:${action.action}`);
  }
  if (plan.budget) kinds.add('budget-burst');
  if (plan.awaitLeftovers) kinds.add('late-usage');
  return [...kinds].sort();
}

/** Trials that change what every other trial sees run alone: canaries (routing), budgets (long prefill, heavy). */
export function gatewayRunsAlone(plan: GatewayPlan): boolean {
  return plan.kind === 'canary' || plan.kind === 'budget';
}
