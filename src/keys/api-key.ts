import { createHash, randomBytes, randomInt } from 'node:crypto';

/**
 * The shape of a database API key: `of_<id>_<secret>`, both parts base62 (no
 * `_` or `-`, so the key splits unambiguously and survives any shell). The id
 * (12 characters) is public: lists and audit records show it, and it finds
 * the key's row. The secret (43 characters) carries 256 random bits and is
 * stored only as its SHA-256.
 */
export const KeyRole = {
  tenant: 'tenant',
  operator: 'operator',
} as const;
export type KeyRole = (typeof KeyRole)[keyof typeof KeyRole];

export const KEY_PREFIX = 'of_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_ID_LENGTH = 12;
const SECRET_LENGTH = 43; // 62^43 > 2^256
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}([0-9A-Za-z]{${KEY_ID_LENGTH}})_([0-9A-Za-z]{${SECRET_LENGTH}})$`);
export const KEY_ID_PATTERN = new RegExp(`^[0-9A-Za-z]{${KEY_ID_LENGTH}}$`);

export interface ParsedKey {
  id: string;
  secret: string;
}

export interface NewKey extends ParsedKey {
  /** The whole key, shown once to whoever created it. */
  key: string;
  secretSha256: Buffer;
}

/** A key's secret as stored. */
export const secretSha256 = (secret: string): Buffer => createHash('sha256').update(secret, 'utf8').digest();

function base62OfBytes(bytes: Buffer, length: number): string {
  let value = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (value > 0n) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out.padStart(length, '0');
}

/** A new key: a random id and a 256-bit secret. */
export function generateKey(): NewKey {
  const id = Array.from({ length: KEY_ID_LENGTH }, () => BASE62[randomInt(62)]).join('');
  const secret = base62OfBytes(randomBytes(32), SECRET_LENGTH);
  return { id, secret, key: `${KEY_PREFIX}${id}_${secret}`, secretSha256: secretSha256(secret) };
}

/** The id and secret of a database key, or undefined for anything else (an environment key, a typo). */
export function parseKey(key: string): ParsedKey | undefined {
  const match = KEY_PATTERN.exec(key);
  return match ? { id: match[1]!, secret: match[2]! } : undefined;
}
