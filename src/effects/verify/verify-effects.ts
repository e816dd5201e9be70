import { recordEffectVerification, type EffectVerification } from '../../ledger/effect-verifications';
import type { Queryable } from '../../ledger/queryable';
import type { EffectAdapter } from '../types';
import { runDrills } from './drills';

/** `--effect` named an effect this deployment does not have, or one with no claim to check. */
export class EffectNotVerifiableError extends Error {
  override name = 'EffectNotVerifiableError';
}

/**
 * Runs the drills of every effect that makes a claim (or of the one named),
 * and records each verification, passed or not.
 * @returns the verifications recorded, in the registry's order.
 * @throws EffectNotVerifiableError when `effect` names none that can be verified.
 */
export async function verifyEffects(db: Queryable, adapters: ReadonlyMap<string, EffectAdapter>, opts: { effect?: string } = {}): Promise<EffectVerification[]> {
  const chosen = [...adapters.values()].filter((adapter) => adapter.verifiable && (opts.effect === undefined || adapter.name === opts.effect));
  if (opts.effect !== undefined && chosen.length === 0) {
    throw new EffectNotVerifiableError(adapters.has(opts.effect) ? `effect ${opts.effect} makes no claim to verify (no lookup, no deduplication)` : `no effect ${opts.effect} in this deployment`);
  }
  const recorded: EffectVerification[] = [];
  for (const adapter of chosen) recorded.push(await recordEffectVerification(db, await runDrills(adapter)));
  return recorded;
}
