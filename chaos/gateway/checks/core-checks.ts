/**
 * The core round's invariants that apply to a gateway trial, over several
 * jobs and, for a reopened job, several runs.
 */
import type { Exchange } from '../../api-client';
import { canonical } from '../../checks';
import type { GatewayObservation, GwJob } from '../observation';
import type { GatewayViolation } from './kinds';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

interface JobBody {
  id: string;
  status: string;
  result?: unknown;
  error?: unknown;
}

const jobBody = (exchange: Exchange): JobBody | undefined => {
  const body = exchange.body as JobBody | undefined;
  return (exchange.status === 200 || exchange.status === 202) && body && typeof body.id === 'string' && typeof body.status === 'string' ? body : undefined;
};

/** The exchange's Idempotency-Key, as the trial labels submits: `submit:<key>` and `replay:<key>`. */
const keyOf = (exchange: Exchange): string | undefined => /^(?:submit|replay):(.+)$/.exec(exchange.label)?.[1];

const describeAttempts = (obs: Pick<GatewayObservation, 'attempts'>, jobId: string): string =>
  obs.attempts.filter((a) => a.jobId === jobId).map((a) => `#${a.seq} ${a.provider} ${a.status}${a.errorClass ? ` (${a.errorClass})` : ''}`).join(', ') || 'none';

export function checkOneJob(obs: GatewayObservation): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const intent of obs.intents) {
    const jobs = obs.jobs.filter((j) => j.operation === intent.operation && j.idempotencyKey === intent.key);
    const answered = obs.exchanges.filter((e) => keyOf(e) === intent.key);
    const ids = new Set(answered.map(jobBody).filter((b) => b !== undefined).map((b) => b.id));
    if (jobs.length > 1) violations.push({ kind: 'one-job', detail: `key ${intent.key} has ${jobs.length} jobs: ${jobs.map((j) => j.id).join(', ')}` });
    if (jobs.length === 0 && ids.size > 0) violations.push({ kind: 'one-job', detail: `key ${intent.key} was answered 2xx (job ${[...ids][0]}) but the ledger has no job for it` });
    if (ids.size > 1) violations.push({ kind: 'one-job', detail: `2xx answers to key ${intent.key} named ${ids.size} jobs: ${[...ids].join(', ')}` });
    else if (ids.size === 1 && jobs[0] && !ids.has(jobs[0].id)) violations.push({ kind: 'one-job', detail: `2xx answers to key ${intent.key} named ${[...ids][0]}; the ledger has ${jobs[0].id}` });
  }
  return violations;
}

export function checkOneWinner(obs: Pick<GatewayObservation, 'jobs' | 'attempts'>): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const job of obs.jobs) {
    const winners = obs.attempts.filter((a) => a.jobId === job.id && a.status === 'succeeded');
    if (winners.length > 1) violations.push({ kind: 'one-winner', detail: `job ${job.id} has ${winners.length} succeeded attempts: ${winners.map((a) => `#${a.seq} ${a.provider}`).join(', ')}` });
    if (job.status === 'succeeded' && !winners.some((a) => a.id === job.completedBy)) {
      violations.push({ kind: 'one-winner', detail: `job ${job.id} succeeded, completed by ${job.completedBy ?? 'nothing'}, which is not a succeeded attempt` });
    }
  }
  return violations;
}

/** Invariant 13 per run: every ended run has one bill, the open one none. */
export function checkBills(obs: Pick<GatewayObservation, 'jobs' | 'attempts' | 'settlements'>): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const job of obs.jobs) {
    for (let run = 1; run <= job.run; run++) {
      const bills = obs.settlements.filter((s) => s.jobId === job.id && s.run === run);
      const ended = run < job.run || TERMINAL.has(job.status);
      const name = `job ${job.id} run ${run}`;
      if (!ended) {
        if (bills.length > 0) violations.push({ kind: 'one-bill', detail: `${name} is ${job.status} but has a settlement` });
        continue;
      }
      const bill = bills[0];
      if (bills.length !== 1 || !bill) {
        violations.push({ kind: 'one-bill', detail: `${name} ended but has ${bills.length} settlements` });
        continue;
      }
      // An earlier run ended failed: that is what let the same intent reopen it.
      const status = run < job.run ? 'failed' : job.status;
      const attempts = obs.attempts.filter((a) => a.jobId === job.id && a.run === run).length;
      if (bill.jobStatus !== status) violations.push({ kind: 'one-bill', detail: `${name} is ${status} but was settled as ${bill.jobStatus}` });
      if (bill.attempts !== attempts) violations.push({ kind: 'one-bill', detail: `${name} has ${attempts} attempts but its settlement counts ${bill.attempts}` });
      if (status !== 'succeeded' && Number(bill.billable) !== 0) violations.push({ kind: 'one-bill', detail: `${name} is ${status} and billed ${bill.billable}` });
      if (Number(bill.billable) > Number(bill.providerCost)) violations.push({ kind: 'one-bill', detail: `${name} is billed ${bill.billable}, more than its attempts cost (${bill.providerCost})` });
    }
  }
  return violations;
}

export function checkProgress(obs: Pick<GatewayObservation, 'jobs' | 'attempts' | 'effects' | 'workflows'>): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const job of obs.jobs.filter((j) => !TERMINAL.has(j.status))) {
    const attempts = obs.attempts.filter((a) => a.jobId === job.id && a.run === job.run);
    const effects = obs.effects.filter((e) => e.jobId === job.id);
    const state = `job ${job.id} (${job.operation}) is ${job.status}; attempts: ${describeAttempts(obs, job.id)}; effects: ${effects.map((e) => `${e.name} ${e.status}`).join(', ') || 'none'}`;
    const workflow = obs.workflows[job.id];
    if (workflow !== 'RUNNING') violations.push({ kind: 'stuck', detail: `${state}; its workflow is ${workflow ?? 'unknown'}` });
    else if (!attempts.some((a) => a.status === 'unknown') && !effects.some((e) => e.status === 'needs_review')) violations.push({ kind: 'waiting', detail: `${state}: waiting for no stated reason` });
    else violations.push({ kind: 'unsettled', detail: `${state}: still waiting after the operator acted` });
  }
  return violations;
}

export function checkServerErrors(obs: GatewayObservation): GatewayViolation[] {
  const unexplained = obs.exchanges.filter((e) => e.status >= 500 && !obs.windows.some((w) => e.startedAt <= w.to && e.endedAt >= w.from));
  if (!unexplained.length) return [];
  const first = unexplained[0]!;
  const problem = first.body as { title?: string; detail?: string } | undefined;
  return [{ kind: '5xx', detail: `${unexplained.length} × 5xx; first: ${first.method} ${first.path} (${first.label}) → ${first.status} ${problem?.title ?? ''}: ${problem?.detail ?? ''}` }];
}

function stored(job: GwJob): string {
  return canonical({ id: job.id, status: job.status, result: job.status === 'succeeded' ? job.result : undefined, error: job.status === 'failed' ? job.error : undefined });
}

/**
 * Replays of terminal jobs equal what the ledger stores. A terminal answer
 * given earlier is compared too, except for an operation that reopens failed
 * jobs: the same key may then be answered run 1's failure and later run 2's end.
 */
export function checkReplays(obs: GatewayObservation): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const exchange of obs.exchanges) {
    const key = keyOf(exchange);
    const intent = obs.intents.find((i) => i.key === key);
    const job = intent && obs.jobs.find((j) => j.operation === intent.operation && j.idempotencyKey === intent.key);
    if (!job || !TERMINAL.has(job.status)) continue;
    const body = jobBody(exchange);
    const isReplay = exchange.label.startsWith('replay:');
    if (isReplay && (!body || exchange.status !== 200 || !exchange.replayed)) {
      violations.push({ kind: 'replay', detail: `the replay of ${key} was answered ${exchange.status || 'with a network error'}, Idempotent-Replayed ${exchange.replayed}` });
      continue;
    }
    if (!body || body.id !== job.id || !TERMINAL.has(body.status)) continue;
    if (!isReplay && obs.settings.reopenable.includes(job.operation)) continue;
    const shown = canonical({ id: body.id, status: body.status, result: body.result, error: body.error });
    if (shown !== stored(job)) violations.push({ kind: 'replay', detail: `${exchange.label} answer ${shown} differs from the stored ${stored(job)}` });
  }
  return violations.slice(0, 3);
}

export function checkAttemptCap(obs: Pick<GatewayObservation, 'jobs' | 'attempts'> & { settings: Pick<GatewayObservation['settings'], 'maxAttempts'> }): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const job of obs.jobs) {
    for (let run = 1; run <= job.run; run++) {
      const count = obs.attempts.filter((a) => a.jobId === job.id && a.run === run).length;
      if (count > obs.settings.maxAttempts) violations.push({ kind: 'attempts', detail: `job ${job.id} run ${run} has ${count} attempts, more than ${obs.settings.maxAttempts}: ${describeAttempts(obs, job.id)}` });
    }
  }
  return violations;
}

export function checkCrashes(obs: Pick<GatewayObservation, 'crashes'>): GatewayViolation[] {
  return obs.crashes.map((crash) => ({ kind: 'crash' as const, detail: crash.detail }));
}
