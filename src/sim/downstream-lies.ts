/**
 * The ways the simulated downstream can break the claims a real downstream
 * makes about itself (docs/simulators.md, "A downstream that lies"), so the
 * drills that check `deduplicates: true` and a lookup by key can be shown to
 * catch each one. One lie per downstream, chosen at start; without one it is
 * honest.
 */

/** A claim the downstream breaks. */
export const DownstreamLie = {
  /** A repeated key is answered 200 as if deduplicated, yet recorded as a second message with a new messageId. */
  dedupeRecordsTwice: 'dedupe-records-twice',
  /** The lookup by key always answers 404. */
  lookupNeverFound: 'lookup-never-found',
  /** The lookup answers 200 for any key: the true receipt if it was sent, else a made-up one. */
  lookupFoundForAnything: 'lookup-found-for-anything',
  /** The key is stored cut to its first STORED_KEY_LENGTH characters; the lookup compares the key as given. */
  lookupTransformedKey: 'lookup-transformed-key',
  /** A delivery shows in the lookup only lookupLagMs after it was recorded. */
  lookupSlowToShow: 'lookup-slow-to-show',
} as const;
export type DownstreamLie = (typeof DownstreamLie)[keyof typeof DownstreamLie];

/** Every lie, in the order the docs list them. */
export const DOWNSTREAM_LIES: readonly DownstreamLie[] = Object.values(DownstreamLie);

/**
 * How much of a key `lookup-transformed-key` keeps: a column too short that
 * truncates silently. Onceflow's keys (`onceflow-<job id>-<effect>`, a drill's
 * `onceflow-verify-<effect>-<run>-K1`) are all longer, and keys that share
 * these characters collide.
 */
export const STORED_KEY_LENGTH = 24;

/** `lookup-slow-to-show`'s lag unless told: longer than a drill's look right after its send. */
export const DEFAULT_LOOKUP_LAG_MS = 3_000;

export function isDownstreamLie(value: unknown): value is DownstreamLie {
  return typeof value === 'string' && (DOWNSTREAM_LIES as readonly string[]).includes(value);
}

/**
 * Reads `<lie>` or `lookup-slow-to-show=<ms>` (the directives' `keyword=value`
 * form), as SIM_DOWNSTREAM_LIE gives it.
 * @throws Error naming `what` and every lie when the value is no lie, or a lag
 * is given to another lie or is not a whole number of milliseconds.
 */
export function parseDownstreamLie(source: string, what: string): { lie: DownstreamLie; lookupLagMs?: number } {
  const invalid = () => new Error(`${what}=${source} is not a lie the downstream tells (${DOWNSTREAM_LIES.join(', ')}; lookup-slow-to-show=<ms> for a lag)`);
  const [name, lag, ...rest] = source.trim().split('=');
  if (!isDownstreamLie(name) || rest.length > 0) throw invalid();
  if (lag === undefined) return { lie: name };
  if (name !== DownstreamLie.lookupSlowToShow || !/^\d+$/.test(lag)) throw invalid();
  return { lie: name, lookupLagMs: Number(lag) };
}

/** The lie as `parseDownstreamLie` reads it back, for logs. */
export function describeDownstreamLie(lie: DownstreamLie, lookupLagMs: number): string {
  return lie === DownstreamLie.lookupSlowToShow ? `${lie}=${lookupLagMs}` : lie;
}
