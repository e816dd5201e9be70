/**
 * The fault catalogue: what a trial may draw, and the one function that draws
 * a trial's whole plan from its own PRNG stream before anything runs. The
 * plan is plain data, so a failure can print it and `--trial T` can rerun it.
 */
import { createPrng, trialSeed, type Prng } from './prng';
import { SETTINGS } from './settings';

/** Every provider behaviour of SIM.md. */
export type ProviderFault =
  | { kind: 'ok' }
  | { kind: 'delay'; ms: number }
  | { kind: 'hang' }
  | { kind: 'late'; ms: number }
  | { kind: 'status'; code: number }
  | { kind: 'refuse' }
  | { kind: 'reset' }
  | { kind: 'extra-key' }
  | { kind: 'prose' };

/** Every downstream behaviour of SIM.md ('ok' when no directive is given). */
export type SinkFault = { kind: 'ok' } | { kind: 'reset' } | { kind: 'status'; code: number } | { kind: 'delay'; ms: number } | { kind: 'reset-once' };

/** When a process fault strikes: so long after the first POST, or so long after the job is seen in a state. */
export type Anchor = 'submit' | 'attempt-running' | 'attempt-won' | 'effect-claimed';

export type ProcessFault =
  | { kind: 'none' }
  /** SIGKILL a worker; start it again after restartAfterMs. */
  | { kind: 'kill-worker'; worker: 0 | 1; anchor: Anchor; offsetMs: number; restartAfterMs: number }
  /** SIGKILL the API; start it again after restartAfterMs. Clients retry on the same key meanwhile. */
  | { kind: 'kill-api'; anchor: Anchor; offsetMs: number; restartAfterMs: number }
  /** Stop PostgreSQL (fast shutdown), start it again after downMs. */
  | { kind: 'restart-pg'; anchor: Anchor; offsetMs: number; downMs: number }
  /** SIGSTOP a worker (a long GC pause, a frozen VM) while the other one goes on; SIGCONT after pausedMs. */
  | { kind: 'pause-worker'; worker: 0 | 1; anchor: Anchor; offsetMs: number; pausedMs: number };

/** An operator resolving the unknown attempt of a `late` answer while that answer or its reconciliation is under way. */
export type OperatorRace =
  | { kind: 'none' }
  /** Resolve afterUnknownMs after the attempt is seen unknown: races the late answer's reconciliation. */
  | { kind: 'race-late'; afterUnknownMs: number; outcome: 'failed' | 'cancelled' }
  /** SIGSTOP the providers during a reconcile lookup, resolve meanwhile, SIGCONT: the lookup then answers "completed". */
  | { kind: 'race-reconcile-paused'; pauseAfterUnknownMs: number; pausedMs: number; resolveAtFraction: number; outcome: 'failed' | 'cancelled' };

/** A request with bytes PostgreSQL cannot store, under its own key and ticket: must be a 400, never a 5xx. */
export type BadInput = 'nul-in-body' | 'lone-surrogate-in-body' | 'nul-in-query' | 'nul-in-path';

export interface TrialPlan {
  runSeed: number;
  trial: number;
  /** Unique per run: trial keys and tickets of two runs against one database never meet. */
  ticketId: string;
  idempotencyKey: string;
  channel: 'email' | 'chat';
  customerMessage: string;
  /** The same key with this message instead must be refused with 409. */
  conflictingMessage?: string;
  /** Identical POSTs sent at once (1: a single click). */
  burst: number;
  /** Prefer: wait=N of each POST. */
  waitSeconds: number[];
  primary: ProviderFault;
  backup: ProviderFault;
  sink: SinkFault;
  process: ProcessFault;
  race: OperatorRace;
  secondWorker: boolean;
  /** What the suite's operator says when it resolves an unknown attempt that never answers. */
  operatorOutcome: 'failed' | 'cancelled';
  badInput?: BadInput;
  /** Every submit of the intent carries Request-Deadline: this long after the trial's first submit. */
  deadlineAfterMs?: number;
}

const AT = SETTINGS.attemptTimeoutMs;

export function describeProvider(fault: ProviderFault): string {
  switch (fault.kind) {
    case 'delay':
    case 'late':
      return `${fault.kind}=${fault.ms}`;
    case 'status':
      return `status=${fault.code}`;
    default:
      return fault.kind;
  }
}

export function describeSink(fault: SinkFault): string {
  if (fault.kind === 'delay') return `delay=${fault.ms}`;
  if (fault.kind === 'status') return `status=${fault.code}`;
  return fault.kind;
}

function drawProvider(rng: Prng): ProviderFault {
  const kind = rng.weighted<ProviderFault['kind']>([
    ['ok', 22],
    ['delay', 10],
    ['hang', 7],
    ['late', 10],
    ['status', 24],
    ['refuse', 6],
    ['reset', 7],
    ['extra-key', 7],
    ['prose', 7],
  ]);
  switch (kind) {
    case 'delay':
      // Half inside the attempt timeout (a slow success), half beyond it (unknown, then reconciled).
      return { kind, ms: rng.chance(0.5) ? rng.int(100, AT - 400) : rng.int(AT + 100, AT + 1_500) };
    case 'late':
      return { kind, ms: rng.int(AT + 100, AT + 2_500) };
    case 'status':
      return { kind, code: rng.pick([429, 400, 500, 502, 503, 504]) };
    default:
      return { kind } as ProviderFault;
  }
}

function drawSink(rng: Prng): SinkFault {
  const kind = rng.weighted<SinkFault['kind']>([
    ['ok', 40],
    ['reset', 14],
    ['reset-once', 12],
    ['delay', 14],
    ['status', 20],
  ]);
  switch (kind) {
    case 'delay':
      // Inside the downstream call's budget, or beyond it (ambiguous: recovery finds the receipt).
      return { kind, ms: rng.chance(0.5) ? rng.int(50, SETTINGS.effectCallTimeoutMs - 150) : rng.int(SETTINGS.effectCallTimeoutMs + 100, 1_500) };
    case 'status':
      return { kind, code: rng.pick([429, 400, 500, 502, 503]) };
    default:
      return { kind } as SinkFault;
  }
}

function drawAnchor(rng: Prng): { anchor: Anchor; offsetMs: number } {
  const anchor = rng.weighted<Anchor>([
    ['submit', 40],
    ['attempt-running', 20],
    ['attempt-won', 25],
    ['effect-claimed', 15],
  ]);
  // Right after a winning attempt is where a lost worker hurts most (issue 9, hole 6).
  const offsetMs = anchor === 'submit' ? rng.int(0, 1_500) : anchor === 'attempt-won' ? rng.int(0, 200) : rng.int(0, 600);
  return { anchor, offsetMs };
}

function drawProcess(rng: Prng, secondWorker: boolean): ProcessFault {
  const kind = rng.weighted<ProcessFault['kind']>([
    ['none', 42],
    ['kill-worker', 22],
    ['kill-api', 14],
    ['restart-pg', 12],
    ['pause-worker', 10],
  ]);
  switch (kind) {
    case 'none':
      return { kind };
    case 'kill-worker':
      return { kind, worker: secondWorker && rng.chance(0.5) ? 1 : 0, ...drawAnchor(rng), restartAfterMs: rng.int(0, 3_000) };
    case 'kill-api':
      return { kind, ...drawAnchor(rng), restartAfterMs: rng.int(0, 3_000) };
    case 'restart-pg':
      return { kind, ...drawAnchor(rng), downMs: rng.int(0, 3_000) };
    case 'pause-worker':
      // Longer than the activity budgets, so the other worker takes the job on meanwhile.
      return { kind, worker: rng.chance(0.5) ? 1 : 0, ...drawAnchor(rng), pausedMs: rng.int(1_000, 8_000) };
  }
}

function drawRace(rng: Prng): OperatorRace {
  const kind = rng.weighted<OperatorRace['kind']>([
    ['none', 80],
    ['race-late', 10],
    ['race-reconcile-paused', 10],
  ]);
  const outcome = rng.chance(0.75) ? 'failed' : 'cancelled';
  if (kind === 'race-late') return { kind, afterUnknownMs: rng.int(0, 2_500), outcome };
  if (kind === 'race-reconcile-paused') {
    return {
      kind,
      pauseAfterUnknownMs: rng.int(0, 800),
      // At least one reconcile interval, so a lookup is sent while paused; below the lookup's timeout.
      pausedMs: rng.int(SETTINGS.reconcileIntervalMs + 300, SETTINGS.lookupTimeoutMs - 1_500),
      resolveAtFraction: 0.4 + rng.next() * 0.5,
      outcome,
    };
  }
  return { kind: 'none' };
}

const MESSAGES = [
  'Where is my order?',
  'My parcel arrived damaged, what now?',
  'Can I change the delivery address?',
  'I was charged twice, please refund one charge.',
  'The app logs me out every time.',
];

function directive(provider: string, fault: ProviderFault): string {
  return fault.kind === 'ok' ? '' : ` @sim(${provider}:${describeProvider(fault)})`;
}

/** The customer's message with the directives that choose the simulators' faults (SIM.md). */
export function composeMessage(base: string, primary: ProviderFault, backup: ProviderFault, sink: SinkFault): string {
  const sinkDirective = sink.kind === 'ok' ? '' : ` @sink(${describeSink(sink)})`;
  return `${base}${directive('sim-primary', primary)}${directive('sim-backup', backup)}${sinkDirective}`;
}

/**
 * Draws the whole plan of one trial. Same run seed and trial number, same plan.
 * @param runTag distinguishes the keys and tickets of repeated runs of one trial (--repeat); it changes no draw.
 */
export function drawPlan(runSeed: number, trial: number, runTag: string): TrialPlan {
  const rng = createPrng(trialSeed(runSeed, trial));
  const race = drawRace(rng);
  let secondWorker = rng.chance(0.15);
  let processFault = drawProcess(rng, secondWorker);
  if (processFault.kind === 'pause-worker') secondWorker = true;
  // A race needs a late answer; it is the trial's only fault of the provider.
  let primary: ProviderFault = race.kind === 'none' ? drawProvider(rng) : { kind: 'late', ms: race.kind === 'race-late' ? rng.int(AT + 200, AT + 1_800) : rng.int(AT + 100, AT + 900) };
  const backup: ProviderFault = rng.chance(0.8) ? { kind: 'ok' } : drawProvider(rng);
  let sink = drawSink(rng);
  if (race.kind !== 'none' && processFault.kind !== 'none') processFault = { kind: 'none' };
  if (processFault.kind !== 'none') {
    // Widen the windows a process fault can land in.
    if (primary.kind === 'ok' && rng.chance(0.7)) primary = { kind: 'delay', ms: rng.int(200, AT - 500) };
    if (sink.kind === 'ok' && rng.chance(0.7)) sink = { kind: 'delay', ms: rng.int(100, SETTINGS.effectCallTimeoutMs - 100) };
  }
  const burst = rng.weighted<number>([
    [1, 30],
    [rng.int(2, 4), 40],
    [rng.int(5, 12), 30],
  ]);
  const waitSeconds = Array.from({ length: burst }, () => (rng.chance(0.5) ? 0 : rng.int(1, 5)));
  const conflict = rng.chance(0.3);
  const base = rng.pick(MESSAGES);
  const ticketId = `C${runTag}-${runSeed}-${trial}`;
  const customerMessage = composeMessage(base, primary, backup, sink);
  return {
    runSeed,
    trial,
    ticketId,
    idempotencyKey: `chaos-${runTag}-${runSeed}-${trial}`,
    channel: rng.chance(0.5) ? 'email' : 'chat',
    customerMessage,
    ...(conflict ? { conflictingMessage: `${customerMessage} (edited)` } : {}),
    burst,
    waitSeconds,
    primary,
    backup,
    sink,
    process: processFault,
    race,
    secondWorker,
    operatorOutcome: rng.chance(0.7) ? 'failed' : 'cancelled',
    // Drawn last, so the draws above stay those of earlier versions of the catalogue.
    ...(rng.chance(0.12) ? { badInput: rng.pick<BadInput>(['nul-in-body', 'lone-surrogate-in-body', 'nul-in-query', 'nul-in-path']) } : {}),
    // From under one attempt's minimum (the job fails at once) to room for a fallback and reconciliation.
    ...(rng.chance(0.2) ? { deadlineAfterMs: rng.int(500, 4 * AT) } : {}),
  };
}

/** Provider behaviours after which the attempt still succeeds (at once, or by reconciliation). */
const ANSWERS = new Set<ProviderFault['kind']>(['ok', 'delay', 'late', 'reset']);
/** Downstream behaviours after which the message is delivered and its receipt found. */
const DELIVERS = new Set<SinkFault['kind']>(['ok', 'delay', 'reset', 'reset-once']);

/**
 * Whether nothing in the plan is a reason for the job to fail: the downstream
 * delivers, and the primary answers (no race fails it on purpose), or the
 * fallback answers and no process fault can spend an attempt meanwhile.
 */
export function expectsSuccess(plan: TrialPlan): boolean {
  // A caller's deadline is a reason to fail.
  if (plan.deadlineAfterMs !== undefined) return false;
  const primaryAnswers = plan.race.kind === 'none' && ANSWERS.has(plan.primary.kind);
  const backupAnswers = ANSWERS.has(plan.backup.kind) && plan.process.kind === 'none';
  return DELIVERS.has(plan.sink.kind) && (primaryAnswers || backupAnswers);
}

/** Trials with these change what every other trial sees: they run alone. */
export function runsAlone(plan: TrialPlan): boolean {
  return plan.process.kind !== 'none' || plan.secondWorker || plan.race.kind === 'race-reconcile-paused';
}

/** The fault kinds a plan exercises: the rows of the report it counts in. */
export function faultKinds(plan: TrialPlan): string[] {
  const kinds = [`provider:${plan.primary.kind === 'status' ? describeProvider(plan.primary) : plan.primary.kind}`];
  if (plan.backup.kind !== 'ok') kinds.push(`backup:${plan.backup.kind === 'status' ? describeProvider(plan.backup) : plan.backup.kind}`);
  kinds.push(`sink:${plan.sink.kind === 'status' ? describeSink(plan.sink) : plan.sink.kind}`);
  if (plan.burst > 1) kinds.push('storm');
  if (plan.conflictingMessage) kinds.push('conflict');
  if (plan.process.kind !== 'none') kinds.push(plan.process.kind);
  if (plan.race.kind !== 'none') kinds.push(plan.race.kind);
  if (plan.secondWorker) kinds.push('second-worker');
  if (plan.badInput) kinds.push(`bad-input:${plan.badInput}`);
  if (plan.deadlineAfterMs !== undefined) kinds.push('deadline');
  return kinds;
}
