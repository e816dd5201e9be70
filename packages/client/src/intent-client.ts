import { intentDigest, requestDigest } from './digest.js';
import { DigestMismatchError } from './errors.js';
import { HttpSender, sleep as defaultSleep, type RetryPolicy, type Sleep } from './http-sender.js';
import { IntentKeys, memoryStorage, type KeyStorage } from './intent-keys.js';
import { isTerminal, type Job } from './job.js';

export interface IntentClientOptions {
  apiKey: string;
  /** Where the API is; default '' (the page's own origin). Node needs an absolute URL. */
  baseUrl?: string;
  /** Where keys are kept; default sessionStorage where there is one, else memory. */
  storage?: KeyStorage;
  /** A key unused for longer is forgotten; default 24 hours. */
  keyMaxAgeMs?: number;
  /** The input schema version each operation's inputs are written for; without one, the server takes its newest. */
  schemaVersions?: Record<string, number>;
  retry?: Partial<RetryPolicy>;
  /** How long one try may take beyond the wait it asks for; default 10 000 ms. A try that takes longer is retried on the same key. */
  requestTimeoutMs?: number;
  /** Between two reads of a job that is still running after the server's wait; default 1000 ms. */
  pollIntervalMs?: number;
  fetch?: typeof fetch;
  sleep?: Sleep;
  random?: () => number;
  now?: () => number;
  newKey?: () => string;
}

export interface SubmitOptions {
  /** This intent's key, chosen by the caller; default: the kept key of this input, or a new one. */
  idempotencyKey?: string;
  /** Seconds (0 to 60) the server may hold the request for the job to end (Prefer: wait); default 10. */
  wait?: number;
  /** Stops retries, waits and reads; the key stays, so submitting again attaches to the same job. */
  signal?: AbortSignal;
  /** Overrides schemaVersions for this submission. */
  schemaVersion?: number;
  /** Called with the job as it enters each status: accepted, running, awaiting_resolution, and its terminal one. */
  onStatus?: (job: Job) => void;
  /** Called with every view of the job this submission reads (its attempts and effects as they change). */
  onUpdate?: (job: Job) => void;
}

export const DEFAULT_WAIT_S = 10;
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
const DEFAULT_POLL_INTERVAL_MS = 1_000;

/**
 * Submits intents to Onceflow from a browser (or Node 20): one key per intent,
 * kept by the intent's digest, so double clicks, retries and reloads become
 * one job; the same form with another input is another job.
 */
export class IntentClient {
  readonly keys: IntentKeys;
  private readonly sender: HttpSender;
  private readonly sleep: Sleep;
  private readonly schemaVersions: Record<string, number>;
  private readonly requestTimeoutMs: number;
  private readonly pollIntervalMs: number;

  constructor(options: IntentClientOptions) {
    this.keys = new IntentKeys({ storage: options.storage ?? defaultStorage(), maxAgeMs: options.keyMaxAgeMs, now: options.now, newKey: options.newKey });
    this.sender = new HttpSender({ baseUrl: options.baseUrl ?? '', apiKey: options.apiKey, fetch: options.fetch, sleep: options.sleep, random: options.random, now: options.now, retry: options.retry });
    this.sleep = options.sleep ?? defaultSleep;
    this.schemaVersions = options.schemaVersions ?? {};
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.keys.sweep();
  }

  /**
   * Submits an intent and follows its job to a terminal status: Prefer: wait
   * first, then reads every pollIntervalMs. Network failures, timeouts, 408,
   * 429, 502, 503 and 504 are retried on the same key.
   * @throws OnceflowApiError for answers retrying will not fix; a 409 means the key was used for another intent.
   * @throws OnceflowUnavailableError when retries run out (the key stays: submit again later).
   * @throws DigestMismatchError when the server's digest of the request is not this client's.
   * @throws the signal's reason when it aborts.
   */
  async submit(operation: string, input: unknown, opts: SubmitOptions = {}): Promise<Job> {
    const schemaVersion = opts.schemaVersion ?? this.schemaVersions[operation];
    const body = JSON.stringify({ operation, ...(schemaVersion === undefined ? {} : { schemaVersion }), input });
    // The input as the server reads it: undefined members dropped, dates as strings.
    const sent = (JSON.parse(body) as { input: unknown }).input;
    const idempotencyKey = opts.idempotencyKey ?? this.keys.keyFor(await intentDigest(operation, schemaVersion, sent));
    const wait = opts.wait ?? DEFAULT_WAIT_S;
    const answer = await this.sender.send('POST', '/v1/jobs', {
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey, ...(wait > 0 ? { prefer: `wait=${wait}` } : {}) },
      body,
      signal: opts.signal,
      timeoutMs: wait * 1000 + this.requestTimeoutMs,
    });
    let job = answer.body as Job;
    const clientDigest = await requestDigest(operation, job.schemaVersion, sent);
    if (job.requestDigest !== clientDigest) throw new DigestMismatchError(job, clientDigest);

    let reportedStatus: string | undefined;
    const report = (seen: Job): void => {
      opts.onUpdate?.(seen);
      if (seen.status === reportedStatus) return;
      reportedStatus = seen.status;
      opts.onStatus?.(seen);
    };
    report(job);
    while (!isTerminal(job.status)) {
      await this.sleep(this.pollIntervalMs, opts.signal);
      job = await this.getJob(job.id, { signal: opts.signal });
      report(job);
    }
    return job;
  }

  /**
   * The job's outcome was shown: once the job is terminal, its key is
   * forgotten, so the same input submitted from now on is a new intent. A job
   * still running keeps its key: submitting again attaches to it. Returns
   * whether a key was forgotten.
   */
  shown(job: Pick<Job, 'idempotencyKey' | 'status'>): boolean {
    return isTerminal(job.status) && this.keys.forgetKey(job.idempotencyKey);
  }

  /**
   * A job by id, retried like a submission.
   * @throws OnceflowApiError 404 when it is not the caller's.
   */
  async getJob(id: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return (await this.sender.send('GET', `/v1/jobs/${encodeURIComponent(id)}`, { signal: opts.signal, timeoutMs: this.requestTimeoutMs })).body as Job;
  }
}

function defaultStorage(): KeyStorage {
  try {
    // Throws where storage is refused (a sandboxed frame, disabled cookies).
    if (typeof globalThis.sessionStorage !== 'undefined') return globalThis.sessionStorage;
  } catch {
    // Keys then last as long as the page.
  }
  return memoryStorage();
}
