import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { checkout, WARM_CONNECTIONS } from '../db/pool';
import { commitAndClaim, getAttempt, listAttempts, markAttemptRunning, openAttemptLocked, openFirstAttempt } from '../ledger/attempts';
import { jobAndStanding, providerStanding } from '../ledger/contracts';
import { beginEffectTry, settleEffectAndJob } from '../ledger/effects';
import { loadJobDetailsById, loadJobDetailsByScope } from '../ledger/job-details';
import { lockJobRow, peekJobRow } from '../ledger/job-row';
import { admitJob, getJob } from '../ledger/jobs';
import { readJobEnded } from '../ledger/job-ended';
import { routeStepsOf } from '../ledger/route-versions';

/** The operation, provider, model and effect a rehearsal names: none of them is configured anywhere. */
const REHEARSAL = 'onceflow.rehearsal';

/**
 * Takes one database connection through the statements of a job's happy
 * path, as the API and the worker run them (admission and the waiter's
 * reads; the provider's standing (run-time record and verification); the attempt opened, sent and won
 * with its usage and the effect's claim; the effect's try and settlement;
 * the terminal write with its settlement; the outcome read), on a job of its
 * own, in a transaction that is rolled back. What stays is what the first
 * real job would otherwise pay on this connection: each statement prepared
 * (parsed and planned once), the catalog entries of the tables, indexes and
 * triggers it touches loaded, the PL/pgSQL functions (the details document
 * among them) compiled. Nothing stays written, and
 * nobody sees the job: its rows and events, and the notification of its
 * terminal write, go with the rollback (a sequence may skip a number).
 * @throws what the database throws; the transaction is rolled back all the same.
 */
export async function rehearseJob(client: PoolClient): Promise<void> {
  const scope = { principalId: REHEARSAL, operation: REHEARSAL, idempotencyKey: randomUUID() };
  await client.query('BEGIN');
  try {
    await loadJobDetailsByScope(client, scope);
    const { job } = await admitJob(client, { ...scope, requestDigest: '0'.repeat(64), schemaVersion: 1, input: {}, workflowId: `${REHEARSAL}-${scope.idempotencyKey}` });
    await getJob(client, job.id);
    // A new job's first attempt, the short way (openFirstAttempt, opened and marked sent), then the long way's statements on the same job.
    const rehearsed = { operation: REHEARSAL, provider: REHEARSAL, model: REHEARSAL, schemaVersion: 1, templateHash: REHEARSAL };
    if (!(await jobAndStanding(client, job.id, rehearsed, 1)).job) throw new Error('the rehearsal job was not read with a standing');
    await peekJobRow(client, job.id, { withInput: true });
    await routeStepsOf(client, REHEARSAL, REHEARSAL);
    await providerStanding(client, rehearsed, 1);
    const first = await openFirstAttempt(client, { jobId: job.id, attemptId: randomUUID(), workflowId: `${REHEARSAL}-${scope.idempotencyKey}`, routeVersion: null, provider: REHEARSAL, model: REHEARSAL, minAttemptMs: 0, send: true });
    if (!first) throw new Error("the rehearsal job's first attempt was not opened");
    await lockJobRow(client, job.id, { withInput: true });
    const known = await listAttempts(client, job.id);
    // The long way's opening, refused by the live attempt the short way opened.
    const opened = await openAttemptLocked(client, { jobId: job.id, attemptId: randomUUID(), provider: REHEARSAL, model: REHEARSAL, operation: REHEARSAL, known });
    if (opened.kind !== 'live' || opened.attempt.id !== first.attempt.id) throw new Error(`the rehearsal job's second opening was not refused by its live attempt (${opened.kind})`);
    const attempt = opened.attempt;
    // The long way's mark, refused: the attempt is running already.
    if (await markAttemptRunning(client, attempt.id)) throw new Error("the rehearsal job's attempt was marked sent twice");
    const output = { rehearsal: true };
    const won = await commitAndClaim(client, attempt, output, {
      terminal: false,
      claim: { name: REHEARSAL, owner: REHEARSAL, leaseMs: 60_000 },
      usage: { inputTokens: 1, outputTokens: 1, model: REHEARSAL, latencyMs: 0 },
    });
    if (!won.claimed) throw new Error('the rehearsal job was not won with its effect claimed');
    await getAttempt(client, attempt.id);
    await beginEffectTry(client, won.claimed.id, REHEARSAL);
    // The job's settlement is written at COMMIT (a deferred trigger); here, with the terminal write.
    await client.query('SET CONSTRAINTS jobs_settle_on_terminal IMMEDIATE');
    const { ended } = await settleEffectAndJob(client, { effectId: won.claimed.id, owner: REHEARSAL, status: 'succeeded', receipt: {} }, { result: output });
    if (ended?.status !== 'succeeded') throw new Error('the rehearsal job did not end');
    await readJobEnded(client, job.id);
    await loadJobDetailsById(client, job.id);
  } finally {
    await client.query('ROLLBACK');
  }
}

/**
 * How often each warmed connection rehearses a job: PostgreSQL plans each of
 * a prepared statement's first five executions on a connection anew, and
 * builds the plan it keeps at the sixth; the seventh, a real job's, plans
 * nothing. The repetitions also take the processes' own code of the job's
 * way (the driver, the ledger's functions) past its first, slowest runs.
 */
export const REHEARSALS = 6;

/**
 * Takes `count` of the pool's connections (by default WARM_CONNECTIONS, which
 * the pool keeps open while idle; never more than the pool holds) through
 * rehearseJob REHEARSALS times each, at once, and gives each back only once
 * its own rehearsals have ended: a connection whose rehearsal failed is
 * closed, never handed on inside its transaction.
 * @throws the first failure (connecting, or a rehearsal), once every connection is back.
 */
export async function warmConnections(db: Pool, count = WARM_CONNECTIONS): Promise<void> {
  const rehearsals = await Promise.allSettled(
    Array.from({ length: Math.min(count, db.options.max ?? count) }, async () => {
      const { client, release } = await checkout(db);
      try {
        for (let rehearsal = 0; rehearsal < REHEARSALS; rehearsal++) await rehearseJob(client);
      } catch (err) {
        release(err as Error);
        throw err;
      }
      release();
    }),
  );
  const failed = rehearsals.find((rehearsal) => rehearsal.status === 'rejected');
  if (failed) throw failed.reason;
}
