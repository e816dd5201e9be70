/** A job's statuses, written once; the type derives from the values. */
export const JobStatus = {
  accepted: 'accepted',
  running: 'running',
  awaitingResolution: 'awaiting_resolution',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type JobStatus = (typeof JobStatus)[keyof typeof JobStatus];

export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = [JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled];

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_JOB_STATUSES.includes(status);
}
