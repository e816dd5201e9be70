import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * The request digest: SHA-256 over the RFC 8785 (JCS) canonical JSON of
 * `{operation, schemaVersion, input}`. Key order and whitespace do not change
 * it; any value does (invariant 2).
 * @throws TypeError when the input holds something JSON cannot say (NaN, Infinity).
 */
export function requestDigest(operation: string, schemaVersion: number, input: unknown): string {
  const canonical = canonicalize({ operation, schemaVersion, input });
  if (canonical === undefined) throw new TypeError('input cannot be canonicalized');
  return `sha256:${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
}
