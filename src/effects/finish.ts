import type { PoolClient } from 'pg';
import { listEffects } from '../ledger/effects';
import { failJob, getJob, getJobOutput, settleJob } from '../ledger/jobs';
import type { RegisteredOperation } from '../operations/operation';
import type { JobEnded } from '../ledger/job-ended';

export type FinishOutcome = 'succeeded' | 'failed' | 'open';

/** What finishJobLocked did, and the job's outcome as metrics count it when its terminal write returned it. */
export interface Finished {
  outcome: FinishOutcome;
  ended?: JobEnded;
}

/** What a terminal write needs to know of each operation: its effects, and how its result is made. */
export type FinishingOperations = ReadonlyMap<string, Pick<RegisteredOperation, 'effects' | 'finalize'>>;

/** What the caller knows of a job with a winner: its operation and output, and the effect it has just settled. */
export interface KnownJob {
  operation: string;
  output: unknown;
  settled?: { name: string; status: string; receipt?: Record<string, unknown>; error?: Record<string, unknown> };
}

/**
 * The job's terminal write once its effects have settled, inside the caller's
 * transaction, which holds the job row: failed naming the effect that failed,
 * or succeeded with the output and every receipt once all of the operation's
 * effects succeeded. Otherwise (an effect still pending, in review, or not
 * yet claimed) nothing is written.
 * @returns what the job became ('open' when nothing was written), with its outcome when the terminal write returned it.
 */
export async function finishJobLocked(tx: PoolClient, jobId: string, operations: FinishingOperations, known?: KnownJob): Promise<Finished> {
  // What the caller knows of the job saves reading it; the writes below check it is open and has a winner.
  const job = known ?? (await getJob(tx, jobId));
  if (!job || ('terminalAt' in job && (job.terminalAt || !job.completedBy))) return { outcome: 'open' };
  const operation = operations.get(job.operation);
  // An operation with one effect, which the caller has just settled: the job's end is known without reading its effects.
  const only = known?.settled && operation?.effects?.length === 1 && operation.effects[0] === known.settled.name ? known.settled : undefined;
  const effects = only ? [{ ...only, error: only.error ?? null, receipt: only.receipt ?? null }] : await listEffects(tx, jobId);
  const failed = effects.find((effect) => effect.status === 'failed');
  if (failed) {
    const detail = `${failed.name} failed: ${String(failed.error?.detail ?? failed.error?.class ?? 'see the effect')}`;
    return { outcome: (await failJob(tx, jobId, { type: 'effect_failed', detail, effect: failed.name })) ? 'failed' : 'open' };
  }
  const names = operation?.effects ?? effects.map((effect) => effect.name);
  const byName = new Map(effects.map((effect) => [effect.name, effect]));
  if (!names.every((name) => byName.get(name)?.status === 'succeeded')) return { outcome: 'open' };
  const output = known ? known.output : await getJobOutput(tx, jobId);
  const receipts = Object.fromEntries(names.map((name) => [name, byName.get(name)?.receipt ?? {}]));
  const ended = await settleJob(tx, jobId, resultOf(operation, output, receipts));
  return ended ? { outcome: 'succeeded', ended } : { outcome: 'open' };
}

/** A job's result: what its operation's finalize makes of the output and the receipts, or the output itself. */
function resultOf(operation: Pick<RegisteredOperation, 'finalize'> | undefined, output: unknown, receipts: Record<string, Record<string, unknown>>): unknown {
  return operation?.finalize ? operation.finalize(output as never, receipts) : output;
}

/**
 * The result a job ends with when the effect its caller has just settled is
 * its operation's only one and succeeded: known without reading the ledger,
 * so the settlement and the job's terminal write are one call
 * (settleEffectAndJob). Undefined otherwise (finishJobLocked decides).
 */
export function resultOnSettlement(operations: FinishingOperations, known: KnownJob): { result: unknown } | undefined {
  const operation = operations.get(known.operation);
  const settled = known.settled;
  if (settled?.status !== 'succeeded' || operation?.effects?.length !== 1 || operation.effects[0] !== settled.name) return undefined;
  return { result: resultOf(operation, known.output, { [settled.name]: settled.receipt ?? {} }) };
}

/**
 * What a settlement made by one call (settleEffectAndJob) finished: undefined
 * when the effect was not settled (its lease was no longer the caller's),
 * the job's end when the same call wrote its terminal write, open otherwise.
 */
export function finishedBySettlement(answer: { settled: boolean; ended?: JobEnded }): Finished | undefined {
  if (!answer.settled) return undefined;
  return answer.ended ? { outcome: 'succeeded', ended: answer.ended } : { outcome: 'open' };
}
