import { Context } from '@temporalio/activity';
import { afterJobBlocked, afterJobEnded } from '../canary/job-ended';
import { checkOutput, excerpt, type ContractCheck } from '../contracts/output';
import { checkRender, type RenderCheck } from '../contracts/render-check';
import { isTerminal } from '../jobs/status';
import { AttemptStatus, commitAndClaim, type CommitOutcome, failAttempt, getAttempt, getAttemptToSend, listAttempts, markAttemptRunning, markAttemptUnknown, noteEvidence, recordLateUsage, type AttemptRecord } from '../ledger/attempts';
import type { EffectRecord } from '../ledger/effects';
import type { EffectCall } from '../effects/runner';
import { listEffects } from '../ledger/effects';
import { getJob } from '../ledger/jobs';
import { ProviderCallError, type CallFailure, type ChatMessage } from '../providers/types';
import type { ProviderUsage } from '../providers/usage';
import type { AttemptUsage, MeteredUsage } from '../ledger/usage';
import type { AttemptReport } from '../temporal/contract';
import type { ActivityDeps } from './deps';
import type { RegisteredOperation } from '../operations/operation';
import { aliasSampling } from '../operations/alias';
import { effectCallOfThisActivity } from './effect-call';

/**
 * Heartbeats for the whole life of an activity, from its first line: a live
 * worker is never taken for a lost one. A local activity has no heartbeat:
 * its workflow task's timeout tells a lost worker.
 */
function startHeartbeat(heartbeatTimeoutMs: number): () => void {
  const context = Context.current();
  if (context.info.isLocal) return () => undefined;
  context.heartbeat();
  const beat = setInterval(() => context.heartbeat(), Math.max(200, Math.floor(heartbeatTimeoutMs / 3)));
  return () => clearInterval(beat);
}

/**
 * Without effects the win is the job's end, and its result is what the
 * operation's finalize makes of the output (no receipts): made before the
 * commit, so a finalize that throws on this output fails the answer as the
 * contract's own checks would, instead of the call.
 */
function finalized(operation: RegisteredOperation, check: ContractCheck, ends: boolean): ContractCheck | { ok: true; output: unknown; result: unknown } {
  if (!check.ok || !ends || !operation.finalize) return check;
  try {
    return { ...check, result: operation.finalize(check.output as never, {}) };
  } catch (err) {
    const violation = `finalize threw on this output: ${(err as Error).message ?? String(err)}`.slice(0, 500);
    return { ok: false, violations: [violation], excerpt: excerpt(JSON.stringify(check.output)) };
  }
}

export function createAttemptActivities(deps: ActivityDeps) {
  const { db, metrics } = deps;
  const clock = deps.clock ?? { now: () => new Date() };

  /** The provider's usage with the route model's price, ready for the ledger; null when the provider reported none. */
  function usageOf(attempt: AttemptRecord, reported: ProviderUsage | undefined, latencyMs?: number): AttemptUsage | null {
    if (!reported) return null;
    const price = deps.prices?.get(attempt.provider)?.get(attempt.model);
    return { ...reported, ...(latencyMs === undefined ? {} : { latencyMs }), ...(price ? { price } : {}) };
  }

  /** Counts what an attempt consumed, as the ledger recorded it (the cost as the database computed it). */
  function countUsage(attempt: Pick<AttemptRecord, 'operation' | 'provider' | 'model'>, usage: Pick<MeteredUsage, 'inputTokens' | 'outputTokens' | 'cost' | 'currency'>): void {
    const labels = { operation: attempt.operation, provider: attempt.provider, model: attempt.model };
    metrics.attemptTokens.inc({ ...labels, direction: 'input' }, usage.inputTokens);
    metrics.attemptTokens.inc({ ...labels, direction: 'output' }, usage.outputTokens);
    if (usage.cost !== null && usage.currency !== null) metrics.attemptCost.inc({ ...labels, currency: usage.currency }, Number(usage.cost));
  }

  /** Counts what an attempt consumed, read back once the ledger has recorded it. */
  async function meterUsage(attemptId: string): Promise<void> {
    const attempt = await getAttempt(db, attemptId);
    if (attempt?.usage) countUsage(attempt, attempt.usage);
  }

  /** Where an attempt and its job stand now; with the effects left to run when this attempt won. */
  async function reportOf(attemptId: string): Promise<AttemptReport> {
    const attempt = (await getAttempt(db, attemptId))!;
    const job = await getJob(db, attempt.jobId);
    const jobTerminal = job ? isTerminal(job.status) : true;
    const report: AttemptReport = { status: attempt.status, jobTerminal, jobStatus: job?.status ?? 'removed', ...(attempt.errorClass ? { class: attempt.errorClass } : {}) };
    if (job && !jobTerminal && job.completedBy === attempt.id) {
      const settled = new Set((await listEffects(db, job.id)).filter((effect) => effect.status === 'succeeded').map((effect) => effect.name));
      report.effects = (deps.operations.get(job.operation)?.effects ?? []).filter((name) => !settled.has(name));
    }
    return report;
  }

  /**
   * An answer (live, or found by lookup) through the contract, then into the
   * result slot by compare-and-swap; when it wins a job with effects, the
   * first effect is claimed in the same transaction, for `claimFor` to
   * perform. `from` is the status the attempt must still be in for a
   * violation to fail it.
   */
  async function settleAnswer(
    attempt: AttemptRecord,
    from: AttemptStatus,
    content: string,
    usage: AttemptUsage | null,
    claimFor?: EffectCall,
  ): Promise<{ outcome: CommitOutcome | 'violation'; output?: Record<string, unknown>; claimed?: EffectRecord }> {
    const operation = deps.operations.get(attempt.operation);
    if (!operation) throw new Error(`operation ${attempt.operation} is not registered`);
    const first = operation.effects?.[0];
    const check = finalized(operation, checkOutput(operation, content), !first);
    if (!check.ok) {
      metrics.contractViolations.inc({ operation: attempt.operation, provider: attempt.provider });
      const failed = await failAttempt(db, attempt.id, from, {
        class: 'contract_violation',
        detail: check.violations.join('; '),
        evidence: { violations: check.violations, output: check.excerpt },
        usage,
      });
      // An attempt that had already ended keeps its status, but what its answer cost is still recorded.
      const lateUsage = !failed && usage ? await recordLateUsage(db, attempt.id, usage) : false;
      if ((failed || lateUsage) && usage) await meterUsage(attempt.id);
      if (failed) metrics.attemptOutcomes.inc({ operation: attempt.operation, provider: attempt.provider, status: 'failed', class: 'contract_violation' });
      return { outcome: 'violation' };
    }
    // With effects to run, the job is not done yet: its result waits for their receipts.
    // Born in its first try when its receipt lookup is verified: the try's mark is no write of its own.
    const claim = first && claimFor ? { name: first, owner: claimFor.owner, leaseMs: deps.effectTimeoutMs, sending: await deps.effects.claimsSending(first) } : undefined;
    const hedged = operation.retry?.hedge !== undefined;
    const result = 'result' in check ? { result: check.result } : {};
    const { outcome, claimed, usageRecorded, ended } = await commitAndClaim(db, attempt, check.output, { terminal: !first, ...result, ...(claim ? { claim } : {}), ...(usage ? { usage } : {}), ...(hedged ? { hedged } : {}) });
    // What the commit recorded is counted as it came back: no read of the attempt after it.
    if (usageRecorded) countUsage(attempt, usageRecorded);
    // A win that ended the job (no effects), live or found by a lookup: counted and its route version checked, as every terminal write is.
    if (ended) await afterJobEnded(db, metrics, attempt.jobId, undefined, ended);
    if (outcome !== 'succeeded') metrics.lateResultsDiscarded.inc({ operation: attempt.operation, provider: attempt.provider });
    metrics.attemptOutcomes.inc({ operation: attempt.operation, provider: attempt.provider, status: outcome, class: '' });
    return { outcome, output: check.output as Record<string, unknown>, ...(claimed ? { claimed } : {}) };
  }

  /**
   * The winner's effects, in this same execution: the first was claimed with
   * the win, each later one is claimed before it is performed (invariant 7),
   * and the last one's settlement is the job's terminal write. Whatever is
   * left (an ambiguous answer, a fault, a caller given up on) the workflow's
   * effect steps carry on from the ledger.
   * @returns the job's status when these effects ended it.
   */
  async function performEffectsOfWinner(attempt: AttemptRecord, input: Record<string, unknown>, output: Record<string, unknown>, claimed: EffectRecord, call: EffectCall): Promise<string | undefined> {
    const names = deps.operations.get(attempt.operation)?.effects ?? [];
    const context = { jobId: attempt.jobId, operation: attempt.operation, input, output };
    try {
      let state = await deps.effects.performClaimed(claimed, call, context);
      for (const name of names.slice(names.indexOf(claimed.name) + 1)) {
        if (state.status !== 'succeeded' || state.jobTerminal) break;
        state = await deps.effects.perform(attempt.jobId, name, call);
      }
      return state.jobTerminal ? state.jobStatus : undefined;
    } catch (err) {
      Context.current().log.warn('effects left to the workflow', { jobId: attempt.jobId, error: (err as Error).message });
      return undefined;
    }
  }

  /**
   * Sends one attempt to its provider and writes what happened; see
   * callProvider. The caller has read the attempt (`starting`) and its job's input.
   */
  async function sendAttempt(
    attempt: AttemptRecord,
    input: Record<string, unknown>,
    deadlineLeftMs: number | null = null,
    /** The attempt's prompt as its opening already rendered and counted it. */
    rendered?: RenderCheck,
  ): Promise<AttemptReport> {
    const operation = deps.operations.get(attempt.operation);
    const provider = deps.providers.get(attempt.provider);
    if (!operation || !provider) {
      const detail = `${operation ? 'provider' : 'operation'} ${operation ? attempt.provider : attempt.operation} is not configured`;
      await failAttempt(db, attempt.id, AttemptStatus.starting, { class: 'not_configured', detail });
      return reportOf(attempt.id);
    }
    // The prompt must render and fit this model's window; if not, nothing is sent.
    const render = rendered ?? checkRender(operation, attempt.model, input, undefined, 'to-decide');
    if (!render.ok) {
      const evidence = { templateHash: render.templateHash, promptTokens: render.promptTokens };
      await failAttempt(db, attempt.id, AttemptStatus.starting, { class: 'prompt_render', detail: render.problems.join('; '), evidence });
      return reportOf(attempt.id);
    }
    // The caller's deadline bounds the call: with no time left, nothing is sent (the job fails at its next step).
    if (deadlineLeftMs !== null && deadlineLeftMs < 1) {
      await failAttempt(db, attempt.id, AttemptStatus.starting, { class: 'deadline_exceeded', detail: "the job's deadline passed before the request was sent; nothing was sent" });
      return reportOf(attempt.id);
    }
    // From here on the request may be sent: the ledger says so first (a CAS on `starting`).
    if (!(await markAttemptRunning(db, attempt.id))) return reportOf(attempt.id);
    return sendMarked(attempt, input, deadlineLeftMs, render.messages!);
  }

  /**
   * Sends an attempt the ledger has marked sent (`running`) and writes what
   * happened: its opening marked it so, after its prompt rendered to
   * `messages` and fit, or sendAttempt did.
   */
  async function sendMarked(attempt: AttemptRecord, input: Record<string, unknown>, deadlineLeftMs: number | null, messages: ChatMessage[]): Promise<AttemptReport> {
    const operation = deps.operations.get(attempt.operation)!;
    const provider = deps.providers.get(attempt.provider)!;
    let answer;
    const sentAtMs = clock.now().getTime();
    try {
      answer = await provider.complete({
        model: attempt.model,
        messages,
        requestId: attempt.id,
        // The attempt timeout, or the time left before the caller's deadline when that is shorter.
        timeoutMs: deadlineLeftMs === null ? deps.attempts.timeoutMs : Math.min(deps.attempts.timeoutMs, deadlineLeftMs),
        // An alias's caller says how it wants the answer made; an operation's contract wants the most repeatable one.
        ...(operation.alias ? aliasSampling(input) : { temperature: 0 }),
        signal: Context.current().cancellationSignal,
      });
    } catch (err) {
      // Anything we cannot classify may have executed: unknown, never failed.
      const failure: CallFailure = err instanceof ProviderCallError ? err.failure : { outcome: 'unknown', class: 'connection_lost', detail: (err as Error).message ?? String(err) };
      await recordFailure(attempt, failure);
      return reportOf(attempt.id);
    }
    // A ledger error from here on fails this activity; the ledger then finds the attempt running and makes it unknown.
    // The winner's effects get a lease's worth of this execution: what does not fit, the workflow's effect steps carry on.
    const call = { ...effectCallOfThisActivity(), deadlineMs: Date.now() + deps.effectTimeoutMs };
    const usage = usageOf(attempt, answer.usage, clock.now().getTime() - sentAtMs);
    const settled = await settleAnswer(attempt, AttemptStatus.running, answer.content, usage, call);
    if (settled.outcome !== 'succeeded') return reportOf(attempt.id);
    if (!operation.effects?.length) return { status: 'succeeded', jobTerminal: true, jobStatus: 'succeeded' };
    const ended = settled.claimed ? await performEffectsOfWinner(attempt, input, settled.output!, settled.claimed, call) : undefined;
    return ended ? { status: 'succeeded', jobTerminal: true, jobStatus: ended } : reportOf(attempt.id);
  }

  async function recordFailure(attempt: AttemptRecord, failure: CallFailure): Promise<void> {
    if (failure.outcome === 'failed') {
      const evidence = { ...(failure.httpStatus ? { httpStatus: failure.httpStatus } : {}), ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}) };
      if (await failAttempt(db, attempt.id, AttemptStatus.running, { class: failure.class, detail: failure.detail, evidence })) {
        metrics.attemptOutcomes.inc({ operation: attempt.operation, provider: attempt.provider, status: 'failed', class: failure.class });
        // A failed hedge may leave its job waiting on its unknown sibling: the canary counts it then.
        if (deps.operations.get(attempt.operation)?.retry?.hedge) await afterJobBlocked(db, attempt.jobId);
      }
      return;
    }
    if (await markAttemptUnknown(db, attempt.id, { class: failure.class, detail: failure.detail })) {
      metrics.attemptsUnknown.inc({ operation: attempt.operation, provider: attempt.provider, cause: failure.class });
      await afterJobBlocked(db, attempt.jobId);
    }
  }

  /**
   * Asks an unknown attempt's provider what it did with the request, and
   * writes what it says: never received (failed, not_executed), still
   * executing (noted), or completed (its answer through the contract and the
   * result slot's compare-and-swap). Every write is a CAS on `unknown`.
   */
  async function lookUp(attempt: AttemptRecord): Promise<void> {
    const operation = attempt.operation;
    const provider = deps.providers.get(attempt.provider);
    if (!provider?.lookup) return;
    let found;
    try {
      found = await provider.lookup(attempt.id);
    } catch (err) {
      await noteEvidence(db, attempt.id, { lastLookup: { at: clock.now().toISOString(), error: (err as Error).message } });
      return;
    }
    if (!found.found) {
      const failed = await failAttempt(db, attempt.id, AttemptStatus.unknown, {
        class: 'not_executed',
        detail: 'the provider has no record of the request',
        evidence: { lookup: { at: clock.now().toISOString(), found: false } },
      });
      if (failed) metrics.attemptsResolved.inc({ operation, via: 'provider_lookup', outcome: 'failed' });
      // An attempt that had ended (an operator's resolution stands): the look is noted, so it is not asked again.
      else await noteEvidence(db, attempt.id, { lastLookup: { at: clock.now().toISOString(), found: false } });
      return;
    }
    if (found.status === 'executing') {
      await noteEvidence(db, attempt.id, { lastLookup: { at: clock.now().toISOString(), status: 'executing' } });
      return;
    }
    const at = clock.now().toISOString();
    await noteEvidence(db, attempt.id, { lookup: { at, found: true, status: 'completed' }, lastLookup: { at, status: 'completed' } });
    // The workflow's effect steps run the winner's effects.
    await settleAnswer(attempt, AttemptStatus.unknown, found.content, usageOf(attempt, found.usage));
    const report = await reportOf(attempt.id);
    // An attempt an operator had resolved was counted then; this look only learned what it cost.
    if (!attempt.resolution) metrics.attemptsResolved.inc({ operation, via: 'provider_lookup', outcome: report.status });
  }

  return {
    sendAttempt,
    sendMarked,
    /**
     * Sends one attempt's request to its provider: no retries here (a retry is
     * a new attempt). Classifies what happened and writes it to the ledger;
     * when the answer wins the job's result slot, runs the job's effects in
     * the same execution (one activity for the whole happy path).
     * every write is a compare-and-swap on the status it leaves, and an answer
     * enters the job only through the result slot's compare-and-swap, so a
     * zombie of this activity, finishing after Temporal gave up on it, changes
     * nothing that moved on without it.
     */
    async callProvider(attemptId: string): Promise<AttemptReport> {
      const stopHeartbeat = startHeartbeat(deps.attempts.heartbeatTimeoutMs);
      try {
        const found = await getAttemptToSend(db, attemptId);
        if (!found) throw new Error(`attempt ${attemptId} is not in the ledger`);
        return await sendAttempt(found.attempt, found.input, found.deadlineLeftMs);
      } finally {
        stopHeartbeat();
      }
    },

    /**
     * Looks for evidence of what an unknown attempt did: the ledger first (did
     * it write a result after all, or did an operator resolve it?), then the
     * provider's lookup by request id. Leaves the attempt unknown when neither
     * can tell. Every write is a CAS on `unknown`, so an operator's resolution
     * made meanwhile stands (invariant 12).
     */
    async reconcileAttempt(attemptId: string): Promise<AttemptReport> {
      const attempt = await getAttempt(db, attemptId);
      if (!attempt) throw new Error(`attempt ${attemptId} is not in the ledger`);
      const operation = attempt.operation;
      if (attempt.status !== AttemptStatus.unknown) {
        // An operator's resolution was counted by the API; anything else moved it through the ledger (a late commit).
        if (!attempt.resolution) metrics.attemptsResolved.inc({ operation, via: 'ledger', outcome: attempt.status });
        return reportOf(attemptId);
      }
      const job = await getJob(db, attempt.jobId);
      if (!job || isTerminal(job.status)) return reportOf(attemptId);
      await lookUp(attempt);
      // A hedged job's other unknown attempts are asked too: one that answered must not wait behind this one.
      const hedged = deps.operations.get(operation)?.retry?.hedge !== undefined;
      const others = hedged ? (await listAttempts(db, attempt.jobId)).filter((other) => other.id !== attempt.id && other.status === AttemptStatus.unknown) : [];
      let othersMoved = false;
      for (const other of others) {
        await lookUp(other);
        if ((await getAttempt(db, other.id))?.status !== AttemptStatus.unknown) othersMoved = true;
      }
      const report = await reportOf(attemptId);
      return othersMoved ? { ...report, othersMoved } : report;
    },

    /**
     * An attempt left unknown when its job ended (a hedge's sibling, or an
     * attempt in flight when the job was cancelled), or resolved by an
     * operator before its usage was known: its provider is asked what became
     * of it, so what it cost is recorded (after settlement, as an adjustment)
     * and an answer it gave is kept as a discarded or late one. It cannot
     * win: its job has ended, or its resolution stands.
     */
    async settleLeftoverAttempt(attemptId: string): Promise<void> {
      const attempt = await getAttempt(db, attemptId);
      if (attempt?.status === AttemptStatus.unknown || (attempt?.resolution && !attempt.usage)) await lookUp(attempt);
    },
  };
}
