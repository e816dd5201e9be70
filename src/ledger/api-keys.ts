import { OPERATOR_PRINCIPAL, PROBE_PRINCIPAL } from '../config';
import { isUniqueViolation } from '../db/errors';
import { generateKey, KeyRole, type NewKey } from '../keys/api-key';
import type { Queryable } from './queryable';

/** A key as lists show it: never its secret, nor the secret's hash. */
export interface ApiKeyRecord {
  id: string;
  principal: string;
  role: KeyRole;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/** What authentication reads: the record and the stored hash. */
export interface StoredApiKey extends ApiKeyRecord {
  secretSha256: Buffer;
}

export class ApiKeyError extends Error {
  override name = 'ApiKeyError';
}

interface ApiKeyRow {
  id: string;
  principal: string;
  role: KeyRole;
  secret_sha256: Buffer;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const LIST_COLUMNS = 'id, principal, role, created_at, last_used_at, revoked_at';

const toRecord = (row: ApiKeyRow): ApiKeyRecord => ({
  id: row.id,
  principal: row.principal,
  role: row.role,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

/**
 * Creates a key for a principal. The whole key is in the answer and nowhere
 * else: only the hash of its secret is stored.
 * @throws ApiKeyError for an empty principal, or a tenant key for the reserved operator principal.
 */
export async function createApiKey(db: Queryable, opts: { principal: string; role: KeyRole }): Promise<{ key: string; record: ApiKeyRecord }> {
  const principal = opts.principal.trim();
  if (!principal) throw new ApiKeyError('a key needs a principal');
  if (opts.role === KeyRole.tenant && principal === OPERATOR_PRINCIPAL) {
    throw new ApiKeyError(`"${OPERATOR_PRINCIPAL}" is reserved for operator keys; create it with --role operator and the operator's own name`);
  }
  if (principal === PROBE_PRINCIPAL) throw new ApiKeyError(`"${PROBE_PRINCIPAL}" is reserved for the entries' verification probes`);
  for (;;) {
    const fresh: NewKey = generateKey();
    try {
      const { rows } = await db.query<ApiKeyRow>(`INSERT INTO api_keys (id, principal, role, secret_sha256) VALUES ($1, $2, $3, $4) RETURNING ${LIST_COLUMNS}`, [
        fresh.id,
        principal,
        opts.role,
        fresh.secretSha256,
      ]);
      return { key: fresh.key, record: toRecord(rows[0]!) };
    } catch (err) {
      // Two random ids met (about one in 3e21): draw again.
      if (isUniqueViolation(err, 'api_keys_pkey')) continue;
      throw err;
    }
  }
}

/** Every key, oldest first. */
export async function listApiKeys(db: Queryable): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<ApiKeyRow>(`SELECT ${LIST_COLUMNS} FROM api_keys ORDER BY created_at, id`);
  return rows.map(toRecord);
}

/**
 * Revokes a key: from this statement on it authenticates nothing.
 * @returns the key as it is now, or undefined when there is no such key; a key revoked earlier keeps its first revocation time.
 */
export async function revokeApiKey(db: Queryable, id: string): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `WITH revoked AS (UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING ${LIST_COLUMNS})
     SELECT * FROM revoked UNION ALL SELECT ${LIST_COLUMNS} FROM api_keys WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM revoked)`,
    [id],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** A key by its public id, with its stored hash (revoked keys included: the caller decides), or undefined. */
export async function findApiKey(db: Queryable, id: string): Promise<StoredApiKey | undefined> {
  const { rows } = await db.query<ApiKeyRow>(`SELECT ${LIST_COLUMNS}, secret_sha256 FROM api_keys WHERE id = $1`, [id]);
  const row = rows[0];
  return row ? { ...toRecord(row), secretSha256: row.secret_sha256 } : undefined;
}

/**
 * Records that a key was used, unless that was already recorded within the
 * last minute: many requests a minute make at most one write.
 */
export async function touchApiKey(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, [id]);
}

/** Whether any key that is not revoked exists. */
export async function hasLiveApiKey(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ live: boolean }>('SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL) AS live');
  return rows[0]!.live;
}
