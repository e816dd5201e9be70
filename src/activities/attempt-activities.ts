import { Context } from '@temporalio/activity';
import { checkOutput } from '../contracts/output';
import { checkRender } from '../contracts/render-check';
import { isTerminal } from '../jobs/status';
import {
  AttemptStatus,
  commitAttemptResult,
  failAttempt,
  getAttempt,
  markAttemptRunning,
  markAttemptUnknown,
  noteEvidence,
  openAttempt,
  type AttemptRecord,
} from '../ledger/attempts';
import { getJob, getJobInput } from '../ledger/jobs';
import { ProviderCallError, type CallFailure } from '../providers/types';
import type { AttemptKind, AttemptOutcome } from '../temporal/contract';
import type { ActivityDeps } from '.';

export type OpenedAttempt = { kind: 'opened' | 'live'; attemptId: string; status: AttemptStatus } | { kind: 'terminal' };

export function createAttemptActivities(deps: ActivityDeps) {
  const { db, metrics } = deps;
  const clock = deps.clock ?? { now: () => new Date() };

  async function outcomeOf(attemptId: string, extra: Partial<AttemptOutcome> = {}): Promise<AttemptOutcome> {
    const attempt = (await getAttempt(db, attemptId))!;
    const job = await getJob(db, attempt.jobId);
    return { status: attempt.status, jobTerminal: job ? isTerminal(job.status) : true, ...(attempt.errorClass ? { class: attempt.errorClass } : {}), ...extra };
  }

  /** An answer (live or found by lookup) through the contract, then into the result slot by compare-and-swap. */
  async function settleAnswer(attempt: AttemptRecord, operationName: string, content: string, raw: unknown): Promise<AttemptOutcome> {
    const operation = deps.operations.get(operationName);
    if (!operation) throw new Error(`operation ${operationName} is not registered`);
    const check = checkOutput(operation, content);
    if (!check.ok) {
      metrics.contractViolations.inc({ operation: operationName, provider: attempt.provider });
      await failAttempt(db, attempt.id, {
        class: 'contract_violation',
        detail: check.violations.join('; '),
        evidence: { violations: check.violations, output: check.excerpt },
      });
      metrics.attemptOutcomes.inc({ operation: operationName, provider: attempt.provider, status: 'failed', class: 'contract_violation' });
      return outcomeOf(attempt.id);
    }
    // With effects to run, the job is not done yet: its result waits for their receipts.
    const committed = await commitAttemptResult(db, attempt.id, check.output, { terminal: !operation.effects?.length });
    if (committed === 'discarded') metrics.lateResultsDiscarded.inc({ operation: operationName, provider: attempt.provider });
    metrics.attemptOutcomes.inc({ operation: operationName, provider: attempt.provider, status: committed, class: '' });
    return outcomeOf(attempt.id);
  }

  async function recordFailure(attempt: AttemptRecord, operation: string, failure: CallFailure): Promise<AttemptOutcome> {
    if (failure.outcome === 'failed') {
      await failAttempt(db, attempt.id, { class: failure.class, detail: failure.detail, evidence: failure.httpStatus ? { httpStatus: failure.httpStatus } : undefined });
      metrics.attemptOutcomes.inc({ operation, provider: attempt.provider, status: 'failed', class: failure.class });
      return outcomeOf(attempt.id, failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {});
    }
    await markAttemptUnknown(db, attempt.id, { class: failure.class, detail: failure.detail });
    metrics.attemptsUnknown.inc({ operation, provider: attempt.provider, cause: failure.class });
    return outcomeOf(attempt.id);
  }

  return {
    /** Opens the job's next attempt; the database refuses while another is live (invariant 3). */
    async openAttempt(opening: { jobId: string; provider: string; model: string; kind: AttemptKind }): Promise<OpenedAttempt> {
      const result = await openAttempt(db, opening);
      if (result.kind === 'terminal') return { kind: 'terminal' };
      if (result.kind === 'opened') {
        const job = await getJob(db, opening.jobId);
        metrics.attemptsStarted.inc({ operation: job?.operation ?? '', provider: opening.provider, kind: opening.kind });
      }
      return { kind: result.kind, attemptId: result.attempt.id, status: result.attempt.status };
    },

    /**
     * Sends one attempt's request to its provider: no retries here (a retry is
     * a new attempt). Classifies what happened and writes it to the ledger; an
     * answer enters the job only through the compare-and-swap, so a zombie of
     * this activity, finishing after Temporal gave up on it, loses if anything
     * changed since the attempt opened.
     */
    async callProvider(attemptId: string): Promise<AttemptOutcome> {
      const attempt = await getAttempt(db, attemptId);
      if (!attempt) throw new Error(`attempt ${attemptId} is not in the ledger`);
      const job = await getJob(db, attempt.jobId);
      const input = await getJobInput(db, attempt.jobId);
      if (!job || !input) throw new Error(`job ${attempt.jobId} is not in the ledger`);
      const operation = deps.operations.get(job.operation);
      const provider = deps.providers.get(attempt.provider);
      if (!operation || !provider) {
        await failAttempt(db, attemptId, { class: 'not_configured', detail: `${operation ? 'provider' : 'operation'} ${operation ? attempt.provider : job.operation} is not configured` });
        return outcomeOf(attemptId);
      }
      // The prompt must render and fit this model's window; if not, nothing is sent.
      const render = checkRender(operation, attempt.model, input);
      if (!render.ok) {
        await failAttempt(db, attemptId, { class: 'prompt_render', detail: render.problems.join('; '), evidence: { templateHash: render.templateHash, promptTokens: render.promptTokens } });
        return outcomeOf(attemptId);
      }
      const messages = render.messages!;
      // From here on the request may be sent: the ledger says so first.
      if (!(await markAttemptRunning(db, attemptId))) return outcomeOf(attemptId);

      const context = Context.current();
      const beat = setInterval(() => context.heartbeat(), Math.max(200, Math.floor(deps.attempts.heartbeatTimeoutMs / 3)));
      let answer;
      try {
        answer = await provider.complete({
          model: attempt.model,
          messages,
          requestId: attemptId,
          timeoutMs: deps.attempts.timeoutMs,
          temperature: 0,
          signal: context.cancellationSignal,
        });
      } catch (err) {
        // Anything we cannot classify may have executed: unknown, never failed.
        const failure: CallFailure =
          err instanceof ProviderCallError ? err.failure : { outcome: 'unknown', class: 'connection_lost', detail: (err as Error).message ?? String(err) };
        return await recordFailure(attempt, job.operation, failure);
      } finally {
        clearInterval(beat);
      }
      // A ledger error from here on fails this activity; the workflow then asks the ledger (attemptTimedOut).
      return settleAnswer(attempt, job.operation, answer.content, answer.raw);
    },

    /**
     * Temporal gave up on callProvider (its worker was lost or it overran). A
     * request not yet marked sent provably never went out; a sent one is unknown.
     */
    async attemptTimedOut(attemptId: string): Promise<AttemptOutcome> {
      const attempt = await getAttempt(db, attemptId);
      if (!attempt) throw new Error(`attempt ${attemptId} is not in the ledger`);
      const job = await getJob(db, attempt.jobId);
      if (attempt.status === AttemptStatus.starting) {
        await failAttempt(db, attemptId, { class: 'not_sent', detail: 'the worker was lost before the request was sent' });
      } else if (attempt.status === AttemptStatus.running) {
        await markAttemptUnknown(db, attemptId, { class: 'worker_lost', detail: 'the provider call did not report back in time (worker lost or overran)' });
        metrics.attemptsUnknown.inc({ operation: job?.operation ?? '', provider: attempt.provider, cause: 'worker_lost' });
      }
      return outcomeOf(attemptId);
    },

    /**
     * Looks for evidence of what an unknown attempt did: the ledger first (did
     * it write a result after all?), then the provider's lookup by request id.
     * Leaves the attempt unknown when neither can tell.
     */
    async reconcileAttempt(attemptId: string): Promise<AttemptOutcome> {
      const attempt = await getAttempt(db, attemptId);
      if (!attempt) throw new Error(`attempt ${attemptId} is not in the ledger`);
      const job = await getJob(db, attempt.jobId);
      const operation = job?.operation ?? '';
      if (attempt.status !== AttemptStatus.unknown) {
        // An operator's resolution was counted by the API; anything else moved it through the ledger (a late commit).
        if (!attempt.resolution) metrics.attemptsResolved.inc({ operation, via: 'ledger', outcome: attempt.status });
        return outcomeOf(attemptId);
      }
      if (!job || isTerminal(job.status)) return outcomeOf(attemptId);
      const provider = deps.providers.get(attempt.provider);
      if (!provider?.lookup) return outcomeOf(attemptId);
      let found;
      try {
        found = await provider.lookup(attemptId);
      } catch (err) {
        await noteEvidence(db, attemptId, { lastLookup: { at: clock.now().toISOString(), error: (err as Error).message } });
        return outcomeOf(attemptId);
      }
      if (!found.found) {
        await failAttempt(db, attemptId, {
          class: 'not_executed',
          detail: 'the provider has no record of the request',
          evidence: { lookup: { at: clock.now().toISOString(), found: false } },
        });
        metrics.attemptsResolved.inc({ operation, via: 'provider_lookup', outcome: 'failed' });
        return outcomeOf(attemptId);
      }
      if (found.status === 'executing') return outcomeOf(attemptId);
      await noteEvidence(db, attemptId, { lookup: { at: clock.now().toISOString(), found: true, status: 'completed' } });
      const outcome = await settleAnswer(attempt, operation, found.content, found.raw);
      metrics.attemptsResolved.inc({ operation, via: 'provider_lookup', outcome: outcome.status });
      return outcome;
    },
  };
}
