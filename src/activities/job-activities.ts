import { Context } from '@temporalio/activity';
import { contractKeyOf, eligibility } from '../contracts/eligibility';
import { jobAndStanding, type ProviderStanding } from '../ledger/contracts';
import { operationOfWorkflowId } from '../jobs/scope';
import { inTransaction } from '../db/pool';
import { finishJobLocked } from '../effects/finish';
import { JobStatus } from '../jobs/status';
import type { createAttemptActivities } from './attempt-activities';
import {
  AttemptStatus,
  failAttemptLocked,
  LIVE_ATTEMPT_STATUSES,
  listAttempts,
  takeLeftoverAttempts,
  markAttemptUnknownLocked,
  openAttemptLocked,
  openFirstAttempt,
  type AttemptRecord,
} from '../ledger/attempts';
import { lockJobRow, peekJobRow, type LockedJob } from '../ledger/job-row';
import type { Queryable } from '../ledger/queryable';
import { listEffects } from '../ledger/effects';
import { appendEvent, JobEventType } from '../ledger/events';
import { failJob, getJobInput, takeJobsToSweep } from '../ledger/jobs';
import { checkRender, type RenderCheck } from '../contracts/render-check';
import { profileOf } from '../contracts/models';
import { DEFAULT_MIN_ATTEMPT_MS, type HedgePolicy, type RegisteredOperation } from '../operations/operation';
import { afterJobBlocked, afterJobEnded } from '../canary/job-ended';
import { removeExpiredJobs } from '../ledger/retention';
import { routeStepsOf, stopExpiredCanaries } from '../ledger/route-versions';
import { RUN_SUPERSEDED, type AttemptKind, type JobAction, type JobStep, type JobTimings, type RouteStep } from '../temporal/contract';
import { repairJobWorkflow } from '../temporal/starter';
import type { PoolClient } from 'pg';
import type { ActivityDeps } from './deps';

type Step = JobAction;

/**
 * A step as the ledger decided it, with what the caller does next: an
 * attempt to send (with its prompt when its opening rendered it, and
 * `send` when the opening also marked it sent), whether the job ended
 * here, and the time left before its deadline.
 */
type Decided = Step & {
  toSend?: { attempt: AttemptRecord; input: Record<string, unknown>; deadlineLeftMs: number | null; render?: RenderCheck; send?: boolean };
  endedHere?: true;
  deadlineLeftMs?: number | null;
};

/** The workflow whose activity this is, or undefined when called outside one (tests, tools). */
function callingWorkflowId(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.workflowId;
  } catch {
    return undefined;
  }
}

/**
 * When a provider may take the job's next attempt: its backoff (doubling with
 * each of this run's attempts that went to it) and a 429's Retry-After run
 * from its own last attempt in the job, whichever way the route got back to
 * it (the other providers of the route in between, or a reopened run).
 * @returns the provider's last ended attempt and the delay after it, or undefined when it has none.
 */
function backoffOf(jobAttempts: AttemptRecord[], run: number, provider: string, backoffMs: number): { last: AttemptRecord; delayMs: number } | undefined {
  const onProvider = jobAttempts.filter((attempt) => attempt.provider === provider && attempt.endedAt);
  const last = onProvider[onProvider.length - 1];
  if (!last) return undefined;
  const inThisRun = onProvider.filter((attempt) => attempt.run === run).length;
  const retryAfterMs = Number(last.evidence?.retryAfterMs ?? 0);
  return { last, delayMs: Math.max(retryAfterMs, inThisRun > 0 ? backoffMs * 2 ** (inThisRun - 1) : 0) };
}

/** The fallbacks this job's route skipped, once each, as the events recorded them. */
async function skippedFallbacks(tx: PoolClient, jobId: string): Promise<string[]> {
  const { rows } = await tx.query<{ line: string }>(
    `SELECT DISTINCT ON (detail->>'provider', detail->>'model')
            format('%s/%s: %s (%s)', detail->>'provider', detail->>'model', detail->>'reason', detail->>'detail') AS line
     FROM job_events WHERE job_id = $1 AND type = $2
     ORDER BY detail->>'provider', detail->>'model', id DESC`,
    [jobId, JobEventType.fallbackSkipped],
  );
  return rows.map((row) => row.line);
}

export function createJobActivities(deps: ActivityDeps, attempts: Pick<ReturnType<typeof createAttemptActivities>, 'sendAttempt' | 'sendMarked' | 'settleLeftoverAttempt'>) {
  const { db, metrics } = deps;
  const clock = deps.clock ?? { now: () => new Date() };
  const timings: JobTimings = {
    attemptTimeoutMs: deps.attempts.timeoutMs,
    heartbeatTimeoutMs: deps.attempts.heartbeatTimeoutMs,
    reconcileIntervalMs: deps.attempts.reconcileIntervalMs,
    effectTimeoutMs: deps.effectTimeoutMs,
  };

  /**
   * The route a job runs: the steps of the version it was admitted to, so a
   * job admitted to a canary stays on it, and a rollback changes only new
   * jobs; this worker's own providers file only for a job whose version was
   * never recorded. Versions never change, so their steps are kept once read.
   */
  const versionSteps = new Map<string, RouteStep[]>();
  /** Per operation, the step this worker last opened a new job's first attempt at (see openFirst). */
  const firstSteps = new Map<string, RouteStep>();
  async function routeOfJob(tx: Queryable, job: LockedJob): Promise<RouteStep[]> {
    if (!job.routeVersion) return deps.routeFor(job.operation);
    const key = `${job.operation}\u0000${job.routeVersion}`;
    let steps = versionSteps.get(key);
    if (!steps) {
      steps = await routeStepsOf(tx, job.operation, job.routeVersion);
      if (!steps) return deps.routeFor(job.operation);
      versionSteps.set(key, steps);
    }
    return steps;
  }

  /** Ends a job that has no winner (so no effect can be claimed) as failed. */
  async function fail(tx: PoolClient, job: LockedJob, type: string, detail: string): Promise<Step & { endedHere: true }> {
    if (!(await failJob(tx, job.id, { type, detail }))) throw new Error(`job ${job.id} could not be failed (${type})`);
    return { kind: 'terminal', status: JobStatus.failed, endedHere: true };
  }

  /** Whether `step` may take an attempt now, in `role` (invariant 6), against its provider's base URL as configured. */
  function eligibilityOf(db: Queryable, operation: RegisteredOperation, step: RouteStep, role: 'primary' | 'fallback', read?: ProviderStanding) {
    return eligibility(db, operation, step, role, deps.gate, clock.now(), deps.providers.get(step.provider)?.baseUrl, read);
  }

  /**
   * The next route step that may take an attempt after the job's last one
   * (invariant 6): fallbacks without a current, passing, fresh verification
   * are skipped, and why.
   */
  async function chooseStep(tx: PoolClient, job: LockedJob, route: RouteStep[], last: AttemptRecord | undefined) {
    const operation = deps.operations.get(job.operation)!;
    const lastIndex = last ? route.findIndex((step) => step.provider === last.provider && step.model === last.model) : -1;
    const skipped: Array<RouteStep & { reason: string; detail: string }> = [];
    for (let offset = 0; offset < route.length; offset++) {
      const index = (lastIndex + 1 + offset) % route.length;
      const step = route[index]!;
      const verdict = await eligibilityOf(tx, operation, step, index === 0 ? 'primary' : 'fallback');
      if (verdict.eligible) return { step, skipped };
      skipped.push({ ...step, reason: verdict.reason, detail: verdict.detail });
    }
    return { step: undefined, skipped };
  }

  /**
   * Decides, in one transaction on the locked job row, what the job needs
   * next, and opens its next attempt when that is what it needs:
   * - terminal: nothing;
   * - a winner: its effects;
   * - an attempt left live by a call that did not report back: `starting`
   *   provably never sent (failed, not_sent), `running` may have (unknown);
   * - an unknown attempt: wait for it (invariant 4);
   * - attempts exhausted or no eligible provider: fail the job;
   * - the provider that just failed again: its backoff first;
   * - otherwise: open the attempt `attemptId` (retry-safe) at the next eligible step.
   */
  async function advance(
    tx: PoolClient,
    request: { jobId: string; attemptId: string; send?: boolean; workflowId?: string },
    /** What the caller must do once this commits: `blocked`, an attempt became unknown here. */
    notes: { blocked?: boolean },
  ): Promise<Decided> {
    const job = await lockJobRow(tx, request.jobId, { withInput: request.send });
    // Removed by retention: there is nothing left to drive.
    if (!job) return { kind: 'terminal', status: 'removed' };
    // A reopened job's run is driven by its own workflow: an earlier run's, running again (its last task retried), ends here and touches nothing.
    if (request.workflowId !== undefined && request.workflowId !== job.workflowId) return { kind: 'terminal', status: RUN_SUPERSEDED };
    if (job.terminal) return { kind: 'terminal', status: job.status };
    // An accepted job becomes running as its first attempt opens (openAttemptLocked), in the same statement.
    const operation = deps.operations.get(job.operation);
    if (job.completedBy) {
      const effects = await listEffects(tx, job.id);
      // An operation that performs no effects after its caller's deadline fails the job instead, before any claim.
      if (operation?.effectsAfterDeadline === false && operation.effects?.length && effects.length === 0 && job.deadlineLeftMs !== null && job.deadlineLeftMs <= 0) {
        return fail(tx, job, 'deadline_exceeded', `the deadline passed ${-job.deadlineLeftMs} ms ago, after the AI step won and before any effect was claimed; ${job.operation} performs no effects after its deadline`);
      }
      const settled = new Set(effects.filter((effect) => effect.status === 'succeeded').map((effect) => effect.name));
      return { kind: 'effects', names: (operation?.effects ?? []).filter((name) => !settled.has(name)) };
    }

    // A job still accepted on its first run has no attempt: its first one moves it out of accepted in the statement that
    // inserts it (openAttemptLocked), and only a reopening makes a job accepted again, on its next run.
    let attempts = job.status === JobStatus.accepted && job.run === 1 ? [] : await listAttempts(tx, job.id);
    // One live attempt at most (lane 0), or one per lane for a job that hedges.
    const lives = attempts.filter((attempt) => LIVE_ATTEMPT_STATUSES.includes(attempt.status));
    const mine = lives.find((attempt) => attempt.status === AttemptStatus.starting && attempt.id === request.attemptId);
    if (mine) {
      // This step ran before, opened its attempt, and its answer was lost: the attempt is still to be sent.
      return { kind: 'call', attemptId: mine.id, provider: mine.provider, model: mine.model, seq: mine.seq, deadlineLeftMs: job.deadlineLeftMs, ...(job.input ? { toSend: { attempt: mine, input: job.input, deadlineLeftMs: job.deadlineLeftMs } } : {}) };
    }
    for (const live of lives) {
      if (live.status === AttemptStatus.starting) {
        // Its call never marked it sent, and the CAS on `starting` keeps a late one from doing so now.
        await failAttemptLocked(tx, live.id, AttemptStatus.starting, { class: 'not_sent', detail: 'the provider call did not start (its worker was lost); nothing was sent' });
        metrics.attemptOutcomes.inc({ operation: job.operation, provider: live.provider, status: 'failed', class: 'not_sent' });
      } else if (live.status === AttemptStatus.running) {
        if (await markAttemptUnknownLocked(tx, live.id, { class: 'worker_lost', detail: 'the provider call did not report back in time (worker lost or overran)' })) notes.blocked = true;
        metrics.attemptsUnknown.inc({ operation: job.operation, provider: live.provider, cause: 'worker_lost' });
      }
    }
    if (lives.some((live) => live.status !== AttemptStatus.unknown)) attempts = await listAttempts(tx, job.id);
    const unknowns = attempts.filter((attempt) => attempt.status === AttemptStatus.unknown);
    if (unknowns.length > 0) {
      // Invariant 4: nothing new starts while an attempt is unknown — except a hedge of a read-only generation, within its budget.
      const hedged = operation?.retry?.hedge ? await openHedge(tx, job, operation.retry.hedge, attempts, unknowns, request.attemptId) : undefined;
      return hedged ?? { kind: 'await', attemptId: unknowns[0]!.id };
    }
    // From here on, the current run's attempts: the cap and the route's position are a run's own (a provider's Retry-After is not).
    const jobAttempts = attempts;
    attempts = attempts.filter((attempt) => attempt.run === job.run);

    // Past the caller's deadline (or too close to it for one more attempt), a job with no winner fails;
    // an unknown attempt was waited for above (invariant 4 holds past the deadline too).
    const minAttemptMs = operation?.deadline?.minAttemptMs ?? DEFAULT_MIN_ATTEMPT_MS;
    if (job.deadlineLeftMs !== null && job.deadlineLeftMs < minAttemptMs) {
      return fail(tx, job, 'deadline_exceeded', deadlineDetail(job.deadlineLeftMs, minAttemptMs, attempts.length));
    }
    if (attempts.length >= deps.attempts.maxAttempts) {
      const skipped = await skippedFallbacks(tx, job.id);
      const why = skipped.length ? `; fallbacks skipped: ${skipped.join('; ')}` : '';
      return fail(tx, job, 'attempts_exhausted', `all ${deps.attempts.maxAttempts} attempts failed; see the attempts for each error${why}`);
    }
    const route = await routeOfJob(tx, job);
    if (!deps.operations.has(job.operation) || route.length === 0) return fail(tx, job, 'no_eligible_provider', `no provider route is configured for ${job.operation}`);
    const last = attempts[attempts.length - 1];
    const { step, skipped } = await chooseStep(tx, job, route, last);
    if (!step) {
      const why = skipped.map((skip) => `${skip.provider}/${skip.model}: ${skip.reason} (${skip.detail})`).join('; ');
      return fail(tx, job, 'no_eligible_provider', `no eligible provider is left: ${why}`);
    }
    // Backoff (and a 429's Retry-After) concern the provider that failed, whichever way the route got back to it.
    const waitMs = await backoffLeftMs(tx, jobAttempts, job.run, step.provider);
    // A backoff that would leave less than one attempt's time before the deadline ends the job now.
    if (waitMs > 0 && job.deadlineLeftMs !== null && job.deadlineLeftMs - waitMs < minAttemptMs) {
      return fail(tx, job, 'deadline_exceeded', `${deadlineDetail(job.deadlineLeftMs, minAttemptMs, attempts.length)}; the next attempt's backoff (${waitMs} ms) would have left less than that`);
    }
    if (waitMs > 0) return { kind: 'backoff', ms: waitMs };
    for (const skip of skipped) {
      metrics.fallbacksSkipped.inc({ operation: job.operation, provider: skip.provider, reason: skip.reason });
      await appendEvent(tx, job.id, JobEventType.fallbackSkipped, { provider: skip.provider, model: skip.model, reason: skip.reason, detail: skip.detail });
    }
    const opened = await openAttemptLocked(tx, { jobId: job.id, attemptId: request.attemptId, provider: step.provider, model: step.model, operation: job.operation, known: attempts });
    if (opened.kind !== 'opened') throw new Error(`job ${job.id}: an attempt went live while the job row was locked`);
    const kind: AttemptKind = !last ? 'first' : step.provider === last.provider ? 'retry' : 'fallback';
    metrics.attemptsStarted.inc({ operation: job.operation, provider: step.provider, kind });
    const { attempt } = opened;
    return { kind: 'call', attemptId: attempt.id, provider: step.provider, model: step.model, seq: attempt.seq, deadlineLeftMs: job.deadlineLeftMs, ...(job.input ? { toSend: { attempt, input: job.input, deadlineLeftMs: job.deadlineLeftMs } } : {}) };
  }

  /**
   * A new job's first attempt, the short way (the workflow says this is its
   * run's first step): the job read without a lock with the standing of its
   * route's primary (one statement when the primary is the one expected),
   * and one call that locks the job row, checks that the job is still as it
   * was read (accepted on its first run, so without attempts; driven by this
   * workflow; on the same route version; with time for an attempt) and opens
   * the attempt. What advance() would do for such a job, in two round trips
   * instead of five; and the attempt is marked sent in the same call when its
   * request goes out next (open and send).
   * @returns undefined when advance() must decide: any other job, a primary that may not take the attempt, or a job that changed meanwhile.
   */
  async function openFirst(request: { jobId: string; attemptId: string; workflowId: string }): Promise<Decided | undefined> {
    // The job and the standing of the step its route is expected to open with, in one read: the step this worker
    // last opened a first attempt at for the operation its workflow ID names, or that operation's configured primary.
    const named = operationOfWorkflowId(request.workflowId);
    const namedOperation = named === undefined ? undefined : deps.operations.get(named);
    const expected = namedOperation && (firstSteps.get(namedOperation.name) ?? deps.routeFor(namedOperation.name)[0]);
    const { job, standing } = namedOperation && expected
      ? await jobAndStanding(db, request.jobId, contractKeyOf(namedOperation, expected), deps.gate.demotion.window)
      : { job: await peekJobRow(db, request.jobId, { withInput: true }), standing: undefined };
    // Any other job takes the long way at once (what else the decision read, the call below checks again).
    if (!job?.input || job.status !== JobStatus.accepted || job.run !== 1) return undefined;
    const operation = deps.operations.get(job.operation);
    if (!operation) return undefined;
    const minAttemptMs = operation.deadline?.minAttemptMs ?? DEFAULT_MIN_ATTEMPT_MS;
    const step = (await routeOfJob(db, job))[0];
    if (!step) return undefined;
    firstSteps.set(operation.name, step);
    // The standing read beside the job counts only if it is this step's (invariant 6); otherwise it is read now.
    const read = operation.name === namedOperation?.name && step.provider === expected?.provider && step.model === expected.model ? standing : undefined;
    const verdict = await eligibilityOf(db, operation, step, 'primary', read);
    if (!verdict.eligible) return undefined;
    // Open and send: an attempt whose prompt renders and fits, at a configured provider, is marked sent as it opens
    // (its request goes out next); any other opens `starting`, and sendAttempt fails it as not sent, as on the long way.
    const render = checkRender(operation, step.model, job.input, undefined, 'to-decide');
    const send = render.ok && deps.providers.has(step.provider);
    // Nothing is sent with no time left (sendAttempt's rule), whatever the operation's minimum.
    const opened = await openFirstAttempt(db, { jobId: job.id, attemptId: request.attemptId, workflowId: request.workflowId, routeVersion: job.routeVersion, provider: step.provider, model: step.model, minAttemptMs: Math.max(1, minAttemptMs), send });
    if (!opened) return undefined;
    metrics.attemptsStarted.inc({ operation: job.operation, provider: step.provider, kind: 'first' });
    const { attempt, deadlineLeftMs } = opened;
    const toSend = { attempt, input: job.input, deadlineLeftMs, render, send };
    return { kind: 'call', attemptId: attempt.id, provider: step.provider, model: step.model, seq: attempt.seq, deadlineLeftMs, toSend };
  }

  /**
   * A hedge: a new attempt of a read-only generation while others are
   * unknown, in a free lane, at the route's next eligible step — only within
   * the operation's budget (attempts in flight, time since this run's first
   * attempt started, what this run's attempts have cost or may have cost),
   * the attempt cap and the caller's deadline. The job's events say so.
   * Nothing is opened otherwise.
   */
  async function openHedge(tx: PoolClient, job: LockedJob, hedge: HedgePolicy, jobAttempts: AttemptRecord[], unknowns: AttemptRecord[], attemptId: string) {
    const attempts = jobAttempts.filter((attempt) => attempt.run === job.run);
    const busy = new Set(unknowns.map((attempt) => attempt.lane));
    const lane = Array.from({ length: hedge.maxConcurrent }, (_, index) => index).find((index) => !busy.has(index));
    if (lane === undefined || attempts.length >= deps.attempts.maxAttempts) return undefined;
    const operation = deps.operations.get(job.operation)!;
    const minAttemptMs = operation.deadline?.minAttemptMs ?? DEFAULT_MIN_ATTEMPT_MS;
    if (job.deadlineLeftMs !== null && job.deadlineLeftMs < minAttemptMs) return undefined;
    const route = await routeOfJob(tx, job);
    const spent = hedge.maxCost === undefined ? undefined : await mayHaveCost(tx, job, operation, route, attempts);
    if (spent && 'incomparable' in spent) return undefined;
    const { rows } = await tx.query<{ in_time: boolean; under_cost: boolean }>(
      `SELECT (SELECT min(started_at) FROM attempts WHERE job_id = $1 AND run = $4) + $2 * interval '1 millisecond' > now() AS in_time,
              ($3::numeric IS NULL OR $5::numeric < $3::numeric) AS under_cost`,
      [job.id, hedge.budgetMs, hedge.maxCost ?? null, job.run, spent?.total ?? null],
    );
    if (!rows[0]?.in_time || !rows[0].under_cost) return undefined;
    const last = attempts[attempts.length - 1];
    const { step, skipped } = await chooseStep(tx, job, route, last);
    if (!step) return undefined;
    // The provider's backoff holds for a hedge too: until it has passed, the step waits (and looks again), unless the deadline would not allow it.
    const waitMs = await backoffLeftMs(tx, jobAttempts, job.run, step.provider);
    if (waitMs > 0) return job.deadlineLeftMs !== null && job.deadlineLeftMs - waitMs < minAttemptMs ? undefined : { kind: 'backoff' as const, ms: waitMs };
    for (const skip of skipped) {
      metrics.fallbacksSkipped.inc({ operation: job.operation, provider: skip.provider, reason: skip.reason });
      await appendEvent(tx, job.id, JobEventType.fallbackSkipped, { provider: skip.provider, model: skip.model, reason: skip.reason, detail: skip.detail });
    }
    const opened = await openAttemptLocked(tx, { jobId: job.id, attemptId, provider: step.provider, model: step.model, operation: job.operation, known: attempts, lane });
    if (opened.kind !== 'opened') throw new Error(`job ${job.id}: lane ${lane} went live while the job row was locked`);
    const { attempt } = opened;
    // Invariant 4 is relaxed for this operation only, and the job's history says so.
    await appendEvent(tx, job.id, JobEventType.attemptHedged, { attemptId: attempt.id, lane, whileUnknown: unknowns.map((unknown) => unknown.id) });
    metrics.attemptsStarted.inc({ operation: job.operation, provider: step.provider, kind: 'hedge' });
    return { kind: 'call' as const, attemptId: attempt.id, provider: step.provider, model: step.model, seq: attempt.seq, deadlineLeftMs: job.deadlineLeftMs, ...(job.input ? { toSend: { attempt, input: job.input, deadlineLeftMs: job.deadlineLeftMs } } : {}) };
  }

  /**
   * What this run's attempts have cost, or may have: the cost each reported,
   * and for each sent whose usage is not known (an unknown one, one an
   * operator resolved, a failure that reported none) the most it can cost,
   * its prompt and the room its model keeps for the answer at its model's
   * price. Money is added as PostgreSQL numerics. In the currency of the
   * route's prices (the hedge's `maxCost` is in it); an amount in another
   * cannot be compared.
   */
  async function mayHaveCost(tx: PoolClient, job: LockedJob, operation: RegisteredOperation, route: RouteStep[], attempts: AttemptRecord[]): Promise<{ total: string } | { incomparable: string }> {
    const priceOf = (provider: string, model: string) => deps.prices?.get(provider)?.get(model);
    const currency = route.map((step) => priceOf(step.provider, step.model)?.currency).find((found) => found !== undefined);
    let input: Record<string, unknown> | undefined = job.input ?? undefined;
    const costs: string[] = [];
    const most = { promptTokens: [] as number[], answerTokens: [] as number[], inputPrice: [] as string[], outputPrice: [] as string[] };
    for (const attempt of attempts) {
      // Never sent: it cost nothing.
      if (attempt.status === AttemptStatus.starting) continue;
      if (attempt.usage) {
        const { cost, currency: its } = attempt.usage;
        if (cost === null || Number(cost) === 0) continue;
        if (its !== currency) return { incomparable: `attempt ${attempt.seq} cost ${cost} ${its ?? ''}`.trim() };
        costs.push(cost);
        continue;
      }
      const price = priceOf(attempt.provider, attempt.model);
      if (!price) continue;
      if (price.currency !== currency) return { incomparable: `attempt ${attempt.seq} is priced in ${price.currency}` };
      input ??= await getJobInput(tx, job.id);
      const profile = profileOf(attempt.model);
      most.promptTokens.push(checkRender(operation, attempt.model, input ?? {}).promptTokens ?? profile.contextWindow);
      most.answerTokens.push(profile.reservedForOutput);
      most.inputPrice.push(price.inputPerMillion);
      most.outputPrice.push(price.outputPerMillion);
    }
    const { rows } = await tx.query<{ total: string }>(
      `SELECT (COALESCE((SELECT sum(cost) FROM unnest($1::numeric[]) AS cost), 0)
               + COALESCE((SELECT sum(p * ip + r * op) FROM unnest($2::numeric[], $3::numeric[], $4::numeric[], $5::numeric[]) AS most (p, r, ip, op)), 0) / 1000000)::text AS total`,
      [costs, most.promptTokens, most.answerTokens, most.inputPrice, most.outputPrice],
    );
    return { total: rows[0]!.total };
  }

  /** How long `provider` must still wait before this job's next attempt at it (its backoff and Retry-After, by the database's clock); 0 when none. */
  async function backoffLeftMs(tx: PoolClient, jobAttempts: AttemptRecord[], run: number, provider: string): Promise<number> {
    const backoff = backoffOf(jobAttempts, run, provider, deps.attempts.backoffMs);
    if (!backoff || backoff.delayMs <= 0) return 0;
    const { rows } = await tx.query<{ wait_ms: string }>(`SELECT GREATEST(0, ceil(extract(epoch FROM ($1::timestamptz + $2 * interval '1 millisecond' - now())) * 1000)) AS wait_ms`, [backoff.last.endedAt, backoff.delayMs]);
    return Number(rows[0]!.wait_ms);
  }

  /** Why a job failed at its deadline, in so many words. */
  function deadlineDetail(leftMs: number, minAttemptMs: number, attemptsMade: number): string {
    const when = leftMs <= 0 ? `the deadline passed ${-leftMs} ms ago` : `${leftMs} ms were left before the deadline, less than the ${minAttemptMs} ms one attempt needs`;
    return `${when}, with no winner after ${attemptsMade} attempt${attemptsMade === 1 ? '' : 's'}; no new attempt was started`;
  }

  return {
    /**
     * What the job needs next, decided and (for a new attempt) opened in one
     * ledger transaction. With `send`, an attempt opened is also sent, in
     * this same execution (see callProvider): the answer is `called`, with
     * what came of it.
     */
    async advanceJob(request: { jobId: string; attemptId: string; send?: boolean; first?: boolean }): Promise<JobStep> {
      const notes: { blocked?: boolean } = {};
      const { first, ...rest } = request;
      const asked = { ...rest, workflowId: callingWorkflowId() };
      // The run's first step of a new job opens its attempt the short way when it can; the long way decides otherwise.
      const short = first && asked.send && asked.workflowId !== undefined ? await openFirst({ ...asked, workflowId: asked.workflowId }) : undefined;
      const { toSend, endedHere, deadlineLeftMs, ...action } = short ?? (await inTransaction(db, (tx) => advance(tx, asked, notes)));
      if (endedHere) await afterJobEnded(db, metrics, request.jobId);
      if (notes.blocked) await afterJobBlocked(db, request.jobId);
      // A call's timeouts are the attempt timeout, or the time left before the caller's deadline when that is shorter.
      const left = deadlineLeftMs ?? null;
      const stepTimings = action.kind === 'call' && left !== null ? { ...timings, attemptTimeoutMs: Math.max(1, Math.min(timings.attemptTimeoutMs, left)) } : timings;
      if (request.send && action.kind === 'call' && toSend) {
        // An attempt its opening marked sent goes out at once; any other is checked and marked first.
        const report = toSend.send
          ? await attempts.sendMarked(toSend.attempt, toSend.input, toSend.deadlineLeftMs, toSend.render!.messages!)
          : await attempts.sendAttempt(toSend.attempt, toSend.input, toSend.deadlineLeftMs, toSend.render);
        return { kind: 'called', attemptId: action.attemptId, seq: action.seq, report, timings: stepTimings };
      }
      return { ...action, timings: stepTimings };
    },

    /**
     * The job's terminal write once its effects have settled (after an
     * operator settled one in review); a no-op while one is still open.
     * @returns the job's status afterwards.
     */
    async finishJob(jobId: string): Promise<{ status: string; terminal: boolean }> {
      const { endedHere, ...after } = await inTransaction(db, async (tx) => {
        const job = await lockJobRow(tx, jobId);
        if (!job) return { status: 'removed', terminal: true, endedHere: false };
        const endedHere = (await finishJobLocked(tx, jobId, deps.operations)).outcome !== 'open';
        const after = (await lockJobRow(tx, jobId))!;
        return { status: after.status, terminal: after.terminal, endedHere };
      });
      if (endedHere) await afterJobEnded(db, metrics, jobId);
      return after;
    },

    /**
     * Ends a job whose effect this deployment cannot run. Refused while any
     * effect of the job is claimed and unsettled: then it settles first.
     * @returns the job's status afterwards.
     */
    async failJobForEffect(request: { jobId: string; name: string; detail: string }): Promise<{ status: string; terminal: boolean }> {
      const { endedHere, ...after } = await inTransaction(db, async (tx) => {
        const job = await lockJobRow(tx, request.jobId);
        if (!job) return { status: 'removed', terminal: true, endedHere: false };
        const endedHere = await failJob(tx, job.id, { type: 'effect_failed', detail: request.detail, effect: request.name });
        const after = (await lockJobRow(tx, job.id))!;
        return { status: after.status, terminal: after.terminal, endedHere };
      });
      if (endedHere) await afterJobEnded(db, metrics, request.jobId);
      return after;
    },

    /** Removes terminal jobs past the retention (the retention Schedule's work). */
    async removeExpiredJobs(retentionDays: number): Promise<number> {
      return removeExpiredJobs(db, retentionDays);
    },

    /**
     * Invariant 11, the repair half: every open job older than a minute whose
     * workflow is not running gets one started (a crash between the insert
     * and the start, or a workflow that ended before its job). Also stops the
     * canaries that expired without promotion.
     * @returns how many jobs were looked at and how many were repaired.
     */
    async sweepJobs(): Promise<{ looked: number; repaired: number; leftovers: number }> {
      // A canary past its expiry stops by itself even when none of its jobs ends and no job is admitted.
      await stopExpiredCanaries(db);
      // Attempts still unknown in ended jobs (a hedge's siblings, one in flight at a cancellation), or resolved before their usage was known: what they cost is still to learn.
      const askable = [...deps.providers.values()].filter((provider) => provider.lookup).map((provider) => provider.name);
      const leftovers = await takeLeftoverAttempts(db, { intervalMs: deps.attempts.reconcileIntervalMs, limit: deps.sweeper?.batchSize ?? 100, providers: askable });
      for (const attemptId of leftovers) await attempts.settleLeftoverAttempt(attemptId);
      if (!deps.workflows || !deps.sweeper) return { looked: 0, repaired: 0, leftovers: leftovers.length };
      const jobs = await takeJobsToSweep(db, { minAgeMs: deps.sweeper.minAgeMs, intervalMs: deps.sweeper.intervalMs, limit: deps.sweeper.batchSize });
      let repaired = 0;
      for (const job of jobs) {
        if (await repairJobWorkflow(deps.workflows, job)) {
          repaired++;
          metrics.workflowsRepaired.inc({ operation: job.operation });
          await appendEvent(db, job.id, JobEventType.workflowRepaired, { workflowId: job.workflowId });
        }
      }
      return { looked: jobs.length, repaired, leftovers: leftovers.length };
    },
  };
}
