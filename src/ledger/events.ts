import type { Queryable } from './queryable';

/** The kinds of event a job's history holds; each transition writes one. */
export const JobEventType = {
  created: 'job.created',
  replayed: 'job.replayed',
  workflowStarted: 'job.workflow_started',
  running: 'job.running',
  awaitingResolution: 'job.awaiting_resolution',
  succeeded: 'job.succeeded',
  failed: 'job.failed',
  cancelled: 'job.cancelled',
  attemptOpened: 'attempt.opened',
  attemptSucceeded: 'attempt.succeeded',
  attemptFailed: 'attempt.failed',
  attemptUnknown: 'attempt.unknown',
  attemptReconciled: 'attempt.reconciled',
  attemptResolved: 'attempt.resolved',
  attemptDiscarded: 'attempt.discarded',
  raceLost: 'attempt.race_lost',
  fallback: 'route.fallback',
  fallbackSkipped: 'route.fallback_skipped',
  effectClaimed: 'effect.claimed',
  effectSettled: 'effect.settled',
  effectRecovered: 'effect.recovered',
  effectNeedsReview: 'effect.needs_review',
  effectResolved: 'effect.resolved',
} as const;
export type JobEventType = (typeof JobEventType)[keyof typeof JobEventType];

export interface JobEvent {
  id: string;
  type: JobEventType;
  detail: Record<string, unknown>;
  createdAt: Date;
}

/** Appends one event to a job's history. */
export async function appendEvent(db: Queryable, jobId: string, type: JobEventType, detail: Record<string, unknown> = {}): Promise<void> {
  await db.query('INSERT INTO job_events (job_id, type, detail) VALUES ($1, $2, $3)', [jobId, type, detail]);
}

/** A job's events, oldest first. */
export async function listEvents(db: Queryable, jobId: string): Promise<JobEvent[]> {
  const { rows } = await db.query<{ id: string; type: JobEventType; detail: Record<string, unknown>; created_at: Date }>(
    'SELECT id, type, detail, created_at FROM job_events WHERE job_id = $1 ORDER BY id',
    [jobId],
  );
  return rows.map((row) => ({ id: row.id, type: row.type, detail: row.detail, createdAt: row.created_at }));
}
