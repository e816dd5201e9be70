/**
 * The typed client for Onceflow's HTTP API, for Node: the operator's
 * commands and scripts. It sends through the client package's HttpSender,
 * the same retry code browsers use: every retry of a request (after a network
 * failure, or an answer that says trying again may help: 408, 429, 502, 503,
 * 504) carries the same Idempotency-Key, so a retry can never become a second
 * job; any other answer (a 4xx, or a 500, which nothing says would go
 * differently) is thrown at once. One key per intent: `submit` takes the
 * caller's key or makes one.
 */
import { randomUUID } from 'node:crypto';
import { HttpSender, isTerminal, OnceflowApiError, OnceflowUnavailableError, sleep, type HttpAnswer, type Problem, type Sleep } from '../../packages/client';
import type { JobPageView, JobSummaryView, JobView } from '../api/schemas';
import type { EffectsView } from '../api/effects-routes';
import type { ListableStatus } from '../ledger/job-list';
import type { Entry, EntryVerification } from '../ledger/entry-verifications';

export { OnceflowApiError, OnceflowUnavailableError, type Problem };

export type Job = JobView;
export type JobSummary = JobSummaryView;
export type JobPage = JobPageView;
export type Effects = EffectsView;
/** One verification of an effect: its drills' evidence. */
export type EffectVerificationView = NonNullable<EffectsView['effects'][number]['latestVerification']>;

/** The protocol entries an alias is verified through. */
export type EntryName = Entry;
/** One verification of an alias through one entry, as POST /v1/entries/verify reports it. */
export type EntryVerificationView = Omit<EntryVerification, 'verifiedAt'> & { verifiedAt: string };

/** What an operator lists jobs by (GET /v1/jobs?status=...). */
export interface JobListQuery {
  status: ListableStatus;
  principal?: string;
  operation?: string;
  /** 1 to 200; the server's default is 50. */
  limit?: number;
  /** A previous page's `next`. */
  cursor?: string;
}

/** A verification as POST /v1/providers/verify reports it. */
export interface Verification {
  operation: string;
  provider: string;
  model: string;
  schemaVersion: number;
  templateHash: string;
  verifiedAt: string;
  passed: boolean;
  samples: number;
  evidence: Record<string, unknown>;
}

/** A canary to start (POST /v1/routes/{operation}/canaries). */
export interface NewCanary {
  version: string;
  steps: Array<{ provider: string; model: string }>;
  owner: string;
  expiresAt: string;
  sharePercent: number;
  thresholds?: Partial<{ window: number; contractViolationsPercent: number; unknownsPercent: number; failedPercent: number | null; effectsInReview: number }>;
  reason?: string;
}

/** A route version as GET /v1/routes shows it. */
export interface RouteVersion {
  operation: string;
  version: string;
  kind: 'baseline' | 'canary';
  state: string;
  steps: Array<{ provider: string; model: string }>;
  owner?: string;
  sharePercent?: number;
  expiresAt?: string;
  thresholds?: Record<string, number | null>;
  previousVersion?: string;
  reason?: string;
  changedBy?: string;
  createdAt: string;
  promotedAt?: string;
  endedAt?: string;
  admitted: number;
  open: number;
  window: { size: number; jobs: number; succeeded: number; failed: number; cancelled: number; withUnknowns: number; withContractViolations: number; withEffectsInReview: number };
  events: Array<{ type: string; at: string; detail: Record<string, unknown> }>;
}

export interface RouteOperations {
  operations: Array<{ operation: string; baseline: string; serving: { version: string; canary: { version: string; sharePercent: number; expiresAt: string } | null }; versions: RouteVersion[] }>;
}

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Retries after the first try, for network failures, 408, 429, 502, 503 and 504. Default 4. */
  maxRetries?: number;
  /** First backoff; doubles each retry, with full jitter. Default 200 ms. */
  backoffMs?: number;
  /** Upper bound of one backoff. Default 5000 ms. */
  maxBackoffMs?: number;
  fetch?: typeof fetch;
  sleep?: Sleep;
}

export interface SubmitOptions {
  /** The key of this intent. Generate it once per user action, not per call. */
  idempotencyKey?: string;
  /** Ask the server to wait up to this many seconds (0..60) for a terminal state. */
  waitSeconds?: number;
  /** The version of the operation's input schema the input is written for; default: the newest. */
  schemaVersion?: number;
}

export interface Submitted {
  job: Job;
  idempotencyKey: string;
  /** True when the server already had this intent (Idempotent-Replayed). */
  replayed: boolean;
}

export class OnceflowClient {
  private readonly sender: HttpSender;
  private readonly sleep: Sleep;

  constructor(options: ClientOptions) {
    this.sender = new HttpSender({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      fetch: options.fetch,
      sleep: options.sleep,
      retry: { maxRetries: options.maxRetries, backoffMs: options.backoffMs, maxBackoffMs: options.maxBackoffMs },
    });
    this.sleep = options.sleep ?? sleep;
  }

  /**
   * Submits an intent; retries carry the same Idempotency-Key.
   * @throws OnceflowApiError for answers retrying will not fix (bad input, 409 key reused, 500).
   * @throws OnceflowUnavailableError when retries run out.
   */
  async submit(operation: string, input: Record<string, unknown>, opts: SubmitOptions = {}): Promise<Submitted> {
    const idempotencyKey = opts.idempotencyKey ?? randomUUID();
    const headers: Record<string, string> = { 'content-type': 'application/json', 'idempotency-key': idempotencyKey };
    if (opts.waitSeconds !== undefined) headers.prefer = `wait=${opts.waitSeconds}`;
    const answer = await this.request('POST', '/v1/jobs', headers, JSON.stringify({ operation, ...(opts.schemaVersion === undefined ? {} : { schemaVersion: opts.schemaVersion }), input }));
    return { job: answer.body as Job, idempotencyKey, replayed: answer.headers.get('idempotent-replayed') === 'true' };
  }

  /** A job by id. @throws OnceflowApiError 404 when it is not the caller's. */
  async getJob(id: string): Promise<Job> {
    return (await this.request('GET', `/v1/jobs/${encodeURIComponent(id)}`, {})).body as Job;
  }

  /** The caller's job for a scope. @throws OnceflowApiError 404 when there is none. */
  async findJob(operation: string, idempotencyKey: string): Promise<Job> {
    const query = new URLSearchParams({ operation, idempotencyKey });
    return (await this.request('GET', `/v1/jobs?${query}`, {})).body as Job;
  }

  /**
   * Polls until the job is terminal or timeoutMs passes; returns the job as last seen.
   */
  async waitForResult(id: string, opts: { timeoutMs?: number; pollMs?: number } = {}): Promise<Job> {
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    for (;;) {
      const job = await this.getJob(id);
      if (isTerminal(job.status) || Date.now() >= deadline) return job;
      await this.sleep(Math.min(opts.pollMs ?? 500, Math.max(0, deadline - Date.now())));
    }
  }

  /** Cancels a job that is not terminal yet. */
  async cancel(id: string, reason?: string): Promise<Job> {
    return (await this.request('POST', `/v1/jobs/${encodeURIComponent(id)}/cancel`, { 'content-type': 'application/json' }, JSON.stringify(reason ? { reason } : {}))).body as Job;
  }

  /** Operators: one page of jobs in a status, across principals, oldest first. */
  async listJobs(query: JobListQuery): Promise<JobPage> {
    const params = new URLSearchParams({ status: query.status });
    if (query.principal !== undefined) params.set('principal', query.principal);
    if (query.operation !== undefined) params.set('operation', query.operation);
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    if (query.cursor !== undefined) params.set('cursor', query.cursor);
    return (await this.request('GET', `/v1/jobs?${params}`, {})).body as JobPage;
  }

  /**
   * Operators: resolves an unknown attempt. Sent once: a repeat of a
   * resolution that landed would only be told it is no longer unknown (409).
   * @throws OnceflowApiError 403 (not an operator), 404, 409 (not unknown).
   */
  async resolveAttempt(jobId: string, attemptId: string, resolution: { outcome: 'failed' | 'cancelled'; reason: string }): Promise<Job> {
    const path = `/v1/jobs/${encodeURIComponent(jobId)}/attempts/${encodeURIComponent(attemptId)}/resolution`;
    return (await this.request('POST', path, { 'content-type': 'application/json' }, JSON.stringify(resolution), { once: true })).body as Job;
  }

  /**
   * Operators: settles an effect in needs_review. Sent once, like resolveAttempt.
   * @throws OnceflowApiError 403, 404, 409 (not in review).
   */
  async resolveEffect(jobId: string, name: string, resolution: { outcome: 'succeeded' | 'failed'; reason: string; receipt?: Record<string, unknown> }): Promise<Job> {
    const path = `/v1/jobs/${encodeURIComponent(jobId)}/effects/${encodeURIComponent(name)}/resolution`;
    return (await this.request('POST', path, { 'content-type': 'application/json' }, JSON.stringify(resolution), { once: true })).body as Job;
  }

  /** Operators: verifies providers against the output contracts now. @throws OnceflowApiError 404 when nothing matches the filter. */
  async verifyProviders(filter: { operation?: string; provider?: string } = {}): Promise<Verification[]> {
    const answer = await this.request('POST', '/v1/providers/verify', { 'content-type': 'application/json' }, JSON.stringify(filter), { once: true });
    return (answer.body as { verifications: Verification[] }).verifications;
  }

  /** Operators: verifies the model aliases through the protocol entries now (all, or the alias and entry named). @throws OnceflowApiError 404 when no alias matches. */
  async verifyEntries(filter: { alias?: string; entry?: EntryName } = {}): Promise<EntryVerificationView[]> {
    const answer = await this.request('POST', '/v1/entries/verify', { 'content-type': 'application/json' }, JSON.stringify(filter), { once: true });
    return (answer.body as { verifications: EntryVerificationView[] }).verifications;
  }

  /** Operators: each effect, its claims, its newest verification and what recovery may do now. */
  async listEffects(): Promise<Effects> {
    return (await this.request('GET', '/v1/effects', {})).body as Effects;
  }

  /** Operators: runs the effects' drills now (all, or the one named). @throws OnceflowApiError 404 when the effect makes no claim or does not exist. */
  async verifyEffects(filter: { effect?: string } = {}): Promise<EffectVerificationView[]> {
    const answer = await this.request('POST', '/v1/effects/verify', { 'content-type': 'application/json' }, JSON.stringify(filter), { once: true });
    return (answer.body as { verifications: EffectVerificationView[] }).verifications;
  }

  /** Operators: route versions per operation, what serves new jobs, and how each version did. */
  async listRoutes(): Promise<RouteOperations> {
    return (await this.request('GET', '/v1/routes', {})).body as RouteOperations;
  }

  /**
   * Operators: starts a canary route version. Sent once (a repeat would be told the name is taken).
   * @throws OnceflowApiError 400, 403, 404 (operation), 409 (a canary already running, the name taken, a step failing the gate).
   */
  async startCanary(operation: string, canary: NewCanary): Promise<RouteVersion> {
    const answer = await this.request('POST', `/v1/routes/${encodeURIComponent(operation)}/canaries`, { 'content-type': 'application/json' }, JSON.stringify(canary), { once: true });
    return answer.body as RouteVersion;
  }

  /**
   * Operators: promotes, stops or rolls back a canary. Sent once.
   * @throws OnceflowApiError 403, 404, 409 (not in a state this change may leave).
   */
  async changeCanary(operation: string, version: string, action: 'promote' | 'stop' | 'rollback', reason?: string): Promise<RouteVersion> {
    const path = `/v1/routes/${encodeURIComponent(operation)}/canaries/${encodeURIComponent(version)}/${action}`;
    const answer = await this.request('POST', path, { 'content-type': 'application/json' }, JSON.stringify(reason === undefined ? {} : { reason }), { once: true });
    return answer.body as RouteVersion;
  }

  /** Through the shared sender: retried unless `once`. */
  private request(method: string, path: string, headers: Record<string, string>, body?: string, opts: { once?: boolean } = {}): Promise<HttpAnswer> {
    return this.sender.send(method, path, { headers, body, once: opts.once });
  }
}
