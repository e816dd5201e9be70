import { canonicalJson } from './canonical-json.js';

/**
 * The request digest, as Onceflow computes it: `sha256:` and the hex SHA-256
 * of the UTF-8 of the RFC 8785 canonical JSON of `{operation, schemaVersion, input}`.
 * Same principal, operation and key with another digest is a 409.
 * @throws TypeError when the input holds something JSON cannot say, or WebCrypto is missing.
 */
export function requestDigest(operation: string, schemaVersion: number, input: unknown): Promise<string> {
  return sha256Hex(canonicalJson({ operation, schemaVersion, input }));
}

/**
 * What makes two submissions one intent on this side: the request digest
 * when the schema version is known; when it is not (the server will take its
 * newest), the same hash over `{operation, input}`, which no server digest
 * equals, so the two are never confused.
 */
export function intentDigest(operation: string, schemaVersion: number | undefined, input: unknown): Promise<string> {
  return schemaVersion === undefined ? sha256Hex(canonicalJson({ operation, input })) : requestDigest(operation, schemaVersion, input);
}

async function sha256Hex(text: string): Promise<string> {
  const subtle = globalThis.crypto?.subtle;
  // Browsers give WebCrypto to secure contexts only (https, or http://localhost and 127.0.0.1).
  if (!subtle) throw new TypeError('WebCrypto (crypto.subtle) is not available here: serve the page over https or from localhost');
  const hash = new Uint8Array(await subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return `sha256:${Array.from(hash, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}
