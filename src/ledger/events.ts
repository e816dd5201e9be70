import type { Queryable } from './queryable';

/** The kinds of event a job's history holds; each transition writes one. */
export const JobEventType = {
  created: 'job.created',
  running: 'job.running',
  awaitingResolution: 'job.awaiting_resolution',
  succeeded: 'job.succeeded',
  failed: 'job.failed',
  cancelled: 'job.cancelled',
  attemptOpened: 'attempt.opened',
  /** A read-only generation opened an attempt while another was unknown (its retry policy: invariant 4 relaxed). */
  attemptHedged: 'attempt.hedged',
  attemptSucceeded: 'attempt.succeeded',
  attemptFailed: 'attempt.failed',
  attemptUnknown: 'attempt.unknown',
  attemptReconciled: 'attempt.reconciled',
  attemptResolved: 'attempt.resolved',
  raceLost: 'attempt.race_lost',
  fallbackSkipped: 'route.fallback_skipped',
  effectClaimed: 'effect.claimed',
  /** A try whose outcome only a receipt can tell (a reset, a timeout, a 5xx): what it met, for the job's story. */
  effectAmbiguous: 'effect.ambiguous',
  /** A try the downstream turned away (429, 503, refused): tried again later. */
  effectNotPerformed: 'effect.not_performed',
  effectSettled: 'effect.settled',
  effectRecovered: 'effect.recovered',
  effectNeedsReview: 'effect.needs_review',
  /** Recovery would have repeated a send, or settled from a lookup, through a claim no current drill shows (invariant 14). */
  effectRepeatRefused: 'effect.repeat_refused',
  effectResolved: 'effect.resolved',
  workflowRepaired: 'job.workflow_repaired',
  reopened: 'job.reopened',
} as const;
export type JobEventType = (typeof JobEventType)[keyof typeof JobEventType];

/** Appends one event to a job's history. */
export async function appendEvent(db: Queryable, jobId: string, type: JobEventType, detail: Record<string, unknown> = {}): Promise<void> {
  await db.query('INSERT INTO job_events (job_id, type, detail) VALUES ($1, $2, $3)', [jobId, type, detail]);
}
