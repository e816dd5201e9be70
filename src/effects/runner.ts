import type { Pool } from 'pg';
import { inTransaction } from '../db/pool';
import { claimEffect, getEffect, lockJobOfEffect, renewLease, settleEffect, settleEffectLocked, takeOverEffect, type EffectRecord } from '../ledger/effects';
import { getJob, getJobInput, getJobOutput } from '../ledger/jobs';
import type { Metrics } from '../metrics/metrics';
import type { EffectAdapter, EffectContext } from './types';

export interface EffectSettings {
  /** How long a claim is held before another owner may take it over. */
  leaseMs: number;
  /** Tries of one owner when the downstream says "not performed" (429, 503, refused). */
  maxTries: number;
  backoffMs: number;
}

export interface EffectRunnerDeps {
  db: Pool;
  metrics: Metrics;
  adapters: ReadonlyMap<string, EffectAdapter>;
  settings: EffectSettings;
}

/** Where an effect stands for the workflow. */
export interface EffectState {
  status: EffectRecord['status'] | 'absent';
  leaseRemainingMs: number;
  receipt?: Record<string, unknown>;
  error?: Record<string, unknown>;
}

export const stateOf = (effect: EffectRecord | undefined): EffectState =>
  effect
    ? { status: effect.status, leaseRemainingMs: effect.leaseRemainingMs, ...(effect.receipt ? { receipt: effect.receipt } : {}), ...(effect.error ? { error: effect.error } : {}) }
    : { status: 'absent', leaseRemainingMs: 0 };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs a job's effects through the ledger: claim before the effect, perform
 * with the downstream idempotency key, settle with the receipt; and recovery
 * of stale claims that looks the receipt up first and never redoes blindly.
 */
export function createEffectRunner(deps: EffectRunnerDeps) {
  const { db, metrics, settings } = deps;

  async function contextFor(jobId: string, effect: EffectRecord, signal?: AbortSignal): Promise<EffectContext> {
    const [job, input, output] = await Promise.all([getJob(db, jobId), getJobInput(db, jobId), getJobOutput(db, jobId)]);
    if (!job || !input || !output) throw new Error(`job ${jobId} has no winning output to perform ${effect.name} with`);
    return { jobId, operation: job.operation, input, output: output as Record<string, unknown>, key: effect.key, signal };
  }

  function adapterFor(name: string): EffectAdapter {
    const adapter = deps.adapters.get(name);
    if (!adapter) throw new Error(`effect ${name} has no adapter configured`);
    return adapter;
  }

  async function settle(effect: EffectRecord, owner: string, status: 'succeeded' | 'failed' | 'needs_review', fields: { receipt?: Record<string, unknown>; error?: Record<string, unknown> }): Promise<EffectState> {
    await settleEffect(db, { effectId: effect.id, owner, status, ...fields });
    if (status === 'needs_review') metrics.effectsNeedsReview.inc({ effect: effect.name });
    else metrics.effectsSettled.inc({ effect: effect.name, status });
    return stateOf(await getEffect(db, effect.jobId, effect.name));
  }

  /** Performs an effect its caller holds the lease of, and settles what can be settled. */
  async function execute(effect: EffectRecord, owner: string, signal?: AbortSignal): Promise<EffectState> {
    const adapter = adapterFor(effect.name);
    const context = await contextFor(effect.jobId, effect, signal);
    if (adapter.performInTransaction) {
      // The write and its settlement commit together, or neither does.
      await inTransaction(db, async (tx) => {
        await lockJobOfEffect(tx, effect.id);
        const receipt = await adapter.performInTransaction!(tx, context);
        if (!(await settleEffectLocked(tx, { effectId: effect.id, owner, status: 'succeeded', receipt }))) throw new Error(`lost the lease of ${effect.name}`);
      });
      metrics.effectsSettled.inc({ effect: effect.name, status: 'succeeded' });
      return stateOf(await getEffect(db, effect.jobId, effect.name));
    }
    for (let tryNumber = 1; ; tryNumber++) {
      const result = await adapter.perform!(context);
      switch (result.kind) {
        case 'done':
          return settle(effect, owner, 'succeeded', { receipt: result.receipt });
        case 'rejected':
          metrics.downstreamFailures.inc({ effect: effect.name, class: result.class });
          return settle(effect, owner, 'failed', { error: { class: result.class, detail: result.detail } });
        case 'ambiguous':
          // It may have happened: leave the claim pending; recovery asks for the receipt once the lease runs out.
          metrics.downstreamFailures.inc({ effect: effect.name, class: result.class });
          return stateOf(await getEffect(db, effect.jobId, effect.name));
        case 'not_performed':
          metrics.downstreamFailures.inc({ effect: effect.name, class: result.class });
          if (tryNumber >= settings.maxTries) {
            return settle(effect, owner, 'failed', { error: { class: result.class, detail: `${result.detail}; gave up after ${tryNumber} tries` } });
          }
          // The downstream said it did not act, and we still hold the claim: trying again with the same key is safe.
          await sleep(Math.max(result.retryAfterMs ?? 0, settings.backoffMs * 2 ** (tryNumber - 1)));
          if (!(await renewLease(db, effect.id, owner, settings.leaseMs))) return stateOf(await getEffect(db, effect.jobId, effect.name));
      }
    }
  }

  return {
    /**
     * Claims the effect and, if this caller won the claim, performs it.
     * Otherwise reports the existing claim (pending with its lease, or settled).
     */
    async perform(jobId: string, name: string, owner: string, signal?: AbortSignal): Promise<EffectState> {
      adapterFor(name);
      const claim = await claimEffect(db, { jobId, name, owner, leaseMs: settings.leaseMs });
      if (!claim.claimed) return stateOf(claim.effect);
      return execute(claim.effect, owner, signal);
    },

    /**
     * Recovers a stale pending effect: takes the expired lease over, asks the
     * downstream for a receipt by key first, and only then settles. Performs
     * again only when that is safe; otherwise the effect goes to review.
     */
    async recover(jobId: string, name: string, owner: string, signal?: AbortSignal): Promise<EffectState> {
      const adapter = adapterFor(name);
      const stale = await getEffect(db, jobId, name);
      if (!stale || stale.status !== 'pending') return stateOf(stale);
      const effect = await takeOverEffect(db, { effectId: stale.id, owner, leaseMs: settings.leaseMs });
      if (!effect) return stateOf(await getEffect(db, jobId, name));
      if (adapter.lookup) {
        let found;
        try {
          found = await adapter.lookup(effect.key, await contextFor(jobId, effect, signal));
        } catch (err) {
          // Nothing concluded: the claim stays pending under this owner and is tried again later.
          metrics.downstreamFailures.inc({ effect: name, class: 'lookup_failed' });
          metrics.effectsRecovered.inc({ effect: name, result: 'lookup_failed' });
          void err;
          return stateOf(await getEffect(db, jobId, name));
        }
        if (found.found) {
          metrics.receiptsFound.inc({ effect: name });
          metrics.effectsRecovered.inc({ effect: name, result: 'receipt_found' });
          return settle(effect, owner, 'succeeded', { receipt: { ...found.receipt, foundBy: 'lookup' } });
        }
        if (adapter.repeatSafe) {
          metrics.effectsRecovered.inc({ effect: name, result: 'repeated' });
          return execute(effect, owner, signal);
        }
        metrics.effectsRecovered.inc({ effect: name, result: 'needs_review' });
        return settle(effect, owner, 'needs_review', {
          error: { class: 'not_found_unsafe_to_repeat', detail: 'the downstream has no receipt for the key, and repeating is not safe: an operator must decide' },
        });
      }
      if (adapter.repeatSafe) {
        metrics.effectsRecovered.inc({ effect: name, result: 'repeated' });
        return execute(effect, owner, signal);
      }
      metrics.effectsRecovered.inc({ effect: name, result: 'needs_review' });
      return settle(effect, owner, 'needs_review', {
        error: { class: 'no_lookup_unsafe_to_repeat', detail: 'the effect can be neither looked up nor safely repeated: an operator must decide' },
      });
    },

    async inspect(jobId: string, name: string): Promise<EffectState> {
      return stateOf(await getEffect(db, jobId, name));
    },
  };
}

export type EffectRunner = ReturnType<typeof createEffectRunner>;
