import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { commitAttemptResult, markAttemptRunning, openAttempt } from '../../src/ledger/attempts';
import { admitJob } from '../../src/ledger/jobs';

/**
 * A support.reply job whose AI step has a winner answering `reply`: what
 * effects run after. Its ticket is new, so the simulator's deliveries for it
 * are this job's alone.
 */
export async function jobWithWinner(db: Pool, reply: string): Promise<{ jobId: string; ticketId: string }> {
  const ticketId = `T-${randomUUID().slice(0, 8)}`;
  const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
  const input = { ticketId, customerMessage: 'hi', channel: 'email' };
  const { job } = await admitJob(db, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest('support.reply', 1, input), workflowId: jobWorkflowId(scope) });
  const opened = await openAttempt(db, { jobId: job.id, provider: 'sim-primary', model: 'sim-small' });
  if (opened.kind !== 'opened') throw new Error('no attempt');
  await markAttemptRunning(db, opened.attempt.id);
  await commitAttemptResult(db, opened.attempt.id, { reply, escalate: false }, { terminal: false });
  return { jobId: job.id, ticketId };
}
