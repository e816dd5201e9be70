import { randomUUID } from 'node:crypto';
import type { PoolClient } from 'pg';
import { listAttempts } from './attempts';
import { listEffects } from './effects';
import { loadJobDetailsById, loadJobDetailsByScope } from './job-details';
import { admitJob, getJob } from './jobs';

/** No job has this id: ids are version-4 UUIDs (randomUUID, gen_random_uuid), and this one is version 0. */
const NO_JOB = '00000000-0000-0000-0000-000000000000';
const WARM_UP = 'onceflow-warm-up';

/**
 * Takes one connection's PostgreSQL backend through the statements that
 * admit and replay a job, so the API's first request does not pay for their
 * first use: the named lookups are parsed and planned (by scope, by id), the
 * catalog entries of the tables and indexes they touch are loaded, and the
 * admission's insert, with its created event and that event's trigger, runs
 * once in a transaction that is rolled back: no row is left.
 */
export async function warmAdmission(client: PoolClient): Promise<void> {
  await loadJobDetailsByScope(client, { principalId: WARM_UP, operation: WARM_UP, idempotencyKey: WARM_UP });
  await loadJobDetailsById(client, NO_JOB);
  await client.query('BEGIN');
  try {
    // A key of its own: two connections warmed side by side do not wait on each other's row.
    await admitJob(client, { principalId: WARM_UP, operation: WARM_UP, idempotencyKey: randomUUID(), requestDigest: '', schemaVersion: 1, input: {}, workflowId: WARM_UP });
  } finally {
    await client.query('ROLLBACK');
  }
}

/**
 * Takes one connection's backend through the reads of a running job (the
 * job, its attempts, its effects, its details), by an id no job has: their
 * tables' and indexes' catalog entries are loaded and the details function
 * compiled, for the worker's first job. Reads only.
 */
export async function warmJobReads(client: PoolClient): Promise<void> {
  await getJob(client, NO_JOB);
  await listAttempts(client, NO_JOB);
  await listEffects(client, NO_JOB);
  await loadJobDetailsById(client, NO_JOB);
}
