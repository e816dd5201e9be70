/**
 * A principal of the trial's own, with a database API key made the way
 * `onceflow keys create` makes one: its usage, its budget and its jobs are
 * then the trial's alone, whatever else runs at the same time.
 */
import type { Pool } from 'pg';
import { KeyRole } from '../../src/keys/api-key';
import { createApiKey } from '../../src/ledger/api-keys';

/** @returns the new key (`of_…`), for the Authorization header. */
export async function createTrialPrincipal(db: Pool, principal: string): Promise<string> {
  const { key } = await createApiKey(db, { principal, role: KeyRole.tenant });
  return key;
}
