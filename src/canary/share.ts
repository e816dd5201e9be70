import { createHash } from 'node:crypto';

/** Basis points in the whole: a share of 10,000 is every job. */
export const ALL_BP = 10_000;

/**
 * Whether a job falls in a canary's share of new jobs: a hash of its id, so
 * the choice is stable (the same id is always on the same side, in every API
 * process) and spread evenly over ids, whoever generated them.
 */
export function inCanaryShare(jobId: string, shareBp: number): boolean {
  return bucketOf(jobId) < shareBp;
}

/** The job id's place in 0..9,999: the first 32 bits of its SHA-256, scaled. */
export function bucketOf(jobId: string): number {
  const word = createHash('sha256').update(jobId, 'utf8').digest().readUInt32BE(0);
  return Math.floor((word / 2 ** 32) * ALL_BP);
}
