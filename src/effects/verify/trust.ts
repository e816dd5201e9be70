import { Drill, latestEffectVerification, latestEffectVerificationFor, standingOf, type DrillStanding } from '../../ledger/effect-verifications';
import type { Queryable } from '../../ledger/queryable';
import type { EffectAdapter } from '../types';

/** What recovery may rely on for one effect now: its lookup, and its deduplication (invariant 14). */
export interface EffectTrust {
  /** A "found" or "not found" from its lookup tells: the lookup drills hold a current pass. */
  lookup: DrillStanding;
  /** A repeat with the same key is harmless: the dedupe drill holds a current pass. */
  dedupe: DrillStanding;
}

/** The drills a lookup's answer is trusted on: found when sent, not found when not, found when the answer was lost. */
const LOOKUP_DRILLS = [Drill.lookupFound, Drill.lookupNotFound, Drill.disconnect] as const;

/**
 * What the newest verification of an effect lets recovery rely on, for the
 * declaration and host the effect has now, and no older than `maxAgeMs`.
 * An effect that makes no claim (no lookup, no deduplication) has nothing to trust.
 */
export async function effectTrust(db: Queryable, adapter: EffectAdapter, maxAgeMs: number, nowMs: number = Date.now()): Promise<EffectTrust> {
  const verifiable = adapter.verifiable;
  if (!verifiable) {
    const why = adapter.repeatSafe ? 'its deduplication cannot be checked (it has no lookup to count what it received)' : 'it makes no claim to check';
    return { lookup: { current: false, why }, dedupe: { current: false, why } };
  }
  const at = { declarationDigest: verifiable.declarationDigest, host: verifiable.host, nowMs, maxAgeMs };
  // For this declaration and host: a verification of another (another deployment's, or before a change) says nothing of this one.
  const latest = (await latestEffectVerificationFor(db, adapter.name, at)) ?? (await latestEffectVerification(db, adapter.name));
  const lookups = LOOKUP_DRILLS.map((drill) => standingOf(latest, drill, at));
  return {
    lookup: lookups.find((standing) => !standing.current) ?? lookups[0]!,
    dedupe: standingOf(latest, Drill.dedupe, at),
  };
}
