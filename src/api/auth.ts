import { createHash, timingSafeEqual } from 'node:crypto';
import { OPERATOR_PRINCIPAL, PROBE_PRINCIPAL, type ApiKeys } from '../config';
import type { FastifyRequest } from 'fastify';
import { parseKey } from '../keys/api-key';
import type { AuthThrottle } from './auth-throttle';
import type { DatabaseKeys } from './database-keys';
import { refuseDuplicateHeader } from './edge-guards';
import { ProblemError, ProblemType } from './problems';

export interface Principal {
  id: string;
  operator: boolean;
  /** Who acted, for audit records (resolutions, cancellations): never the key itself. */
  label: string;
}


interface KeyEntry {
  digest: Buffer;
  principal: Principal;
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * Matches bearer keys: the environment's keys in constant time (every
 * configured key is compared, digests of equal length, so timing says nothing
 * about which one matched), then a key shaped `of_<id>_<secret>` against the
 * database (database-keys.ts).
 */
export class KeyRing {
  private readonly entries: KeyEntry[];

  /**
   * @param probeKey the process's own key for the probe principal (the entries' verification): made at start, held in memory only, never stored.
   */
  constructor(keys: ApiKeys, private readonly databaseKeys?: DatabaseKeys, probeKey?: string) {
    this.entries = [
      ...[...keys.principals].map(([key, id]) => ({ digest: sha256(key), principal: { id, operator: false, label: id } })),
      ...(probeKey ? [{ digest: sha256(probeKey), principal: { id: PROBE_PRINCIPAL, operator: false, label: PROBE_PRINCIPAL } }] : []),
      // An operator is named by a short digest of its key, so audit records tell operators apart.
      ...keys.operatorKeys.map((key) => ({
        digest: sha256(key),
        principal: { id: OPERATOR_PRINCIPAL, operator: true, label: `operator:${sha256(key).toString('hex').slice(0, 8)}` },
      })),
    ];
  }

  /**
   * The principal of an Authorization header: an environment key's at once
   * (no promise on the hot path), a database key's once the database answers.
   * @throws ProblemError 401 when the header is missing, malformed or names no key (or a revoked one), thrown or as the rejection.
   * @throws what the database throws when it cannot be asked (as the rejection).
   */
  authenticate(header: string | undefined): Principal | Promise<Principal> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match?.[1]) throw unauthorized('send Authorization: Bearer <api key>');
    const digest = sha256(match[1]);
    let found: Principal | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, digest) && !found) found = entry.principal;
    }
    return found ?? this.authenticateStored(match[1]);
  }

  /**
   * Whether an environment operator key has this SHA-256: a console session
   * opened with such a key lasts only while the key is still configured.
   * Every entry is compared, as in authenticate.
   */
  isOperatorKeyDigest(digest: Buffer): boolean {
    let found = false;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, digest) && entry.principal.operator) found = true;
    }
    return found;
  }

  private async authenticateStored(key: string): Promise<Principal> {
    const databaseKey = parseKey(key);
    const found = databaseKey && this.databaseKeys ? await this.databaseKeys.authenticate(databaseKey) : undefined;
    if (!found) throw unauthorized('the API key is not valid');
    return found;
  }
}

function unauthorized(detail: string): ProblemError {
  return new ProblemError(401, ProblemType.unauthorized, 'Unauthorized', detail, { headers: { 'www-authenticate': 'Bearer' } });
}

/**
 * The principal of a request to /v1: an address refused by the throttle is
 * refused before its key is compared (auth-throttle.ts says why), a second
 * Authorization header is refused rather than ignored, and a missing or
 * wrong key (a revoked one included) counts against the address; a database
 * that cannot be asked does not.
 * @throws ProblemError 429 (throttled), 400 (two Authorization headers), 401; what the database throws (a database key's answer comes as a promise).
 */
export function authenticateRequest(request: FastifyRequest, keyRing: KeyRing, throttle: AuthThrottle): Principal | Promise<Principal> {
  const refusedForMs = throttle.refusedForMs(request.ip);
  if (refusedForMs > 0) {
    const seconds = String(Math.ceil(refusedForMs / 1000));
    throw new ProblemError(429, ProblemType.rateLimited, 'Too many failed authentications', `too many requests from this address had a missing or wrong API key; retry after ${seconds} s`, {
      headers: { 'retry-after': seconds },
    });
  }
  refuseDuplicateHeader(request, 'Authorization');
  const countFailure = (err: unknown): never => {
    if (err instanceof ProblemError && err.status === 401) throttle.fail(request.ip);
    throw err;
  };
  let principal: Principal | Promise<Principal>;
  try {
    principal = keyRing.authenticate(request.headers.authorization);
  } catch (err) {
    return countFailure(err);
  }
  return principal instanceof Promise ? principal.catch(countFailure) : principal;
}
