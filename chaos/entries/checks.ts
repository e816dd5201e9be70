/**
 * Every check of the entries round, on one observation. Pure functions: the
 * self-test feeds them fabricated data. The core's that apply to jobs of an
 * alias are the gateway round's own (one winner, one bill, progress, the
 * attempt cap, crashes).
 */
import { checkAttemptCap, checkBills, checkCrashes, checkOneWinner, checkProgress } from '../gateway/checks/core-checks';
import type { GatewayViolation } from '../gateway/checks/kinds';
import type { GwJob } from '../gateway/observation';
import type { EntriesViolation, EntriesViolationKind } from './kinds';
import type { EntriesObservation, EntryIntentFacts } from './observation';
import type { SdkCall } from './sdk-app';

export { ENTRIES_VIOLATION_KINDS, type EntriesViolation, type EntriesViolationKind } from './kinds';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

const jobOf = (obs: EntriesObservation, intent: EntryIntentFacts): GwJob | undefined => obs.jobs.find((j) => j.operation === intent.alias && j.idempotencyKey === intent.key);

/** The job an answer's id names: `chatcmpl-<job>` (OpenAI), `msg_<job>` (Anthropic). */
export const jobIdOfAnswer = (id: string): string | undefined => /^(?:chatcmpl-|msg_)([0-9a-f-]{36})$/.exec(id)?.[1];

const winnerOf = (obs: EntriesObservation, job: GwJob) => obs.attempts.find((a) => a.id === job.completedBy);

const inWindow = (obs: EntriesObservation, from: number, to: number): boolean => obs.windows.some((w) => from <= w.to && to >= w.from);

/** The calls an intent's app made with its own message (not the conflicting one). */
const ownCalls = (obs: EntriesObservation, intent: EntryIntentFacts): SdkCall[] => obs.calls.filter((c) => c.key === intent.key && !c.conflicting);

export function checkOneJobPerKey(obs: EntriesObservation): EntriesViolation[] {
  const violations: EntriesViolation[] = [];
  for (const intent of obs.intents) {
    const jobs = obs.jobs.filter((j) => j.idempotencyKey === intent.key);
    if (jobs.length > 1) violations.push({ kind: 'one-job', detail: `key ${intent.key} has ${jobs.length} jobs: ${jobs.map((j) => j.id).join(', ')}` });
    const named = new Set([
      ...obs.exchanges.filter((e) => e.key === intent.key && e.jobId).map((e) => e.jobId!),
      ...obs.calls.filter((c) => c.key === intent.key && c.answer).map((c) => jobIdOfAnswer(c.answer!.id) ?? `(an id naming no job: ${c.answer!.id})`),
    ]);
    const job = jobs[0];
    if (!job && named.size > 0) violations.push({ kind: 'one-job', detail: `key ${intent.key} was answered for ${[...named][0]}, but the ledger has no job for it` });
    if (named.size > 1) violations.push({ kind: 'one-job', detail: `answers to key ${intent.key} named ${named.size} jobs: ${[...named].join(', ')}` });
    else if (job && named.size === 1 && !named.has(job.id)) violations.push({ kind: 'one-job', detail: `answers to key ${intent.key} named ${[...named][0]}; the ledger has ${job.id}` });
  }
  return violations;
}

/** Cuts, storms and retries never start an attempt: an intent its providers served at once has one. */
export function checkOneAttempt(obs: EntriesObservation): EntriesViolation[] {
  // A killed worker may leave its attempt unknown, and a new one may follow once the lookup found nothing.
  if (obs.workerKilled) return [];
  const violations: EntriesViolation[] = [];
  for (const intent of obs.intents.filter((i) => i.clean)) {
    const job = jobOf(obs, intent);
    if (!job) continue;
    const attempts = obs.attempts.filter((a) => a.jobId === job.id);
    if (attempts.length > 1) {
      const requests = obs.exchanges.filter((e) => e.key === intent.key).length;
      violations.push({ kind: 'one-attempt', detail: `key ${intent.key} (no provider fault, ${requests} requests) has ${attempts.length} attempts: ${attempts.map((a) => `#${a.seq} ${a.provider} ${a.status}`).join(', ')}` });
    }
  }
  return violations;
}

export function checkAnswers(obs: EntriesObservation): EntriesViolation[] {
  const violations: EntriesViolation[] = [];
  for (const intent of obs.intents) {
    const job = jobOf(obs, intent);
    for (const call of ownCalls(obs, intent).filter((c) => c.answer)) {
      const answer = call.answer!;
      const what = `${call.label} (${call.protocol}${call.stream ? ', streamed' : ''})`;
      if (!job || job.status !== 'succeeded') {
        violations.push({ kind: 'answer', detail: `${what} returned an answer, but the job of its key is ${job?.status ?? 'missing'}` });
        continue;
      }
      const stored = String((job.result as { content?: unknown } | null)?.content ?? '');
      if (answer.text !== stored) violations.push({ kind: 'answer', detail: `${what} returned ${JSON.stringify(answer.text.slice(0, 80))}; job ${job.id} stored ${JSON.stringify(stored.slice(0, 80))}` });
      const winner = winnerOf(obs, job);
      if (winner && answer.inputTokens !== undefined && (answer.inputTokens !== winner.inputTokens || answer.outputTokens !== winner.outputTokens)) {
        violations.push({ kind: 'answer', detail: `${what} read usage ${answer.inputTokens}/${answer.outputTokens}; the winning attempt #${winner.seq} metered ${winner.inputTokens}/${winner.outputTokens}` });
      }
    }
  }
  return violations.slice(0, 5);
}

export function checkEntryReplays(obs: EntriesObservation): EntriesViolation[] {
  const violations: EntriesViolation[] = [];
  for (const intent of obs.intents) {
    const job = jobOf(obs, intent);
    if (!job || !TERMINAL.has(job.status)) continue;
    for (const call of obs.calls.filter((c) => c.key === intent.key && c.label.startsWith('replay:'))) {
      if (job.status === 'succeeded' && !call.answer) {
        violations.push({ kind: 'replay', detail: `the replay of ${intent.key} (job succeeded) raised ${call.error?.name} ${call.error?.status ?? ''}: ${call.error?.message}` });
        continue;
      }
      if (job.status !== 'succeeded') {
        const expected = job.status === 'failed' ? 502 : 409;
        if (call.answer || call.error?.status !== expected) violations.push({ kind: 'replay', detail: `the replay of ${intent.key} (job ${job.status}) ${call.answer ? 'returned an answer' : `raised ${call.error?.status ?? call.error?.name}`}, not the ${expected}` });
        continue;
      }
      const replayed = obs.exchanges.filter((e) => e.label === call.label && e.status === 200 && !e.cut);
      if (!replayed.length || !replayed.every((e) => e.replayed)) violations.push({ kind: 'replay', detail: `the replay of ${intent.key} was not marked Idempotent-Replayed: true` });
      // Byte for byte: every whole JSON answer to the key is the same bytes.
      const bodies = new Set(obs.exchanges.filter((e) => e.key === intent.key && e.status === 200 && e.body !== undefined && !obs.calls.some((c) => c.conflicting && c.label === e.label)).map((e) => e.body!));
      if (bodies.size > 1) violations.push({ kind: 'replay', detail: `key ${intent.key} got ${bodies.size} different answers: ${[...bodies].map((b) => b.slice(0, 120)).join(' | ')}` });
    }
  }
  return violations;
}

export function checkConflicts(obs: EntriesObservation): EntriesViolation[] {
  const violations: EntriesViolation[] = [];
  for (const call of obs.calls.filter((c) => c.conflicting)) {
    if (call.answer) violations.push({ kind: 'conflict', detail: `${call.label}: another message on a used key was answered (${call.answer.id})` });
    else if (call.error?.status !== 409 && !(call.error?.status === undefined && inWindow(obs, call.startedAt, call.endedAt))) {
      violations.push({ kind: 'conflict', detail: `${call.label}: another message on a used key raised ${call.error?.name} ${call.error?.status ?? ''}, not the SDK's conflict error: ${call.error?.message}` });
    } else if (call.error?.status === 409 && /still running|not ended yet/i.test(call.error.message)) {
      violations.push({ kind: 'conflict', detail: `${call.label}: another message on a used key was taken for the running job's retry: ${call.error.message}` });
    }
  }
  return violations;
}

export function checkUnanswered(obs: EntriesObservation): EntriesViolation[] {
  const violations: EntriesViolation[] = [];
  for (const intent of obs.intents) {
    const job = jobOf(obs, intent);
    if (!job || !TERMINAL.has(job.status)) continue;
    const submits = ownCalls(obs, intent).filter((c) => c.label.startsWith('submit:'));
    // Per client of the burst, its last call is what the app was left with.
    const last = new Map<string, SdkCall>();
    for (const call of submits) last.set(call.label, call);
    for (const call of last.values()) {
      const expected = job.status === 'succeeded' ? 'an answer' : job.status === 'failed' ? 'a 502' : 'a 409';
      const got = call.answer ? 'an answer' : call.error?.status === 502 ? 'a 502' : call.error?.status === 409 && !/still running|not ended yet/i.test(call.error.message) ? 'a 409' : undefined;
      if (got !== expected) violations.push({ kind: 'unanswered', detail: `${call.label}: job ${job.id} is ${job.status}, the app was left with ${got ?? `${call.error?.name} ${call.error?.status ?? ''}: ${call.error?.message}`}` });
    }
  }
  return violations.slice(0, 5);
}

export function checkRefusals(obs: EntriesObservation): EntriesViolation[] {
  const refused = obs.exchanges.filter((e) => e.status >= 400 && e.status < 500 && e.status !== 409);
  if (!refused.length) return [];
  const first = refused[0]!;
  return [{ kind: 'refused', detail: `${refused.length} × 4xx; first: ${first.label} → ${first.status} ${first.body?.slice(0, 200) ?? ''}` }];
}

export function checkEntryServerErrors(obs: EntriesObservation): EntriesViolation[] {
  const failed = new Set(obs.jobs.filter((j) => j.status === 'failed').map((j) => j.id));
  const unexplained = obs.exchanges.filter((e) => e.status >= 500 && !inWindow(obs, e.startedAt, e.endedAt) && !(e.status === 502 && e.jobId && failed.has(e.jobId)));
  if (!unexplained.length) return [];
  const first = unexplained[0]!;
  return [{ kind: '5xx', detail: `${unexplained.length} × 5xx; first: ${first.label} → ${first.status} ${first.body?.slice(0, 200) ?? ''}` }];
}

const shared = (violations: GatewayViolation[]): EntriesViolation[] => violations.map((v) => ({ kind: v.kind as EntriesViolationKind, detail: v.detail }));

export function checkEntriesTrial(obs: EntriesObservation): EntriesViolation[] {
  return [
    ...checkOneJobPerKey(obs),
    ...shared(checkOneWinner(obs)),
    ...shared(checkBills(obs)),
    ...checkOneAttempt(obs),
    ...checkAnswers(obs),
    ...checkEntryReplays(obs),
    ...checkConflicts(obs),
    ...checkUnanswered(obs),
    ...checkRefusals(obs),
    ...checkEntryServerErrors(obs),
    ...shared(checkProgress(obs)),
    ...shared(checkAttemptCap(obs)),
    ...shared(checkCrashes(obs)),
  ];
}
