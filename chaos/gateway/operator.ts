/**
 * The gateway round's operator, on call for every job of a trial: resolves
 * an attempt unknown for longer than any late answer can take (or, where the
 * plan says so, early, racing that answer), settles an effect in review from
 * what the downstream recorded for its key, and meanwhile notes, once a wait
 * that only an operator can end has lasted a while, whether the job showed
 * it (its status, the operators' list).
 */
import type { ApiClient } from '../api-client';
import { sleep } from '../context';
import { readJob, TERMINAL, type JobView } from '../job-view';
import type { HedgePolicy } from '../../src/operations/operation';
import type { GatewayDownstream } from './downstream';
import type { AttentionSample } from './observation';

/** Beyond the longest late answer drawn (attempt timeout + 2.5 s) and a reconcile interval. */
const UNKNOWN_PATIENCE_MS = 8_000;
/** A wait is sampled once it has lasted this long: longer than a workflow step and a reconcile interval. */
export const SAMPLE_AFTER_MS = 1_500;
/** An effect in review is settled after this (after its sample). */
const REVIEW_PATIENCE_MS = 2_500;

interface AttemptInView {
  id: string;
  seq: number;
  status: string;
  run?: number;
}

type View = Omit<JobView, 'attempts'> & { operation?: string; run?: number; createdAt?: string; deadline?: string; attempts: AttemptInView[] };

export interface OperatorSettings {
  client: ApiClient;
  operatorKey: string;
  principal: string;
  /** Where an effect in review is looked up (a round without effects has none to look up). */
  downstream: Pick<GatewayDownstream, 'commentsOf'>;
  hedge: (operation: string) => HedgePolicy | undefined;
  minAttemptMs: (operation: string) => number;
  maxAttempts: number;
  outcome: 'failed' | 'cancelled';
  /** Per job id: resolve its first unknown attempt this long after it is seen (a drawn race). */
  raceFor: (jobId: string) => number | undefined;
  note: (what: string) => void;
}

/** Why only an operator can move the job now, if that is so. */
export function operatorOnly(view: View, settings: Pick<OperatorSettings, 'hedge' | 'minAttemptMs' | 'maxAttempts'>, nowMs: number): 'unknown' | 'review' | undefined {
  if (view.effects.some((e) => e.status === 'needs_review')) return 'review';
  const run = view.attempts.filter((a) => (a.run ?? 1) === (view.run ?? 1));
  const unknown = run.filter((a) => a.status === 'unknown').length;
  if (unknown === 0 || run.some((a) => a.status === 'running' || a.status === 'starting')) return undefined;
  const hedge = view.operation ? settings.hedge(view.operation) : undefined;
  if (!hedge) return 'unknown';
  const createdAtMs = Date.parse(view.createdAt ?? '');
  const deadlineMs = view.deadline ? Date.parse(view.deadline) : undefined;
  const noHedge =
    unknown >= hedge.maxConcurrent ||
    run.length >= settings.maxAttempts ||
    nowMs - createdAtMs >= hedge.budgetMs ||
    (deadlineMs !== undefined && deadlineMs - nowMs < settings.minAttemptMs(view.operation!));
  return noHedge ? 'unknown' : undefined;
}

export interface OperatorResult {
  samples: AttentionSample[];
  views: Map<string, View>;
  resolutions: number;
  raced: number;
}

/**
 * Watches every job `jobIds()` names until `finished()` (every submit
 * answered and every job terminal) or `deadline`.
 */
export async function runOperator(settings: OperatorSettings, jobIds: () => string[], finished: (views: Map<string, View>) => boolean, deadline: number): Promise<OperatorResult> {
  const result: OperatorResult = { samples: [], views: new Map(), resolutions: 0, raced: 0 };
  const unknownSince = new Map<string, number>();
  const lastTry = new Map<string, number>();
  const waitSince = new Map<string, { reason: 'unknown' | 'review'; since: number; sampled: boolean }>();
  const raced = new Set<string>();
  const { client, operatorKey } = settings;

  const resolveAttempt = async (jobId: string, attemptId: string, outcome: 'failed' | 'cancelled', label: string) => {
    const exchange = await client.request('POST', `/v1/jobs/${jobId}/attempts/${attemptId}/resolution`, { label, token: operatorKey, body: { outcome, reason: `chaos ${label}` } });
    settings.note(`${label}: job ${jobId} attempt ${attemptId} ${outcome}: HTTP ${exchange.status}`);
    return exchange.status === 200;
  };

  const sample = async (view: View, reason: 'unknown' | 'review', waitedMs: number) => {
    const status = reason === 'unknown' ? 'awaiting_resolution' : 'needs_review';
    const listing = await client.request('GET', `/v1/jobs?status=${status}&principal=${encodeURIComponent(settings.principal)}&limit=200`, { label: 'attention', token: operatorKey, timeoutMs: 5_000 });
    const listed = listing.status === 200 && ((listing.body as { jobs?: Array<{ id: string }> }).jobs ?? []).some((job) => job.id === view.id);
    result.samples.push({ at: Date.now(), jobId: view.id, reason, status: view.status, listed, waitedMs });
  };

  while (Date.now() < deadline) {
    for (const jobId of jobIds()) {
      const view = (await readJob(client, operatorKey, jobId, 'operator')) as View | undefined;
      if (!view) continue;
      result.views.set(jobId, view);
      if (TERMINAL.has(view.status)) continue;
      const now = Date.now();

      const reason = operatorOnly(view, settings, now);
      const waiting = waitSince.get(jobId);
      if (!reason) waitSince.delete(jobId);
      else if (!waiting || waiting.reason !== reason) waitSince.set(jobId, { reason, since: now, sampled: false });
      else if (!waiting.sampled && now - waiting.since >= SAMPLE_AFTER_MS) {
        waiting.sampled = true;
        await sample(view, reason, now - waiting.since);
      }

      for (const attempt of view.attempts.filter((a) => a.status === 'unknown')) {
        const since = unknownSince.get(attempt.id) ?? now;
        unknownSince.set(attempt.id, since);
        const raceMs = settings.raceFor(jobId);
        if (raceMs !== undefined && !raced.has(jobId) && now - since >= raceMs) {
          raced.add(jobId);
          if (await resolveAttempt(jobId, attempt.id, settings.outcome, 'race-resolution')) result.raced++;
          continue;
        }
        if (now - since < UNKNOWN_PATIENCE_MS || now - (lastTry.get(attempt.id) ?? 0) < 2_000) continue;
        lastTry.set(attempt.id, now);
        if (await resolveAttempt(jobId, attempt.id, settings.outcome, 'operator')) result.resolutions++;
      }

      for (const effect of view.effects.filter((e) => e.status === 'needs_review')) {
        const inReview = waitSince.get(jobId);
        if (!inReview || inReview.reason !== 'review' || now - inReview.since < REVIEW_PATIENCE_MS || now - (lastTry.get(effect.key) ?? 0) < 2_000) continue;
        lastTry.set(effect.key, now);
        // What the downstream itself holds for the key decides, as an operator looking at it would.
        const found = settings.downstream.commentsOf(effect.key)[0];
        const exchange = await client.request('POST', `/v1/jobs/${jobId}/effects/${encodeURIComponent(effect.name)}/resolution`, {
          label: 'operator',
          token: operatorKey,
          body: found
            ? { outcome: 'succeeded', reason: 'chaos operator: the downstream has the comment', receipt: { commentId: found.id } }
            : { outcome: 'failed', reason: 'chaos operator: the downstream has no comment for the key' },
        });
        settings.note(`operator settles ${effect.name} of ${jobId} ${found ? 'succeeded' : 'failed'}: HTTP ${exchange.status}`);
        if (exchange.status === 200) result.resolutions++;
      }
    }
    if (finished(result.views)) return result;
    await sleep(150);
  }
  return result;
}
