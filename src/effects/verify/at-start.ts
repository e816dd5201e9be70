import type { Queryable } from '../../ledger/queryable';
import type { EffectAdapter } from '../types';
import { effectTrust } from './trust';
import { verifyEffects } from './verify-effects';

/**
 * The effects' drills at start (ONCEFLOW_EFFECTS_VERIFY_AT_START), as
 * providers are verified: every effect that makes a claim is drilled, and
 * the start says which effects recovery cannot settle or repeat by itself.
 * An unverified effect still performs its first send: nothing is assumed for
 * a first send. A downstream that cannot be drilled is said so; it does not
 * stop the start.
 */
export async function verifyEffectsAtStart(db: Queryable, adapters: ReadonlyMap<string, EffectAdapter>, maxAgeMs: number, log: (line: string) => void): Promise<void> {
  try {
    const verified = await verifyEffects(db, adapters);
    if (verified.length) log(`effects verified: ${verified.map((v) => `${v.effect} ${v.passed ? 'pass' : 'FAIL'}`).join(', ')}`);
  } catch (err) {
    log(`WARNING: the effects could not be verified: ${(err as Error).message}`);
  }
  const manual: string[] = [];
  for (const adapter of adapters.values()) {
    if (!adapter.lookup && !adapter.repeatSafe) continue;
    const trust = await effectTrust(db, adapter, maxAgeMs);
    const missing = [...(adapter.lookup && !trust.lookup.current ? [`lookup: ${trust.lookup.why}`] : []), ...(adapter.repeatSafe && !trust.dedupe.current ? [`deduplication: ${trust.dedupe.why}`] : [])];
    if (missing.length) manual.push(`${adapter.name} (${missing.join('; ')})`);
  }
  if (manual.length) log(`WARNING: recovery of these effects goes to review, not by itself (onceflow effects verify): ${manual.join(', ')}`);
}
