import type { OperationDefinition } from '../operations/operation';
import { type ContractKey, latestVerification, type ProviderStanding, providerStanding } from '../ledger/contracts';
import type { Queryable } from '../ledger/queryable';
import type { RouteStep } from '../temporal/contract';
import { templateHash } from './prompt';

export interface GateSettings {
  /** A passing verification older than this is stale. */
  maxAgeMs: number;
  /** Runtime demotion: over the last `window` ended attempts, at least `minSamples`, a violation share of `threshold` or more. */
  demotion: { window: number; minSamples: number; threshold: number };
}

export type IneligibleReason = 'unverified' | 'failed_verification' | 'stale' | 'other_template' | 'demoted';

export type Eligibility = { eligible: true; detail: string } | { eligible: false; reason: IneligibleReason; detail: string };

/** The contract key a route step of `operation` is verified and recorded under. */
export function contractKeyOf(operation: Pick<OperationDefinition, 'name' | 'schemaVersion' | 'prompt'>, step: RouteStep): ContractKey {
  return { operation: operation.name, schemaVersion: operation.schemaVersion, templateHash: templateHash(operation), provider: step.provider, model: step.model };
}

/**
 * Whether a route step may take an attempt (invariant 6). The primary is held
 * to run-time validation only, unless its run-time violations demoted it or
 * its current verification failed (it comes back once verified again); a
 * fallback needs a passing verification for the operation's current schema
 * version and prompt-template hash, younger than the configured age. A demoted
 * provider comes back only with a verification newer than its last violation.
 * A verification made against another base URL than `endpoint` is stale.
 */
export async function eligibility(
  db: Queryable,
  operation: Pick<OperationDefinition, 'name' | 'schemaVersion' | 'prompt'>,
  step: RouteStep,
  role: 'primary' | 'fallback',
  settings: GateSettings,
  now: Date = new Date(),
  /** The provider's base URL now; a verification made against another one is stale. */
  endpoint?: string,
  /** The step's standing, when the caller read it already (for exactly this key: see contractKeyOf), over the same window. */
  read?: ProviderStanding,
): Promise<Eligibility> {
  const key = contractKeyOf(operation, step);
  // The run-time record and the current verification, in one read.
  const { runtime, current } = read ?? (await providerStanding(db, key, settings.demotion.window));
  const rate = runtime.ended > 0 ? runtime.violations / runtime.ended : 0;
  const demoted = runtime.ended >= settings.demotion.minSamples && rate >= settings.demotion.threshold;
  // A primary needs no verification (it is held to run-time validation), but one whose current verification
  // failed is evidence against it: it takes no attempt until verified again, as a demoted one.
  if (role === 'primary' && !demoted) {
    if (current && !current.passed && !fromOtherEndpoint(current.evidence, endpoint)) {
      return { eligible: false, reason: 'failed_verification', detail: `its verification of ${current.verifiedAt.toISOString()} failed; a primary takes attempts again once verified` };
    }
    return { eligible: true, detail: 'primary: held to run-time validation' };
  }
  if (demoted) {
    const reverified = current?.passed && runtime.lastViolationAt && current.verifiedAt > runtime.lastViolationAt;
    if (!reverified) {
      return {
        eligible: false,
        reason: 'demoted',
        detail: `${runtime.violations} of its last ${runtime.ended} answers broke the contract; demoted until verified again`,
      };
    }
  }
  if (role === 'primary') return { eligible: true, detail: 'primary: held to run-time validation' };
  if (!current) {
    const latest = await latestVerification(db, key);
    if (latest) {
      return {
        eligible: false,
        reason: 'other_template',
        detail: `verified for schema v${latest.schemaVersion} / template ${latest.templateHash.slice(0, 19)}…, not the current v${key.schemaVersion} / ${key.templateHash.slice(0, 19)}…`,
      };
    }
    return { eligible: false, reason: 'unverified', detail: `no verification of ${step.provider}/${step.model} for ${operation.name}` };
  }
  if (!current.passed) return { eligible: false, reason: 'failed_verification', detail: `its verification of ${current.verifiedAt.toISOString()} failed` };
  const ageMs = now.getTime() - current.verifiedAt.getTime();
  if (ageMs > settings.maxAgeMs) {
    return { eligible: false, reason: 'stale', detail: `verified ${Math.round(ageMs / 3_600_000)} h ago; the limit is ${Math.round(settings.maxAgeMs / 3_600_000)} h` };
  }
  const verifiedAgainst = verifiedEndpoint(current.evidence);
  if (endpoint !== undefined && verifiedAgainst !== undefined && verifiedAgainst !== endpoint) {
    return { eligible: false, reason: 'stale', detail: `verified against ${verifiedAgainst}; the provider now points at ${endpoint}` };
  }
  return { eligible: true, detail: `verified at ${current.verifiedAt.toISOString()}` };
}

/** A verification made against another base URL than the provider's now: it says nothing of this one. */
function fromOtherEndpoint(evidence: Record<string, unknown>, endpoint: string | undefined): boolean {
  const verifiedAgainst = verifiedEndpoint(evidence);
  return endpoint !== undefined && verifiedAgainst !== undefined && verifiedAgainst !== endpoint;
}

/** The base URL a verification was made against (verifications made before it was recorded have none). */
function verifiedEndpoint(evidence: Record<string, unknown>): string | undefined {
  const config = evidence.config as { baseUrl?: unknown } | undefined;
  return typeof config?.baseUrl === 'string' ? config.baseUrl : undefined;
}
