import type { Queryable } from './queryable';

/** An operator's console session, as the console checks it at each request. */
export interface ConsoleSession {
  operator: string;
  keySha256: Buffer;
  /** The database key that opened it, or null for an environment key. */
  apiKeyId: string | null;
  /** False once that database key is revoked (or gone). */
  apiKeyLive: boolean;
  csrfToken: string;
  expiresAt: Date;
}

interface SessionRow {
  operator: string;
  key_sha256: Buffer;
  api_key_id: string | null;
  api_key_live: boolean;
  csrf_token: string;
  expires_at: Date;
}

/** Opens a session; expired sessions are removed on the way, so the table holds live ones and a few stragglers. */
export async function openConsoleSession(
  db: Queryable,
  session: { tokenSha256: Buffer; operator: string; keySha256: Buffer; apiKeyId: string | null; csrfToken: string; lifetimeMs: number },
): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE expires_at < now()');
  await db.query(
    `INSERT INTO console_sessions (token_sha256, operator, key_sha256, api_key_id, csrf_token, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
    [session.tokenSha256, session.operator, session.keySha256, session.apiKeyId, session.csrfToken, session.lifetimeMs],
  );
}

/** The unexpired session of a token's digest, and whether its database key still stands (two primary-key reads), or undefined. */
export async function findConsoleSession(db: Queryable, tokenSha256: Buffer): Promise<ConsoleSession | undefined> {
  const { rows } = await db.query<SessionRow>(
    `SELECT s.operator, s.key_sha256, s.api_key_id, s.csrf_token, s.expires_at,
            (s.api_key_id IS NULL OR EXISTS (SELECT 1 FROM api_keys k WHERE k.id = s.api_key_id AND k.revoked_at IS NULL)) AS api_key_live
       FROM console_sessions s
      WHERE s.token_sha256 = $1 AND s.expires_at > now()`,
    [tokenSha256],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { operator: row.operator, keySha256: row.key_sha256, apiKeyId: row.api_key_id, apiKeyLive: row.api_key_live, csrfToken: row.csrf_token, expiresAt: row.expires_at };
}

/** Ends a session (signing out). */
export async function closeConsoleSession(db: Queryable, tokenSha256: Buffer): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE token_sha256 = $1', [tokenSha256]);
}
