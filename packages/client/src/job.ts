/** Job statuses, written once. Terminal: succeeded, failed, cancelled. */
export const JobStatus = {
  accepted: 'accepted',
  running: 'running',
  awaitingResolution: 'awaiting_resolution',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type JobStatus = (typeof JobStatus)[keyof typeof JobStatus];

const TERMINAL: ReadonlySet<string> = new Set([JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled]);

export function isTerminal(status: string): boolean {
  return TERMINAL.has(status);
}

export interface Attempt {
  id: string;
  seq: number;
  provider: string;
  model: string;
  status: 'starting' | 'running' | 'unknown' | 'succeeded' | 'failed' | 'cancelled' | 'discarded';
  startedAt: string;
  endedAt?: string;
  error?: Record<string, unknown>;
  resolution?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface Effect {
  name: string;
  status: 'pending' | 'succeeded' | 'failed' | 'needs_review';
  receipt?: Record<string, unknown>;
  [field: string]: unknown;
}

/** The job as the API shows it (GET /v1/jobs/{id}). */
export interface Job {
  id: string;
  operation: string;
  idempotencyKey: string;
  requestDigest: string;
  schemaVersion: number;
  status: JobStatus;
  result?: Record<string, unknown>;
  error?: { type: string; detail: string; [field: string]: unknown };
  attempts: Attempt[];
  effects: Effect[];
  createdAt: string;
  updatedAt: string;
  links: { self: string; temporalUi?: string };
  [field: string]: unknown;
}

/** An error answer (RFC 9457). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: Array<{ pointer: string; detail: string }>;
  [extension: string]: unknown;
}
