/**
 * The invariants, checked on what the outside shows of one settled trial
 * (an Observation). Pure functions: the self-test feeds them fabricated
 * observations, one per violation, to show that each can fire.
 */
import type { Exchange } from './api-client';
import type { JobView } from './job-view';
import type { Observation } from './observe';
import { DEFAULT_MIN_ATTEMPT_MS } from '../src/operations/operation';

/** Each kind is a column of the report. */
export const VIOLATION_KINDS = {
  'one-job': 'one job per key: every 2xx names the same job, and the intent has exactly one job',
  'conflict-409': 'the same key with another body is refused with 409',
  'one-winner': 'at most one succeeded attempt per job, and it is the one the job names',
  'dup-msg': 'at most one downstream delivery per job',
  'lost-msg': 'a succeeded job has exactly one delivery, with the messageId of its result',
  'stray-msg': 'no delivery for a job that failed or was cancelled',
  stuck: 'no job non-terminal without an open (running) workflow',
  waiting: 'no job waiting except for a stated reason (an unknown attempt, an effect in needs_review)',
  unsettled: 'every trial ends: the operator resolves what legitimately waits',
  '5xx': 'no 5xx other than while the API or its database was down',
  replay: 'every replay (same key, same body) and every terminal answer equals the stored result',
  attempts: 'no more attempts than ONCEFLOW_MAX_ATTEMPTS',
  crash: 'no process of the stack dies unless the suite killed it',
  'bad-input': 'bytes PostgreSQL cannot store (NUL, a lone surrogate) are refused with 400',
  phantom: 'an attempt the ledger failed for anything but its answer was never executed by its provider (no hidden second execution)',
  outcome: 'a job fails only for a cause the trial gave it (failing providers, a refusing downstream, an effect an operator settled as failed)',
  'one-bill': 'a terminal job has exactly one settlement, of its status and all its attempts, billing nothing unless it succeeded; an open job has none',
  deadline:
    "the caller's deadline is the one the request sent; no attempt opens with less than one attempt's minimum left; a job fails deadline_exceeded only with no attempt left unknown and no earlier than that minimum before its deadline",
} as const;
export type ViolationKind = keyof typeof VIOLATION_KINDS;

export interface Violation {
  kind: ViolationKind;
  detail: string;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** JSON with sorted keys: equal values, equal strings. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const jobBody = (exchange: Exchange): JobView | undefined => {
  const body = exchange.body as JobView | undefined;
  return (exchange.status === 200 || exchange.status === 202) && body && typeof body.id === 'string' && typeof body.status === 'string' ? body : undefined;
};

const isSubmit = (exchange: Exchange): boolean => exchange.label === 'submit' || exchange.label === 'replay';

/** No job at all is right only when the intent's deadline had passed before any submit was admitted: each was refused for it. */
function refusedForItsDeadline(obs: Observation): boolean {
  const submits = obs.exchanges.filter((e) => e.label === 'submit' && e.status !== 0);
  return (
    obs.jobs.length === 0 &&
    obs.requestDeadline !== undefined &&
    submits.length > 0 &&
    submits.every((e) => e.status === 400 && String((e.body as { type?: unknown } | undefined)?.type ?? '').endsWith('/invalid-deadline') && e.startedAt >= obs.requestDeadline!)
  );
}

export function checkOneJob(obs: Observation): Violation[] {
  const violations: Violation[] = [];
  if (obs.jobs.length !== 1 && !refusedForItsDeadline(obs)) violations.push({ kind: 'one-job', detail: `the intent has ${obs.jobs.length} jobs: ${obs.jobs.map((j) => `${j.id} (key ${j.idempotencyKey})`).join(', ') || 'none'}` });
  const ids = new Set(obs.exchanges.filter(isSubmit).map(jobBody).filter((b) => b !== undefined).map((b) => b.id));
  const job = obs.jobs.find((j) => j.idempotencyKey === obs.idempotencyKey);
  if (ids.size > 1) violations.push({ kind: 'one-job', detail: `2xx answers to one key named ${ids.size} jobs: ${[...ids].join(', ')}` });
  else if (job && ids.size === 1 && !ids.has(job.id)) violations.push({ kind: 'one-job', detail: `2xx answers named job ${[...ids][0]}, the ledger has ${job.id} for the key` });
  return violations;
}

export function checkConflict(obs: Observation): Violation[] {
  if (!obs.conflictSent || refusedForItsDeadline(obs)) return [];
  const answers = obs.exchanges.filter((e) => e.label === 'conflict');
  const last = answers[answers.length - 1];
  if (!last) return [{ kind: 'conflict-409', detail: 'the conflicting submit was never sent' }];
  const wrong = answers.filter((e) => e.status >= 200 && e.status < 300);
  if (wrong.length) return [{ kind: 'conflict-409', detail: `another body under the key was answered ${wrong[0]!.status} (job ${jobBody(wrong[0]!)?.id})` }];
  if (last.status !== 409) return [{ kind: 'conflict-409', detail: `another body under the key was answered ${last.status || 'with a network error'}, not 409` }];
  return [];
}

export function checkOneWinner(obs: Observation): Violation[] {
  const violations: Violation[] = [];
  for (const job of obs.jobs) {
    const attempts = obs.attempts.filter((a) => a.jobId === job.id);
    const winners = attempts.filter((a) => a.status === 'succeeded');
    if (winners.length > 1) violations.push({ kind: 'one-winner', detail: `job ${job.id} has ${winners.length} succeeded attempts: ${winners.map((a) => `#${a.seq} ${a.provider}`).join(', ')}` });
    if (job.status === 'succeeded' && (!job.completedBy || !winners.some((a) => a.id === job.completedBy))) {
      violations.push({ kind: 'one-winner', detail: `job ${job.id} succeeded, completed by ${job.completedBy ?? 'nothing'}, which is not a succeeded attempt` });
    }
  }
  return violations;
}

export function checkDeliveries(obs: Observation): Violation[] {
  const violations: Violation[] = [];
  const job = obs.jobs.find((j) => j.idempotencyKey === obs.idempotencyKey);
  const count = obs.deliveries.length;
  if (count > 1) violations.push({ kind: 'dup-msg', detail: `${count} deliveries: ${obs.deliveries.map((d) => d.messageId).join(', ')}` });
  if (!job) return violations;
  if (job.status === 'succeeded') {
    const messageId = job.result?.messageId;
    if (count === 0) violations.push({ kind: 'lost-msg', detail: `job ${job.id} succeeded with messageId ${String(messageId)} but the downstream has no delivery` });
    else if (!obs.deliveries.some((d) => d.messageId === messageId)) {
      violations.push({ kind: 'lost-msg', detail: `job ${job.id} names messageId ${String(messageId)}; the downstream has ${obs.deliveries.map((d) => d.messageId).join(', ')}` });
    }
  } else if (TERMINAL.has(job.status) && count > 0) {
    violations.push({ kind: 'stray-msg', detail: `job ${job.id} is ${job.status} (${JSON.stringify(job.error)}) but the downstream delivered ${obs.deliveries.map((d) => d.messageId).join(', ')}` });
  }
  return violations;
}

export function checkProgress(obs: Observation): Violation[] {
  const job = obs.jobs.find((j) => j.idempotencyKey === obs.idempotencyKey);
  if (!job || TERMINAL.has(job.status)) return [];
  const attempts = obs.attempts.map((a) => `#${a.seq} ${a.provider} ${a.status}${a.errorClass ? ` (${a.errorClass})` : ''}`).join(', ');
  const state = `job ${job.id} is ${job.status}; attempts: ${attempts || 'none'}; effects: ${obs.effects.map((e) => `${e.name} ${e.status}`).join(', ') || 'none'}`;
  if (obs.workflow !== 'RUNNING') return [{ kind: 'stuck', detail: `${state}; its workflow is ${obs.workflow ?? 'unknown'}` }];
  const unknown = obs.attempts.some((a) => a.status === 'unknown');
  const review = obs.effects.some((e) => e.status === 'needs_review');
  if (job.status === 'awaiting_resolution' && !unknown) return [{ kind: 'waiting', detail: `${state}: awaiting_resolution without an unknown attempt` }];
  if (!unknown && !review) return [{ kind: 'waiting', detail: `${state}: waiting for no stated reason` }];
  return [{ kind: 'unsettled', detail: `${state}: still waiting after the operator acted` }];
}

/** 5xx answers that no down window explains. */
export function checkServerErrors(obs: Observation): Violation[] {
  const unexplained = obs.exchanges.filter((e) => e.status >= 500 && !obs.windows.some((w) => e.startedAt <= w.to && e.endedAt >= w.from));
  if (!unexplained.length) return [];
  const first = unexplained[0]!;
  const problem = first.body as { title?: string; detail?: string } | undefined;
  return [{ kind: '5xx', detail: `${unexplained.length} × 5xx outside any down window; first: ${first.method} ${first.path} (${first.label}) → ${first.status} ${problem?.title ?? ''}: ${problem?.detail ?? ''}` }];
}

export function checkReplays(obs: Observation): Violation[] {
  const job = obs.jobs.find((j) => j.idempotencyKey === obs.idempotencyKey);
  if (!job || !TERMINAL.has(job.status)) return [];
  const stored = canonical({ id: job.id, status: job.status, result: job.status === 'succeeded' ? job.result : undefined, error: job.status === 'failed' ? job.error : undefined });
  const violations: Violation[] = [];
  for (const exchange of obs.exchanges) {
    const body = jobBody(exchange);
    if (exchange.label === 'replay') {
      if (!body) {
        violations.push({ kind: 'replay', detail: `the replay was answered ${exchange.status || 'with a network error'}` });
        continue;
      }
      if (exchange.status !== 200 || !exchange.replayed) violations.push({ kind: 'replay', detail: `the replay was answered ${exchange.status} with Idempotent-Replayed ${exchange.replayed}` });
    }
    if (!body || body.id !== job.id || !TERMINAL.has(body.status)) continue;
    const shown = canonical({ id: body.id, status: body.status, result: body.result, error: body.error });
    if (shown !== stored) violations.push({ kind: 'replay', detail: `${exchange.label} answer ${shown} differs from the stored ${stored}` });
  }
  if (!obs.exchanges.some((e) => e.label === 'replay')) violations.push({ kind: 'replay', detail: 'no replay was made' });
  return violations.slice(0, 3);
}

export function checkAttempts(obs: Observation): Violation[] {
  if (obs.jobs.length !== 1) return [];
  const count = obs.attempts.length;
  // Counted from the ledger: every attempt row, whatever the workflow thought it was.
  return count > obs.maxAttempts ? [{ kind: 'attempts', detail: `${count} attempts, more than ${obs.maxAttempts}: ${obs.attempts.map((a) => `#${a.seq} ${a.provider} ${a.status}${a.errorClass ? ` (${a.errorClass})` : ''}`).join(', ')}` }] : [];
}

export function checkCrashes(obs: Observation): Violation[] {
  return obs.crashes.map((crash) => ({ kind: 'crash' as const, detail: crash.detail }));
}

export function checkOutcome(obs: Observation): Violation[] {
  const job = obs.jobs.find((j) => j.idempotencyKey === obs.idempotencyKey);
  if (!job || job.status !== 'failed') return [];
  const attempts = obs.attempts.map((a) => `#${a.seq} ${a.provider} ${a.status}${a.errorClass ? ` (${a.errorClass})` : ''}`).join(', ');
  const state = `${JSON.stringify(job.error)}; attempts: ${attempts}; effects: ${obs.effects.map((e) => `${e.name} ${e.status}${e.resolved ? ' (by an operator)' : ''}`).join(', ') || 'none'}`;
  // Once the AI step has a winner, only a failed effect can fail the job.
  const won = obs.attempts.some((a) => a.jobId === job.id && a.status === 'succeeded');
  if (won && !obs.effects.some((e) => e.status === 'failed')) return [{ kind: 'outcome', detail: `job ${job.id} failed after its attempt won, with no failed effect: ${state}` }];
  if (!obs.expectSuccess || obs.effects.some((e) => e.status === 'failed' && e.resolved)) return [];
  return [{ kind: 'outcome', detail: `job ${job.id} failed though nothing in the trial is a reason to: ${state}` }];
}

/** Failures that come from the answer itself: the provider did execute those. */
const ANSWER_FAILURES = new Set(['contract_violation']);

export function checkPhantoms(obs: Observation): Violation[] {
  const phantoms = obs.attempts.filter(
    (a) => a.status === 'failed' && !a.resolved && !ANSWER_FAILURES.has(a.errorClass ?? '') && (a.atProvider === 'executing' || a.atProvider === 'completed'),
  );
  return phantoms.map((a) => ({ kind: 'phantom' as const, detail: `attempt #${a.seq} (${a.provider}) is failed (${a.errorClass ?? 'no class'}) but ${a.provider} shows its request ${a.atProvider}` }));
}

export function checkBadInput(obs: Observation): Violation[] {
  return obs.exchanges
    .filter((e) => e.label === 'bad-input' && e.status !== 0 && e.status !== 400)
    .slice(0, 1)
    .map((e) => ({ kind: 'bad-input' as const, detail: `${e.method} ${e.path.slice(0, 80)} with bad bytes was answered ${e.status}, not 400` }));
}

/** Invariant 13, from the ledger: one bill per terminal job, none for an open one (billing: winner, the demo's). */
export function checkBills(obs: Observation): Violation[] {
  const violations: Violation[] = [];
  for (const job of obs.jobs) {
    const bills = obs.settlements.filter((s) => s.jobId === job.id);
    if (!TERMINAL.has(job.status)) {
      if (bills.length > 0) violations.push({ kind: 'one-bill', detail: `job ${job.id} is ${job.status} but has a settlement` });
      continue;
    }
    const bill = bills[0];
    if (bills.length !== 1 || !bill) {
      violations.push({ kind: 'one-bill', detail: `${job.status} job ${job.id} has ${bills.length} settlements` });
      continue;
    }
    const attempts = obs.attempts.filter((a) => a.jobId === job.id).length;
    if (bill.jobStatus !== job.status) violations.push({ kind: 'one-bill', detail: `job ${job.id} is ${job.status} but was settled as ${bill.jobStatus}` });
    if (bill.attempts !== attempts) violations.push({ kind: 'one-bill', detail: `job ${job.id} has ${attempts} attempts but its settlement counts ${bill.attempts}` });
    if (job.status !== 'succeeded' && Number(bill.billable) !== 0) violations.push({ kind: 'one-bill', detail: `${job.status} job ${job.id} is billed ${bill.billable}` });
    if (Number(bill.billable) > Number(bill.providerCost)) violations.push({ kind: 'one-bill', detail: `job ${job.id} is billed ${bill.billable}, more than its attempts cost (${bill.providerCost})` });
  }
  return violations;
}

/** The caller's deadline, from the ledger (the database's clock on both sides). */
export function checkDeadline(obs: Observation): Violation[] {
  const violations: Violation[] = [];
  const job = obs.jobs.find((j) => j.idempotencyKey === obs.idempotencyKey);
  if (!job) return [];
  if (obs.requestDeadline !== undefined && job.deadlineAt !== obs.requestDeadline) {
    violations.push({ kind: 'deadline', detail: `the request sent the deadline ${new Date(obs.requestDeadline).toISOString()}; the job has ${job.deadlineAt === null ? 'none' : new Date(job.deadlineAt).toISOString()}` });
  }
  if (job.deadlineAt === null) return violations;
  for (const attempt of obs.attempts.filter((a) => a.jobId === job.id)) {
    const leftMs = job.deadlineAt - attempt.startedAt;
    if (leftMs < DEFAULT_MIN_ATTEMPT_MS) violations.push({ kind: 'deadline', detail: `attempt #${attempt.seq} (${attempt.provider}) opened with ${leftMs} ms left before the deadline, less than ${DEFAULT_MIN_ATTEMPT_MS} ms` });
  }
  if (job.status === 'failed' && (job.error as { type?: unknown } | null)?.type === 'deadline_exceeded') {
    const live = obs.attempts.filter((a) => a.jobId === job.id && ['starting', 'running', 'unknown'].includes(a.status));
    if (live.length) violations.push({ kind: 'deadline', detail: `job ${job.id} failed deadline_exceeded with attempt #${live[0]!.seq} still ${live[0]!.status}` });
    if (job.terminalAt !== null && job.terminalAt < job.deadlineAt - DEFAULT_MIN_ATTEMPT_MS) {
      violations.push({ kind: 'deadline', detail: `job ${job.id} failed deadline_exceeded ${job.deadlineAt - job.terminalAt} ms before its deadline` });
    }
  }
  return violations;
}

/** Every check on one trial. */
export function checkTrial(obs: Observation): Violation[] {
  return [
    ...checkOneJob(obs),
    ...checkConflict(obs),
    ...checkOneWinner(obs),
    ...checkDeliveries(obs),
    ...checkProgress(obs),
    ...checkServerErrors(obs),
    ...checkReplays(obs),
    ...checkAttempts(obs),
    ...checkCrashes(obs),
    ...checkOutcome(obs),
    ...checkPhantoms(obs),
    ...checkBadInput(obs),
    ...checkBills(obs),
    ...checkDeadline(obs),
  ];
}
