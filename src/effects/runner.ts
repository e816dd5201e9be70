import type { Pool } from 'pg';
import { inTransaction } from '../db/pool';
import {
  beginEffectTry,
  claimEffect,
  EffectPhase,
  getEffect,
  lockJobOfEffect,
  noteEffectAmbiguous,
  noteEffectNotPerformed,
  noteLookup,
  noteLookupFailure,
  renewLease,
  settleEffectAndJob,
  settleEffectLocked,
  takeOverEffect,
  type EffectRecord,
} from '../ledger/effects';
import { getJob, getJobInput, getJobOutput } from '../ledger/jobs';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import { finishedBySettlement, finishJobLocked, resultOnSettlement } from './finish';
import { afterJobBlocked, afterJobEnded } from '../canary/job-ended';
import { appendEvent, JobEventType } from '../ledger/events';
import { effectTrust } from './verify/trust';
import type { DrillStanding } from '../ledger/effect-verifications';
import type { EffectAdapter, EffectContext } from './types';
import { prepared } from '../db/prepared';

export interface EffectSettings {
  /** How long a claim is held before another owner may take it over. */
  leaseMs: number;
  /** Tries in all, across owners, while the downstream says "not performed" (429, 503, refused). */
  maxTries: number;
  backoffMs: number;
  /** One downstream call's budget: a try is started only while it fits before the caller's deadline. */
  callTimeoutMs?: number;
  /**
   * Failed receipt lookups (across owners, one per lease) after which
   * recovery stops asking: it repeats the send when that is safe, and
   * otherwise hands the effect to an operator (invariant 8).
   */
  maxLookupFailures?: number;
  /** How long an effect's verification holds (invariant 14: recovery relies only on claims a current drill shows). */
  verificationMaxAgeMs?: number;
}

/** How long a verification of an effect holds when the settings name no age. */
export const DEFAULT_VERIFICATION_MAX_AGE_MS = 7 * 24 * 3_600_000;

/** The bound on failed receipt lookups when the settings name none. */
export const DEFAULT_MAX_LOOKUP_FAILURES = 10;

export interface EffectRunnerDeps {
  db: Pool;
  metrics: Metrics;
  adapters: ReadonlyMap<string, EffectAdapter>;
  /** For the job's terminal write once its last effect settles (the effects' order, the result's shape). */
  operations: OperationRegistry;
  settings: EffectSettings;
}

/** Where an effect stands for the workflow, with its job. */
export interface EffectState {
  status: EffectRecord['status'] | 'absent';
  leaseRemainingMs: number;
  /** The job is terminal: nothing more is to be done for it. */
  jobTerminal: boolean;
  jobStatus: string;
  receipt?: Record<string, unknown>;
  error?: Record<string, unknown>;
}

/** Options of one call: who acts, until when, and what cancels it. */
export interface EffectCall {
  owner: string;
  signal?: AbortSignal;
  /** Epoch ms by which the caller must have returned (its activity's timeout); no try or wait is begun past it. */
  deadlineMs?: number;
}

/** The deployment has no adapter for an effect: nothing was claimed, and no retry will change that. */
export class EffectNotConfiguredError extends Error {
  override name = 'EffectNotConfiguredError';
}

const whyNot = (standing: DrillStanding): string => (standing.current ? 'verified' : standing.why);

/** The reason a review names, by the path recovery took. */
const WHY = {
  no_lookup: 'the effect can be neither looked up nor safely repeated',
  lookup_failing: 'the receipt lookup keeps failing',
} as const;

/** How long one reading of an effect's lookup standing decides how its claims are born (claimsSending). */
export const TRUST_READ_MS = 30_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs a job's effects through the ledger: claim before the effect, perform
 * with the downstream idempotency key, settle with the receipt (and, for the
 * last one, the job's terminal write in the same transaction); and recovery
 * of stale claims that looks the receipt up first and never redoes blindly.
 */
export function createEffectRunner(deps: EffectRunnerDeps) {
  const { db, metrics, settings } = deps;
  const callTimeoutMs = settings.callTimeoutMs ?? Math.floor(settings.leaseMs / 4);
  const maxLookupFailures = settings.maxLookupFailures ?? DEFAULT_MAX_LOOKUP_FAILURES;
  const verificationMaxAgeMs = settings.verificationMaxAgeMs ?? DEFAULT_VERIFICATION_MAX_AGE_MS;
  /** Whether each effect's lookup held a current pass when last read, and until when that reading is used (epoch ms). */
  const lookupTrusted = new Map<string, { trusted: boolean; untilMs: number }>();

  /**
   * Invariant 14, the repeat gate: a send that may have happened is repeated
   * only when the dedupe drill holds a current pass; otherwise the effect goes
   * to review, and the job's history names the verification that was missing.
   */
  async function repeatOrReview(effect: EffectRecord, call: EffectCall, adapter: EffectAdapter, why: string, maybePerformed: boolean): Promise<EffectState> {
    if (!adapter.repeatSafe) {
      metrics.effectsRecovered.inc({ effect: effect.name, result: 'needs_review' });
      return settle(effect, call.owner, 'needs_review', { error: { class: `${why}_unsafe_to_repeat`, detail: `${WHY[why as keyof typeof WHY] ?? why}, and repeating is not safe: an operator must decide` } });
    }
    const trust = await effectTrust(db, adapter, verificationMaxAgeMs);
    if (trust.dedupe.current) {
      metrics.effectsRecovered.inc({ effect: effect.name, result: 'repeated' });
      return execute(effect, call, undefined, maybePerformed);
    }
    return refuse(effect, call, `its deduplication is not verified (${trust.dedupe.why})`, 'dedupe');
  }

  /** Sends an effect to review because recovery would rely on a claim no current drill shows; the history says which. */
  async function refuse(effect: EffectRecord, call: EffectCall, detail: string, claim: 'dedupe' | 'lookup', receipt?: Record<string, unknown>): Promise<EffectState> {
    metrics.effectsRecovered.inc({ effect: effect.name, result: 'repeat_refused' });
    await appendEvent(db, effect.jobId, JobEventType.effectRepeatRefused, { name: effect.name, claim, detail, ...(receipt ? { foundReceipt: receipt } : {}) });
    return settle(effect, call.owner, 'needs_review', {
      error: { class: 'unverified_claim', detail: `recovery would rely on ${detail}: an operator must decide (onceflow effects verify)`, ...(receipt ? { foundReceipt: receipt } : {}) },
    });
  }

  async function stateOf(jobId: string, name: string): Promise<EffectState> {
    const [effect, job] = await Promise.all([getEffect(db, jobId, name), getJob(db, jobId)]);
    const jobTerminal = !job || job.terminalAt !== null;
    const base = { jobTerminal, jobStatus: job?.status ?? 'gone' };
    if (!effect) return { status: 'absent', leaseRemainingMs: 0, ...base };
    return {
      status: effect.status,
      leaseRemainingMs: effect.leaseRemainingMs,
      ...base,
      ...(effect.receipt ? { receipt: effect.receipt } : {}),
      ...(effect.error ? { error: effect.error } : {}),
    };
  }

  async function contextFor(jobId: string, effect: EffectRecord, signal?: AbortSignal): Promise<EffectContext> {
    const [job, input, output] = await Promise.all([getJob(db, jobId), getJobInput(db, jobId), getJobOutput(db, jobId)]);
    if (!job || !input || !output) throw new Error(`job ${jobId} has no winning output to perform ${effect.name} with`);
    return { jobId, operation: job.operation, input, output: output as Record<string, unknown>, key: effect.key, signal };
  }

  function adapterFor(name: string): EffectAdapter {
    const adapter = deps.adapters.get(name);
    if (!adapter) throw new EffectNotConfiguredError(`effect ${name} has no adapter in this deployment`);
    return adapter;
  }

  /**
   * The effect's terminal write by its lease holder and, in the same
   * transaction, the job's when this settles it: succeeded once every effect
   * did, failed when this one failed (invariant 7: the receipt and the result
   * are stored before anyone is told).
   */
  async function settle(effect: EffectRecord, owner: string, status: 'succeeded' | 'failed' | 'needs_review', fields: { receipt?: Record<string, unknown>; error?: Record<string, unknown> }, context?: EffectContext): Promise<EffectState> {
    const settlement = { effectId: effect.id, owner, status, ...fields };
    const known = context ? { operation: context.operation, output: context.output, settled: { name: effect.name, status, ...fields } } : undefined;
    // The operation's only effect, succeeded: the settlement and the job's terminal write are one call.
    const ending = known ? resultOnSettlement(deps.operations, known) : undefined;
    const finished = ending
      ? finishedBySettlement(await settleEffectAndJob(db, settlement, ending))
      : await inTransaction(db, async (tx) => {
          // The settlement's call locks the job row first; the row stays held for the terminal write.
          if (!(await settleEffectLocked(tx, settlement))) return undefined;
          return finishJobLocked(tx, effect.jobId, deps.operations, known);
        });
    if (finished === undefined) return stateOf(effect.jobId, effect.name);
    if (status === 'needs_review') {
      metrics.effectsNeedsReview.inc({ effect: effect.name });
      await afterJobBlocked(db, effect.jobId);
    } else metrics.effectsSettled.inc({ effect: effect.name, status });
    const { outcome } = finished;
    // Counted from what the terminal write returned, when it did: no read of the job after it.
    if (outcome !== 'open') await afterJobEnded(db, metrics, effect.jobId, undefined, finished.ended);
    // What this transaction wrote is what the ledger says now: no need to read it back.
    return { status, leaseRemainingMs: 0, jobTerminal: outcome !== 'open', jobStatus: outcome === 'open' ? 'running' : outcome, ...fields };
  }

  /**
   * Performs an effect its caller holds the lease of, and settles what can be
   * settled. `maybePerformed`: an earlier try may have acted and nothing proved
   * it did not (a repeat after lookups that could not answer), so a "no" from
   * the downstream proves nothing either: it goes to review, never to failed.
   */
  async function execute(effect: EffectRecord, call: EffectCall, known?: EffectContext, maybePerformed = false, tryBegun = false): Promise<EffectState> {
    const adapter = adapterFor(effect.name);
    const context = known ?? (await contextFor(effect.jobId, effect, call.signal));
    if (adapter.performInTransaction) {
      // The write, its settlement and the job's terminal write commit together, or none does.
      const finished = await inTransaction(db, async (tx) => {
        await lockJobOfEffect(tx, effect.id);
        const receipt = await adapter.performInTransaction!(tx, context);
        if (!(await settleEffectLocked(tx, { effectId: effect.id, owner: call.owner, status: 'succeeded', receipt }))) throw new Error(`lost the lease of ${effect.name}`);
        return finishJobLocked(tx, effect.jobId, deps.operations);
      });
      metrics.effectsSettled.inc({ effect: effect.name, status: 'succeeded' });
      if (finished.outcome !== 'open') await afterJobEnded(db, metrics, effect.jobId, undefined, finished.ended);
      return stateOf(effect.jobId, effect.name);
    }
    // A claim born `sending` (see claimsSending) is its first try, begun by the commit that claimed it.
    let begun = tryBegun ? effect.tries : undefined;
    for (;;) {
      // A caller that was given up on (its activity timed out or was cancelled) sends nothing:
      // the claim stays as it is (`claimed`: whoever recovers it performs it; `sending`: its receipt is looked up first).
      if (call.signal?.aborted) return stateOf(effect.jobId, effect.name);
      // Invariant 8: the ledger says `sending` before anything goes out.
      const tries = begun ?? (await beginEffectTry(db, effect.id, call.owner));
      begun = undefined;
      if (tries === undefined) return stateOf(effect.jobId, effect.name);
      const result = await adapter.perform!(context);
      switch (result.kind) {
        case 'done':
          return settle(effect, call.owner, 'succeeded', { receipt: result.receipt }, context);
        case 'rejected':
          metrics.downstreamFailures.inc({ effect: effect.name, class: result.class });
          if (maybePerformed) return settle(effect, call.owner, 'needs_review', { error: { class: 'repeat_rejected', detail: `an earlier try may have acted (its lookup could not tell), and the repeat was turned away: ${result.detail}` } }, context);
          return settle(effect, call.owner, 'failed', { error: { class: result.class, detail: result.detail } }, context);
        case 'ambiguous':
          // It may have happened: the claim stays pending; recovery asks for the receipt once the lease runs out.
          metrics.downstreamFailures.inc({ effect: effect.name, class: result.class });
          await noteEffectAmbiguous(db, effect.id, call.owner, { class: result.class, detail: result.detail });
          return stateOf(effect.jobId, effect.name);
        case 'not_performed': {
          metrics.downstreamFailures.inc({ effect: effect.name, class: result.class });
          if (tries >= settings.maxTries) {
            if (maybePerformed) return settle(effect, call.owner, 'needs_review', { error: { class: 'repeat_rejected', detail: `an earlier try may have acted (its lookup could not tell), and the repeat was turned away ${tries} times: ${result.detail}` } }, context);
            return settle(effect, call.owner, 'failed', { error: { class: result.class, detail: `${result.detail}; gave up after ${tries} tries` } }, context);
          }
          const error = { class: result.class, detail: result.detail };
          const delayMs = Math.max(result.retryAfterMs ?? 0, settings.backoffMs * 2 ** (tries - 1));
          const fitsHere = call.deadlineMs === undefined || Date.now() + delayMs + callTimeoutMs + 200 < call.deadlineMs;
          if (!fitsHere) {
            // A wait longer than this call may last (a long Retry-After) is the ledger's to keep:
            // the lease runs until the next try, and whoever holds the effect then tries again.
            await noteEffectNotPerformed(db, effect.id, call.owner, error, delayMs);
            return stateOf(effect.jobId, effect.name);
          }
          if (!(await noteEffectNotPerformed(db, effect.id, call.owner, error))) return stateOf(effect.jobId, effect.name);
          await sleep(delayMs);
          if (!(await renewLease(db, effect.id, call.owner, settings.leaseMs))) return stateOf(effect.jobId, effect.name);
        }
      }
    }
  }

  return {
    /**
     * Claims the effect and, if this caller won the claim, performs it.
     * Otherwise reports the existing claim (pending with its lease, or settled).
     * @throws EffectNotConfiguredError before claiming, when no adapter exists.
     */
    async perform(jobId: string, name: string, call: EffectCall): Promise<EffectState> {
      adapterFor(name);
      const claim = await claimEffect(db, { jobId, name, owner: call.owner, leaseMs: settings.leaseMs });
      if (!claim.claimed) return stateOf(jobId, name);
      return execute(claim.effect, call);
    },

    /**
     * Performs an effect the caller has just claimed (with the winning
     * answer, in one transaction), with the job's input and output it holds;
     * a claim born `sending` is its first try already marked.
     */
    async performClaimed(effect: EffectRecord, call: EffectCall, context: Omit<EffectContext, 'key' | 'signal'>): Promise<EffectState> {
      return execute(effect, call, { ...context, key: effect.key, signal: call.signal }, false, effect.phase === EffectPhase.sending);
    },

    /**
     * Whether the claim of `name` that comes with a winning answer may be
     * born `sending`, its first try marked in the same commit: only for an
     * effect sent over the wire whose receipt lookup holds a current pass of
     * its drills (invariant 14), so that a worker lost between the commit and
     * the send leaves a claim recovery settles by that lookup (invariant 8),
     * never one it must hand to an operator. The standing is read at most
     * once per `TRUST_READ_MS` per effect: a reading gone stale meanwhile
     * costs only that, in the rare loss between commit and send, the lookup's
     * own check at recovery decides (a refusal to rely on it sends the effect
     * to review); it never lets anything be sent twice.
     */
    async claimsSending(name: string): Promise<boolean> {
      const adapter = deps.adapters.get(name);
      if (!adapter?.perform || adapter.performInTransaction || !adapter.lookup || !adapter.verifiable) return false;
      const nowMs = Date.now();
      const known = lookupTrusted.get(name);
      if (known && nowMs < known.untilMs) return known.trusted;
      const { lookup } = await effectTrust(db, adapter, verificationMaxAgeMs, nowMs);
      const untilMs = nowMs + (lookup.current ? Math.min(TRUST_READ_MS, lookup.verifiedAt.getTime() + verificationMaxAgeMs - nowMs) : TRUST_READ_MS);
      lookupTrusted.set(name, { trusted: lookup.current, untilMs });
      return lookup.current;
    },

    /**
     * Recovers a stale pending effect: takes the expired lease over; performs
     * it when the ledger shows nothing was sent (or the downstream refused);
     * otherwise asks the downstream for a receipt by key first, and only then
     * settles. Performs a sent effect again only when that is safe; otherwise
     * it goes to review.
     */
    async recover(jobId: string, name: string, call: EffectCall): Promise<EffectState> {
      const adapter = adapterFor(name);
      const stale = await getEffect(db, jobId, name);
      if (!stale || stale.status !== 'pending') return stateOf(jobId, name);
      const effect = await takeOverEffect(db, { effectId: stale.id, owner: call.owner, leaseMs: settings.leaseMs });
      if (!effect) return stateOf(jobId, name);
      if (effect.phase !== EffectPhase.sending) {
        // Claimed but never sent, or refused before the downstream acted: nothing happened yet.
        metrics.effectsRecovered.inc({ effect: name, result: effect.phase === EffectPhase.claimed ? 'not_sent' : 'not_performed' });
        return execute(effect, call);
      }
      if (adapter.lookup) {
        let found;
        try {
          found = await adapter.lookup(effect.key, await contextFor(jobId, effect, call.signal));
        } catch (err) {
          // Nothing concluded: the claim stays pending under this owner and is tried again after its lease, up to the bound.
          const message = (err as Error).message ?? String(err);
          metrics.downstreamFailures.inc({ effect: name, class: 'lookup_failed' });
          const failures = await noteLookupFailure(db, effect.id, call.owner, message);
          if (failures === undefined || failures < maxLookupFailures) {
            metrics.effectsRecovered.inc({ effect: name, result: 'lookup_failed' });
            return stateOf(jobId, name);
          }
          // The lookup will not tell: repeat when the downstream's deduplication is verified, else an operator decides.
          if (adapter.repeatSafe) return repeatOrReview(effect, call, adapter, 'lookup_failing', true);
          metrics.effectsRecovered.inc({ effect: name, result: 'needs_review' });
          return settle(effect, call.owner, 'needs_review', {
            error: { class: 'lookup_failing', detail: `the receipt lookup failed ${failures} times (last: ${message.slice(0, 300)}), and repeating is not safe: an operator must decide` },
          });
        }
        await noteLookup(db, effect.id, call.owner, found.found);
        // What the lookup says is relied on only when its drills hold a current pass.
        const trust = await effectTrust(db, adapter, verificationMaxAgeMs);
        if (found.found) {
          if (!trust.lookup.current) return refuse(effect, call, `a receipt its lookup found, and that lookup is not verified (${trust.lookup.why})`, 'lookup', found.receipt);
          metrics.receiptsFound.inc({ effect: name });
          metrics.effectsRecovered.inc({ effect: name, result: 'receipt_found' });
          return settle(effect, call.owner, 'succeeded', { receipt: { ...found.receipt, foundBy: 'lookup' } });
        }
        // A verified "not found" says the downstream never took it: sending it is its first send, up to
        // the tries one claim has (a downstream that fails every try without acting is not tried for ever).
        if (trust.lookup.current) {
          metrics.effectsRecovered.inc({ effect: name, result: 'not_received' });
          if (effect.tries >= settings.maxTries) {
            return settle(effect, call.owner, 'failed', {
              error: { class: 'not_received', detail: `the downstream took none of ${effect.tries} tries (its verified lookup finds none): the effect did not happen; last: ${String(effect.error?.detail ?? effect.error?.class ?? 'no answer')}` },
            });
          }
          return execute(effect, call);
        }
        if (adapter.repeatSafe && trust.dedupe.current) {
          metrics.effectsRecovered.inc({ effect: name, result: 'repeated' });
          return execute(effect, call, undefined, true);
        }
        if (!adapter.repeatSafe) {
          return refuse(effect, call, `"not found" from a lookup that is not verified (${whyNot(trust.lookup)}), and repeating is not safe`, 'lookup');
        }
        return refuse(effect, call, `"not found" from a lookup that is not verified (${whyNot(trust.lookup)}), or its deduplication, which is not verified either (${whyNot(trust.dedupe)})`, 'dedupe');
      }
      // Nothing can tell whether the first try acted: a "no" to a repeat proves nothing.
      return repeatOrReview(effect, call, adapter, 'no_lookup', true);
    },

    inspect: stateOf,
  };
}

export type EffectRunner = ReturnType<typeof createEffectRunner>;
