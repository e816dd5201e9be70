import type { Job, Problem } from './job.js';

/** The API answered with a problem (RFC 9457) that retrying will not fix. A 409 is `status` 409: the key was used for another intent. */
export class OnceflowApiError extends Error {
  override name = 'OnceflowApiError';

  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(`${status} ${problem.title}: ${problem.detail}`);
  }
}

/** Retries ran out; `cause` is the last failure. The intent keeps its key: submitting it again attaches to the same job. */
export class OnceflowUnavailableError extends Error {
  override name = 'OnceflowUnavailableError';
}

/**
 * The server's request digest of the job is not the one this client computed
 * for the same request: the two disagree on what "the same intent" is, so
 * keys can no longer be trusted to follow intents. Carries the job.
 */
export class DigestMismatchError extends Error {
  override name = 'DigestMismatchError';

  constructor(
    readonly job: Job,
    readonly clientDigest: string,
  ) {
    super(`the server's request digest ${job.requestDigest} is not this client's ${clientDigest} for job ${job.id}`);
  }
}
