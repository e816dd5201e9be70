import { timingSafeEqual } from 'node:crypto';
import { OPERATOR_PRINCIPAL } from '../config';
import { KeyRole, secretSha256, type ParsedKey } from '../keys/api-key';
import { findApiKey, touchApiKey, type StoredApiKey } from '../ledger/api-keys';
import type { Queryable } from '../ledger/queryable';
import type { Principal } from './auth';

/** last_used_at is written at most this often per key. */
export const LAST_USED_RESOLUTION_MS = 60_000;

// Compared against when the id names no key, so an unknown id costs what a wrong secret does.
const NO_KEY = Buffer.alloc(32);

/**
 * Authenticates database keys (`of_<id>_<secret>`): one primary-key read per
 * request and nothing cached, so a revoked key is refused from the request
 * after its revocation on, in every API process.
 */
export class DatabaseKeys {
  /** When this process last wrote last_used_at per key id. */
  private readonly touchedAtMs = new Map<string, number>();

  constructor(
    private readonly db: Queryable,
    private readonly onTouchFailed: (err: unknown) => void,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /**
   * The principal of a key, or undefined when the id is unknown, the secret
   * wrong or the key revoked.
   * @throws what the database throws (unreachable: the request is a 503, not a 401).
   */
  async authenticate(key: ParsedKey): Promise<Principal | undefined> {
    const stored = await findApiKey(this.db, key.id);
    const secretMatches = timingSafeEqual(stored?.secretSha256 ?? NO_KEY, secretSha256(key.secret));
    if (!stored || !secretMatches || stored.revokedAt !== null) return undefined;
    this.recordUse(stored);
    return principalOf(stored);
  }

  /** Writes last_used_at, at most once a minute per key, without making the request wait for it. */
  private recordUse(stored: StoredApiKey): void {
    const nowMs = this.nowMs();
    if (stored.lastUsedAt && nowMs - stored.lastUsedAt.getTime() < LAST_USED_RESOLUTION_MS) return;
    const touchedAtMs = this.touchedAtMs.get(stored.id);
    if (touchedAtMs !== undefined && nowMs - touchedAtMs < LAST_USED_RESOLUTION_MS) return;
    this.touchedAtMs.set(stored.id, nowMs);
    touchApiKey(this.db, stored.id).catch((err: unknown) => {
      this.touchedAtMs.delete(stored.id);
      this.onTouchFailed(err);
    });
  }
}

/** A tenant key acts as its principal; an operator key acts as the operator, and audit records name the person and the key. */
function principalOf(stored: StoredApiKey): Principal {
  if (stored.role === KeyRole.operator) return { id: OPERATOR_PRINCIPAL, operator: true, label: `operator:${stored.principal}/${stored.id}` };
  return { id: stored.principal, operator: false, label: stored.principal };
}
