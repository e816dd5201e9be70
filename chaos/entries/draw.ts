/**
 * The entries round's catalogue and the one function that draws a trial's
 * whole plan from its own PRNG stream: a few intents of an app on the
 * official SDKs (either entry, either alias, plain or streamed), each sent by
 * one client or a burst of them, answers cut on the way back so the SDK
 * retries, provider faults, a conflicting body on a used key, and now and
 * then the API or the worker killed while the SDKs wait.
 */
import { createPrng, trialSeed, type Prng } from '../prng';
import { SETTINGS } from '../settings';
import { ENTRY_ALIASES, type EntriesPlan, type EntriesProcessFault, type EntryIntentPlan } from './plan';

const TEXTS = ['Where is my order?', 'My parcel arrived damaged, what now?', 'Can I change the delivery address?', 'The app logs me out every time.', 'I was charged twice.'];

/** Past the attempt's timeout: the answer comes after the attempt went unknown. */
const AT = SETTINGS.attemptTimeoutMs;

const sim = (provider: 'sim-primary' | 'sim-backup', behaviour: string): string => `@sim(${provider}:${behaviour})`;

/** What the primary does with the intent's attempt (undefined: it answers). */
function primaryBehaviour(rng: Prng): string | undefined {
  const kind = rng.weighted<string>([['ok', 45], ['hang', 12], ['late', 10], ['slow', 8], ['gateway', 10], ['500', 5], ['reset', 5], ['429', 5]]);
  switch (kind) {
    case 'ok':
      return undefined;
    case 'late':
      return `late=${rng.int(AT + 100, AT + 2_000)}`;
    case 'slow':
      return `delay=${rng.int(100, AT - 500)}`;
    case 'gateway':
      return `status=${rng.pick([502, 503, 504])}`;
    case '500':
      return 'status=500';
    case '429':
      return 'status=429,retry-after=0';
    default:
      return kind;
  }
}

function backupBehaviour(rng: Prng): string | undefined {
  return rng.weighted<string | undefined>([[undefined, 85], ['hang', 8], ['status=500', 7]]);
}

function drawIntent(rng: Prng, label: string, key: string): EntryIntentPlan {
  const primary = primaryBehaviour(rng);
  // The backup matters only when the primary did not answer.
  const backup = primary ? backupBehaviour(rng) : undefined;
  return {
    label,
    protocol: rng.chance(0.5) ? 'openai' : 'anthropic',
    alias: rng.chance(0.6) ? ENTRY_ALIASES.strict : ENTRY_ALIASES.hedged,
    key,
    text: rng.pick(TEXTS),
    directives: [...(primary ? [sim('sim-primary', primary)] : []), ...(backup ? [sim('sim-backup', backup)] : [])],
    burst: rng.weighted<number>([[1, 50], [2, 30], [rng.int(3, 5), 20]]),
    stream: rng.chance(0.3),
    cuts: rng.weighted<number>([[0, 45], [1, 35], [2, 20]]),
    startMs: rng.int(0, 800),
    conflict: rng.chance(0.15),
  };
}

function drawFault(rng: Prng): EntriesProcessFault {
  const kind = rng.weighted<EntriesProcessFault['kind']>([['none', 50], ['kill-api', 25], ['kill-worker', 25]]);
  if (kind === 'none') return { kind };
  return { kind, atMs: rng.int(200, 2_500), restartAfterMs: rng.int(200, 1_500) };
}

/**
 * Draws the whole plan of one entries trial. Same run seed and trial number, same plan.
 * @param runTag distinguishes the keys of repeated runs (--repeat); it changes no draw.
 */
export function drawEntriesPlan(runSeed: number, trial: number, runTag: string): EntriesPlan {
  // Its own stream, apart from the other rounds' draws for the same trial number.
  const rng = createPrng(trialSeed(runSeed ^ 0x656e7472, trial));
  const count = rng.int(2, 5);
  const name = `en${runTag}-${runSeed >>> 0}-${trial}`;
  const intents = Array.from({ length: count }, (_, i) => drawIntent(rng, `i${i}`, `${name}-i${i}`));
  return { runSeed, trial, tag: runTag, principal: name, intents, fault: drawFault(rng) };
}

/** The rows of the report a plan counts in. */
export function entriesFaultKinds(plan: EntriesPlan): string[] {
  const kinds = new Set<string>();
  for (const intent of plan.intents) {
    kinds.add(`entry:${intent.protocol}${intent.stream ? ' stream' : ''}`);
    for (const directive of intent.directives) {
      const [, provider, behaviour] = /^@sim\(([^:]+):([^)]+)\)$/.exec(directive) ?? [];
      if (!provider || !behaviour) continue;
      kinds.add(`${provider.replace('sim-', '')}:${behaviour.startsWith('status=') ? behaviour.replace(/,.*$/, '') : behaviour.replace(/=.*$/, '')}`);
    }
    if (intent.burst > 1) kinds.add('sdk-storm');
    if (intent.cuts > 0) kinds.add('answer-cut');
    if (intent.conflict) kinds.add('conflict');
  }
  if (plan.fault.kind !== 'none') kinds.add(plan.fault.kind);
  return [...kinds].sort();
}

/** A trial that kills a process changes what every other trial sees: it runs alone. */
export function entriesRunsAlone(plan: EntriesPlan): boolean {
  return plan.fault.kind !== 'none';
}
