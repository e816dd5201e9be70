/**
 * A gateway trial's plan: plain data drawn before anything runs (draw.ts),
 * so a failure can print it and `--round gateway --trial T` reruns it.
 */
import type { DownstreamPlan } from './downstream';
import type { GatewayOperation } from './stack-config';

export type GatewayTrialKind = 'canary' | 'hedge' | 'storm429' | 'effect' | 'budget' | 'reopen' | 'liar';

export type SimProvider = 'sim-primary' | 'sim-backup';

/** A ticket id that tries to move the declared URL (path segments, an authority, a query): filled in at run time. */
export type HostileTicket = 'dot-dot' | 'slashes' | 'at-host' | 'query-fragment' | 'backslash';

/** One intent: a key, a body, how many identical POSTs at once, when. */
export interface IntentPlan {
  label: string;
  operation: GatewayOperation;
  key: string;
  ticketId: string;
  hostile?: HostileTicket;
  /** The message: its text and the `@sim(...)` directives of the providers. */
  text: string;
  directives: string[];
  /** Pad the message to this many characters (budget trials: many tokens a job). */
  padTo?: number;
  burst: number;
  /** When to submit: this long after the trial began, or after `afterLabel`'s job became terminal. */
  startMs: number;
  afterLabel?: string;
  /** Every POST of this intent carries Request-Deadline this long after its first POST. */
  deadlineAfterMs?: number;
  /** The same key and body as that intent (a retry after its failure: a reopen). */
  sameAs?: string;
  downstream?: DownstreamPlan;
  /** An operator resolves the first unknown attempt this long after seeing it (racing a late answer). */
  raceResolveMs?: number;
  /** The Retry-After each provider's 429 carries here, in ms (1 s when the directive names none). */
  retryAfterMs?: Partial<Record<SimProvider, number>>;
}

export type CanaryHarm = 'extra-key' | 'prose' | 'hang' | 'review';

export interface CanaryAction {
  /** After this intent was submitted, plus delayMs. */
  afterLabel: string;
  delayMs: number;
  target: 'broken' | 'healthy' | 'second';
  action: 'promote' | 'stop' | 'rollback' | 'start-second';
}

export interface CanaryPlan {
  /** The canary whose primary breaks the jobs that carry the harm. */
  broken: { operation: GatewayOperation; version: string; harm: CanaryHarm; sharePercent: number };
  /** Beside it, on the other operation, a canary that harms nothing. */
  healthy: { operation: GatewayOperation; version: string; sharePercent: number };
  /** A second canary of the healthy operation (promoted over the first, then rolled back), when the actions start it. */
  second: { version: string };
  actions: CanaryAction[];
}

export interface BudgetPlan {
  /** Prefill until the principal's spend (settled, and adjusted so far) reaches this share of the budget; late usage lands after. */
  targetShare: number;
  /** Share of prefill jobs whose primary answers late, after a hedge won: its usage comes as an adjustment. */
  lateShare: number;
  maxPrefill: number;
  /** New intents submitted at once, near the budget. */
  burst: number;
  /** Characters of a prefill message. */
  padTo: number;
}

export interface GatewayPlan {
  runSeed: number;
  trial: number;
  /** Tag of a repeated run (--repeat): changes keys, never draws. */
  tag: string;
  kind: GatewayTrialKind;
  /** A principal of the trial's own: its usage, budget and jobs are this trial's alone. */
  principal: string;
  intents: IntentPlan[];
  canary?: CanaryPlan;
  budget?: BudgetPlan;
  /** What the operator resolves a long-unknown attempt as. */
  operatorOutcome: 'failed' | 'cancelled';
  /** After the jobs end, wait for unknown siblings their provider completed (their usage comes as adjustments). */
  awaitLeftovers: boolean;
}

/** The message a plan's intent sends. */
export function messageOf(intent: Pick<IntentPlan, 'text' | 'directives' | 'padTo'>): string {
  const text = [intent.text, ...intent.directives].join(' ');
  if (!intent.padTo || text.length >= intent.padTo) return text;
  const filler = ' Here is more of what the customer wrote, word for word, to make the ticket long.';
  return `${text}${filler.repeat(Math.ceil((intent.padTo - text.length) / filler.length))}`.slice(0, intent.padTo);
}
