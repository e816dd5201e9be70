/**
 * An entries trial's plan: plain data drawn before anything runs (draw.ts),
 * so a failure can print it and `--round entries --trial T` reruns it.
 */

export type Protocol = 'openai' | 'anthropic';

/** The round's aliases (chaos/entries/operations.yaml). */
export const ENTRY_ALIASES = { strict: 'ch.strict', hedged: 'ch.hedged' } as const;
export type EntryAlias = (typeof ENTRY_ALIASES)[keyof typeof ENTRY_ALIASES];

/** One intent of an app: one key, sent through one entry by one or more SDK clients at once. */
export interface EntryIntentPlan {
  label: string;
  protocol: Protocol;
  alias: EntryAlias;
  key: string;
  /** The user's message, and the `@sim(...)` directives of the providers in it. */
  text: string;
  directives: string[];
  /** SDK clients sending the intent at once (the user's double click, a second tab). */
  burst: number;
  /** Read through the SDK's stream helper instead of the plain call. */
  stream: boolean;
  /** The first this many answers to the intent are cut on the way back, after Onceflow sent them. */
  cuts: number;
  /** When to send, after the trial began. */
  startMs: number;
  /** Once answered, the same key with another message: the SDK must raise its conflict error. */
  conflict: boolean;
}

/** A process fault, struck this long after the trial began; the process starts again after restartAfterMs. */
export type EntriesProcessFault = { kind: 'none' } | { kind: 'kill-api' | 'kill-worker'; atMs: number; restartAfterMs: number };

export interface EntriesPlan {
  runSeed: number;
  trial: number;
  /** Tag of a repeated run (--repeat): changes keys, never draws. */
  tag: string;
  /** A principal of the trial's own: its jobs are this trial's alone. */
  principal: string;
  intents: EntryIntentPlan[];
  fault: EntriesProcessFault;
}

/** The message an intent sends: its text and its directives. */
export function messageOf(intent: Pick<EntryIntentPlan, 'text' | 'directives'>): string {
  return [intent.text, ...intent.directives].join(' ');
}

/** An intent whose providers were told nothing: its one attempt must be the only one, whatever its clients did. */
export function isClean(intent: Pick<EntryIntentPlan, 'directives'>): boolean {
  return intent.directives.length === 0;
}
