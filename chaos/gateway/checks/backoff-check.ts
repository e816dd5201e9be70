/**
 * A provider that answered 429 is not asked again before its backoff and its
 * Retry-After have passed, whichever way the route came back to it (another
 * provider in between, a hedge, a reopened run); and when that wait would
 * leave less than one attempt's time before the caller's deadline, the job
 * ends deadline_exceeded instead of spending its last attempt early.
 */
import { attemptsInOrder } from './attempt-order';
import type { GatewayObservation, GwAttempt } from '../observation';
import type { GatewayViolation } from './kinds';

/** The ledger's times are the database's, to the microsecond; the product rounds its wait up to the millisecond. */
const TOLERANCE_MS = 2;

/** When the attempt could first start after the latest 429 of its provider before it, if one came before. */
export function earliestStart(previous: GwAttempt[], attempt: GwAttempt, backoffMs: number, plannedRetryAfterMs: number | undefined): { at: number; waitMs: number } | undefined {
  const last = [...previous].reverse().find((a) => a.provider === attempt.provider);
  if (!last || last.errorClass !== 'rate_limited' || last.endedAt === null) return undefined;
  const waitMs = Math.max(backoffMs, last.retryAfterMs ?? 0, plannedRetryAfterMs ?? 0);
  return { at: last.endedAt + waitMs, waitMs };
}

export function checkBackoff(obs: GatewayObservation): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const job of obs.jobs) {
    const facts = obs.intents.find((i) => i.operation === job.operation && i.key === job.idempotencyKey);
    const attempts = attemptsInOrder(obs, job.id);
    const minAttemptMs = obs.settings.minAttemptMs[job.operation] ?? 1_000;
    let exhaustedEarly: string | undefined;
    attempts.forEach((attempt, index) => {
      const earliest = earliestStart(attempts.slice(0, index), attempt, obs.settings.backoffMs, facts?.retryAfterMs[attempt.provider]);
      if (!earliest) return;
      if (attempt.startedAt + TOLERANCE_MS < earliest.at) {
        violations.push({ kind: 'backoff', detail: `job ${job.id}: attempt #${attempt.seq} (run ${attempt.run}) went to ${attempt.provider} ${earliest.at - attempt.startedAt} ms before the ${earliest.waitMs} ms its 429 asked for had passed` });
      }
      if (attempt.run === job.run && job.deadlineAt !== null && earliest.at + minAttemptMs > job.deadlineAt) {
        exhaustedEarly ??= `attempt #${attempt.seq} (${attempt.provider}) could not start before ${new Date(earliest.at).toISOString()}, leaving less than ${minAttemptMs} ms before the deadline`;
      }
    });
    if (exhaustedEarly && job.status === 'failed' && (job.error as { type?: unknown } | null)?.type === 'attempts_exhausted') {
      violations.push({ kind: 'backoff', detail: `job ${job.id} failed attempts_exhausted, not deadline_exceeded: ${exhaustedEarly}` });
    }
  }
  return violations.slice(0, 4);
}
