/**
 * One gateway trial: a principal of its own, its intents submitted as the
 * plan times them (a canary trial also starts two canaries and acts on them
 * as an operator), the operator on call until every job ended, replays,
 * then the observation and the checks.
 */
import { ApiClient } from '../api-client';
import { sleep, type RunContext, type TrialEvent } from '../context';
import { saveHistory } from '../histories';
import { TERMINAL } from '../job-view';
import { timedTrial } from '../round';
import { SETTINGS } from '../settings';
import { awaitLeftovers, runBudget } from './budget-run';
import { CanaryControl, readRouteVersions } from './canary-control';
import { checkGatewayTrial, type GatewayViolation } from './checks';
import type { GatewayDownstream } from './downstream';
import { gatewayFaultKinds } from './draw';
import { TrialIntents } from './intents';
import { judgeGatewayRan } from './judge';
import type { GatewayObservation, IntentFacts } from './observation';
import { openWorkflows, readUsage, trialRequests } from './observe';
import { runOperator, type OperatorResult } from './operator';
import type { GatewayPlan, IntentPlan } from './plan';
import { createTrialPrincipal } from './principal';
import { GW_BUDGET_TOKENS, GW_LIAR_EFFECTS } from './stack-config';
import type { HttpEffectDeclaration } from '../../src/effects/http-declaration';
import { submitOnce } from './submit';
import type { RegisteredOperation } from '../../src/operations/operation';

export interface GatewayContext extends RunContext {
  gateway: {
    downstream: GatewayDownstream;
    secret: string;
    operations: ReadonlyMap<string, RegisteredOperation>;
    /** The declared effect the downstream serves (its method, its name). */
    effect: HttpEffectDeclaration;
  };
}

export interface GatewayTrialRecord {
  plan: GatewayPlan;
  kinds: string[];
  ran: Record<string, boolean>;
  notRun: Record<string, string>;
  events: TrialEvent[];
  observation?: GatewayObservation;
  violations: GatewayViolation[];
  durationMs: number;
  error?: string;
}

/** Runs one trial; never throws (a failure of the suite itself is recorded as `error`). */
export function runGatewayTrial(ctx: GatewayContext, plan: GatewayPlan, options: { settleMs: number }): Promise<GatewayTrialRecord> {
  const record: GatewayTrialRecord = { plan, kinds: gatewayFaultKinds(plan), ran: {}, notRun: {}, events: [], violations: [], durationMs: 0 };
  return timedTrial(record, (into, startedAt) => execute(ctx, plan, options, into, startedAt));
}

async function execute(ctx: GatewayContext, plan: GatewayPlan, options: { settleMs: number }, record: GatewayTrialRecord, startedAt: number): Promise<void> {
  const { stack, gateway } = ctx;
  const note = (what: string): void => void record.events.push({ at: Date.now(), what });
  // A budget trial fills a day's budget first, and waits for the late usage: it gets more time.
  const deadline = startedAt + options.settleMs * (plan.budget ? 3 : 1);
  const client = new ApiClient(stack.apiUrl);
  const token = await createTrialPrincipal(stack.db, plan.principal);
  const intents = new TrialIntents({ client, token, deadline }, gateway.downstream);
  const made: IntentPlan[] = [...plan.intents];

  const control = plan.canary ? new CanaryControl(client, stack.operatorKey, plan.canary) : undefined;
  const initialRoutes = control ? await control.prepare() : undefined;
  if (control) {
    await control.startBoth();
    note('canaries started');
  }

  // Launched before the operator looks, so it never sees a trial with nothing in flight yet.
  const submits = plan.budget
    ? [intents.hold(() => runBudget(stack.db, stack.providerUrls, { ...plan, budget: plan.budget! }, intents, made, note, startedAt))]
    : plan.intents.map((intent) => intents.run(intent, startedAt));
  const raceByJob = (jobId: string) => made.find((intent) => intents.jobOf.get(intent.label) === jobId)?.raceResolveMs;
  const operator = runOperator(
    {
      client,
      operatorKey: stack.operatorKey,
      principal: plan.principal,
      downstream: gateway.downstream,
      hedge: (operation) => gateway.operations.get(operation)?.retry?.hedge,
      minAttemptMs: (operation) => gateway.operations.get(operation)?.deadline?.minAttemptMs ?? 1_000,
      maxAttempts: SETTINGS.maxAttempts,
      outcome: plan.operatorOutcome,
      raceFor: raceByJob,
      note,
    },
    () => intents.jobIds(),
    (views) => {
      for (const [id, view] of views) intents.observe(id, TERMINAL.has(view.status));
      return !intents.busy && intents.jobIds().every((id) => intents.terminal.has(id));
    },
    deadline,
  );
  const actions = (plan.canary?.actions ?? []).map(async (action) => {
    await intents.whenSubmitted(action.afterLabel);
    await sleep(action.delayMs);
    const exchange = await control!.act(action);
    note(`${exchange.label}: HTTP ${exchange.status}`);
  });
  const [, , settled] = await Promise.all([Promise.all(submits), Promise.all(actions), operator]);
  note(`settled: ${intents.jobIds().filter((id) => intents.terminal.has(id)).length} of ${intents.jobIds().length} jobs terminal`);

  if (plan.awaitLeftovers && !plan.budget) note(`late usage ${(await awaitLeftovers(stack.db, plan.principal, stack.providerUrls, 75_000)) ? 'settled' : 'still open'}`);
  if (control) await control.cleanup();
  // A process may still act once its answer comes (a late send): give it time to show before looking.
  await sleep(500);
  await replay(ctx, made, intents, client, token, deadline);

  record.observation = await observeTrial(ctx, plan, made, client, settled, startedAt, initialRoutes);
  if (ctx.historiesDir) {
    // For the replay gate: every job's current run (hedges, backoffs, reopened runs, canary steps all shape the workflow's commands).
    for (const job of record.observation.jobs) {
      const problem = await saveHistory(stack.temporal, ctx.historiesDir, plan.trial, job.workflowId);
      if (problem) note(problem);
    }
  }
  record.violations = checkGatewayTrial(record.observation);
  judgeGatewayRan(record, settled);
}

/** Replays each intent whose job ended, except a failed one its operation would reopen (that is not a replay). */
async function replay(ctx: GatewayContext, made: IntentPlan[], intents: TrialIntents, client: ApiClient, token: string, deadline: number): Promise<void> {
  const seen = new Set<string>();
  for (const intent of made) {
    if (seen.has(intent.key)) continue;
    seen.add(intent.key);
    const jobId = intents.jobOf.get(intent.label);
    if (!jobId || !intents.terminal.has(jobId)) continue;
    const { rows } = await ctx.stack.db.query(`SELECT status, EXISTS (SELECT 1 FROM effects WHERE job_id = $1) AS claimed FROM jobs WHERE id = $1`, [jobId]);
    const reopens = ctx.gateway.operations.get(intent.operation)?.reopenFailed === true && rows[0]?.status === 'failed' && !rows[0]?.claimed;
    if (reopens) continue;
    const ticketId = (await ctx.stack.db.query(`SELECT input ->> 'ticketId' AS t FROM jobs WHERE id = $1`, [jobId])).rows[0]?.t ?? intent.ticketId;
    await submitOnce({ client, token, deadline: Math.max(deadline, Date.now() + 10_000) }, { ...intent, burst: 1 }, ticketId, `replay:${intent.key}`);
  }
}

async function observeTrial(ctx: GatewayContext, plan: GatewayPlan, made: IntentPlan[], client: ApiClient, settled: OperatorResult, startedAt: number, initialRoutes: { serving: Record<string, string>; baseline: Record<string, string> } | undefined): Promise<GatewayObservation> {
  const { stack, gateway } = ctx;
  const { usage, ledger } = await readUsage(client, stack.operatorKey, stack.db, plan.principal, startedAt);
  const workflows = await openWorkflows(stack.temporal, ledger.jobs);
  const operations = [...new Set(made.map((intent) => intent.operation))];
  const intentFacts: IntentFacts[] = made.map((intent) => ({
    label: intent.label,
    operation: intent.operation,
    key: intent.key,
    retryAfterMs: Object.fromEntries(Object.entries(intent.retryAfterMs ?? {})),
  }));
  const tickets = [...new Set([...made.map((i) => i.ticketId), ...ledger.jobs.map((j) => j.ticketId)])];
  return {
    principal: plan.principal,
    intents: intentFacts,
    exchanges: client.exchanges,
    windows: ctx.windows,
    crashes: stack.crashes.filter((crash) => crash.at >= startedAt),
    ...ledger,
    workflows,
    usage,
    downstream: {
      host: gateway.downstream.host,
      method: gateway.effect.method ?? 'POST',
      secret: gateway.secret,
      requests: trialRequests(gateway.downstream, tickets, ledger.effects.map((e) => e.key)),
      performed: ledger.effects.filter((e) => gateway.downstream.commentsOf(e.key).length > 0).map((e) => e.key),
      comments: ledger.effects.flatMap((e) => gateway.downstream.commentsOf(e.key).map((c) => ({ key: c.key, server: c.server, id: c.id }))),
      liars: GW_LIAR_EFFECTS,
    },
    ...(plan.canary && initialRoutes
      ? { canary: { initialServing: initialRoutes.serving, baseline: initialRoutes.baseline, versions: await readRouteVersions(stack.db, [plan.canary.broken.operation, plan.canary.healthy.operation], startedAt) } }
      : {}),
    samples: settled.samples,
    budgetTokens: GW_BUDGET_TOKENS,
    settings: {
      backoffMs: SETTINGS.attemptBackoffMs,
      maxAttempts: SETTINGS.maxAttempts,
      hedge: Object.fromEntries(operations.map((op) => [op, gateway.operations.get(op)?.retry?.hedge])),
      minAttemptMs: Object.fromEntries(operations.map((op) => [op, gateway.operations.get(op)?.deadline?.minAttemptMs ?? 1_000])),
      reopenable: [...gateway.operations.values()].filter((op) => op.reopenFailed).map((op) => op.name),
    },
  };
}
