/**
 * One entries trial: a principal of its own; its app sends each intent
 * through the official SDK, a burst of clients at once, the first answers
 * cut on the way back; a process killed while they wait, if drawn; the
 * operator on call until every job ended; a conflicting message on used
 * keys; a replay of every intent; then the observation and the checks.
 */
import { ApiClient } from '../api-client';
import { sleep, type RunContext, type TrialEvent } from '../context';
import { openWorkflows, readGatewayLedger } from '../gateway/observe';
import { runOperator } from '../gateway/operator';
import { createTrialPrincipal } from '../gateway/principal';
import { saveHistory } from '../histories';
import { TERMINAL } from '../job-view';
import { timedTrial } from '../round';
import { SETTINGS } from '../settings';
import type { RegisteredOperation } from '../../src/operations/operation';
import { checkEntriesTrial, jobIdOfAnswer, type EntriesViolation } from './checks';
import { entriesFaultKinds } from './draw';
import type { EntriesObservation } from './observation';
import { isClean, type EntriesPlan, type EntriesProcessFault, type EntryIntentPlan } from './plan';
import { EntriesApp } from './sdk-app';

export interface EntriesContext extends RunContext {
  aliases: ReadonlyMap<string, RegisteredOperation>;
}

export interface EntriesTrialRecord {
  plan: EntriesPlan;
  kinds: string[];
  ran: Record<string, boolean>;
  notRun: Record<string, string>;
  events: TrialEvent[];
  observation?: EntriesObservation;
  violations: EntriesViolation[];
  durationMs: number;
  error?: string;
}

/** Runs one trial; never throws (a failure of the suite itself is recorded as `error`). */
export function runEntriesTrial(ctx: EntriesContext, plan: EntriesPlan, options: { settleMs: number }): Promise<EntriesTrialRecord> {
  const record: EntriesTrialRecord = { plan, kinds: entriesFaultKinds(plan), ran: {}, notRun: {}, events: [], violations: [], durationMs: 0 };
  return timedTrial(record, (into, startedAt) => execute(ctx, plan, options, into, startedAt));
}

async function execute(ctx: EntriesContext, plan: EntriesPlan, options: { settleMs: number }, record: EntriesTrialRecord, startedAt: number): Promise<void> {
  const { stack } = ctx;
  const note = (what: string): number => {
    const at = Date.now();
    record.events.push({ at, what });
    return at;
  };
  const deadline = startedAt + options.settleMs;
  const token = await createTrialPrincipal(stack.db, plan.principal);
  const app = new EntriesApp(stack.apiUrl, token);
  for (const intent of plan.intents) app.cutFirst(intent.key, intent.cuts);

  let sending = plan.intents.length;
  const sends = plan.intents.map(async (intent) => {
    try {
      await sleep(intent.startMs);
      await Promise.all(Array.from({ length: intent.burst }, (_, k) => app.untilAnswered(intent, `submit:${intent.key}#${k}`, deadline)));
      if (intent.conflict) await app.call(intent, `conflict:${intent.key}`, { text: `${intent.text} One more thing, please.`, stream: false });
    } finally {
      sending--;
    }
  });
  const jobIds = (): string[] => [...new Set(app.record.exchanges.map((e) => e.jobId).filter((id): id is string => id !== undefined))];
  const client = new ApiClient(stack.apiUrl);
  const operator = runOperator(
    {
      client,
      operatorKey: stack.operatorKey,
      principal: plan.principal,
      downstream: { commentsOf: () => [] },
      hedge: (alias) => ctx.aliases.get(alias)?.retry?.hedge,
      minAttemptMs: (alias) => ctx.aliases.get(alias)?.deadline?.minAttemptMs ?? 1_000,
      maxAttempts: SETTINGS.maxAttempts,
      outcome: 'failed',
      raceFor: () => undefined,
      note,
    },
    jobIds,
    (views) => sending === 0 && jobIds().every((id) => TERMINAL.has(views.get(id)?.status ?? '')),
    deadline,
  );
  const [, settled, struck] = await Promise.all([Promise.all(sends), operator, strike(ctx, plan.fault, startedAt, note)]);
  note(`settled: ${[...settled.views.values()].filter((v) => TERMINAL.has(v.status)).length} of ${jobIds().length} jobs terminal`);

  // A process may still act once its answer comes (a late answer, a hedge): give it time to show before looking.
  await sleep(500);
  const ledgerNow = await readGatewayLedger(stack.db, plan.principal);
  for (const intent of plan.intents) {
    const job = ledgerNow.jobs.find((j) => j.idempotencyKey === intent.key);
    if (job && TERMINAL.has(job.status)) await app.call(intent, `replay:${intent.key}`, { stream: false });
  }

  record.observation = await observe(ctx, plan, app, startedAt);
  if (ctx.historiesDir) {
    for (const job of record.observation.jobs) {
      const problem = await saveHistory(stack.temporal, ctx.historiesDir, plan.trial, job.workflowId);
      if (problem) note(problem);
    }
  }
  record.violations = checkEntriesTrial(record.observation);
  judge(record, struck);
}

/** Kills the API or the worker at its time, and starts it again after its pause. */
async function strike(ctx: EntriesContext, fault: EntriesProcessFault, startedAt: number, note: (what: string) => number): Promise<{ struckAt?: number }> {
  if (fault.kind === 'none') return {};
  await sleep(startedAt + fault.atMs - Date.now());
  const { stack, windows } = ctx;
  if (fault.kind === 'kill-worker') {
    const worker = stack.workers[0];
    if (!worker.running) return {};
    const struckAt = note(`SIGKILL ${worker.name} (pid ${worker.process?.pid})`);
    await worker.kill();
    await sleep(fault.restartAfterMs);
    await worker.start();
    note(`${worker.name} restarted`);
    return { struckAt };
  }
  const struckAt = note(`SIGKILL api (pid ${stack.api.process?.pid})`);
  const window = { what: 'api' as const, from: struckAt, to: Number.MAX_SAFE_INTEGER };
  windows.push(window);
  await stack.api.kill();
  await sleep(fault.restartAfterMs);
  await stack.api.start();
  window.to = note('api restarted');
  return { struckAt };
}

async function observe(ctx: EntriesContext, plan: EntriesPlan, app: EntriesApp, startedAt: number): Promise<EntriesObservation> {
  const { stack } = ctx;
  const ledger = await readGatewayLedger(stack.db, plan.principal);
  return {
    principal: plan.principal,
    intents: plan.intents.map((intent: EntryIntentPlan) => ({ label: intent.label, key: intent.key, alias: intent.alias, protocol: intent.protocol, clean: isClean(intent) })),
    exchanges: app.record.exchanges,
    calls: app.record.calls,
    windows: ctx.windows,
    crashes: stack.crashes.filter((crash) => crash.at >= startedAt),
    workerKilled: plan.fault.kind === 'kill-worker',
    jobs: ledger.jobs,
    attempts: ledger.attempts,
    effects: ledger.effects,
    settlements: ledger.settlements,
    workflows: await openWorkflows(stack.temporal, ledger.jobs),
    settings: { maxAttempts: SETTINGS.maxAttempts },
  };
}

/** Per fault kind, whether it acted: a fault that could not is counted as not run, never as a pass. */
function judge(record: EntriesTrialRecord, struck: { struckAt?: number }): void {
  const obs = record.observation;
  if (!obs) return;
  const reached = (provider: string) => obs.attempts.some((a) => a.provider === provider);
  for (const kind of record.kinds) {
    const [family = '', what = ''] = kind.split(':');
    let verdict: [boolean, string];
    if (family === 'entry') {
      const [protocol, streamed] = what.split(' ');
      verdict = [obs.calls.some((c) => c.protocol === protocol && c.stream === (streamed === 'stream') && c.answer && jobIdOfAnswer(c.answer.id)), `no ${what} call was answered`];
    } else if (family === 'primary') verdict = [reached('sim-primary'), 'no attempt reached sim-primary'];
    else if (family === 'backup') verdict = [reached('sim-backup'), 'no attempt reached sim-backup'];
    else if (kind === 'sdk-storm') verdict = [obs.intents.some((i) => new Set(obs.calls.filter((c) => c.key === i.key && c.label.startsWith('submit:') && c.answer).map((c) => c.label)).size >= 2), 'no key was answered to two clients'];
    else if (kind === 'answer-cut') verdict = [obs.exchanges.some((e) => e.cut && e.jobId), 'no answer naming a job was cut'];
    else if (kind === 'conflict') verdict = [obs.calls.some((c) => c.conflicting && c.error?.status === 409), 'no conflicting message was refused'];
    else if (kind === 'kill-api' || kind === 'kill-worker') verdict = [struck.struckAt !== undefined, 'the process was not running'];
    else verdict = [true, ''];
    record.ran[kind] = verdict[0];
    if (!verdict[0]) record.notRun[kind] = verdict[1];
  }
}
