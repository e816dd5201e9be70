/**
 * Invariant 15, one account of spending: the usage report and the daily
 * budget see every cost an attempt incurred, settled with its job or
 * learned later (an adjustment).
 */
import type { GatewayObservation } from '../observation';
import { sameDecimal } from './decimal';
import type { GatewayViolation } from './kinds';

/** A budget check reads the spend, then the job is inserted: an admission this close after the crossing raced it. */
export const BUDGET_RACE_MS = 250;

export function checkUsage(obs: GatewayObservation): GatewayViolation[] {
  const usage = obs.usage;
  if (!usage || usage.unstable) return [];
  if (usage.status !== 200) return [{ kind: 'usage', detail: `GET /v1/usage for ${obs.principal} was answered ${usage.status}` }];
  const { reported, ledger } = usage;
  const differences: string[] = [];
  if (!sameDecimal(reported.providerCost, ledger.providerCost)) differences.push(`providerCost ${reported.providerCost}, the attempts cost ${ledger.providerCost}`);
  if (reported.inputTokens !== ledger.inputTokens) differences.push(`inputTokens ${reported.inputTokens}, the attempts used ${ledger.inputTokens}`);
  if (reported.outputTokens !== ledger.outputTokens) differences.push(`outputTokens ${reported.outputTokens}, the attempts used ${ledger.outputTokens}`);
  if (!differences.length) return [];
  const adjusted = obs.adjustments.length ? ` (${obs.adjustments.length} adjustments in the ledger)` : '';
  return [{ kind: 'usage', detail: `GET /v1/usage for ${obs.principal} says ${differences.join('; ')}${adjusted}` }];
}

/** When the principal's spend (settlements and adjustments, in tokens) reached its budget, if it did. */
export function budgetReachedAt(obs: GatewayObservation): number | undefined {
  const spends = [
    ...obs.settlements.map((s) => ({ at: s.settledAt, tokens: s.inputTokens + s.outputTokens })),
    ...obs.adjustments.map((d) => ({ at: d.createdAt, tokens: d.inputTokens + d.outputTokens })),
  ].sort((a, b) => a.at - b.at);
  let total = 0;
  for (const spend of spends) {
    total += spend.tokens;
    if (total >= obs.budgetTokens) return spend.at;
  }
  return undefined;
}

/** New work admitted after the spend reached the budget: a new job, or a failed job's new run. */
export function checkBudget(obs: GatewayObservation): GatewayViolation[] {
  const reachedAt = budgetReachedAt(obs);
  if (reachedAt === undefined) return [];
  const admissions = [
    ...obs.jobs.map((j) => ({ at: j.createdAt, what: `job ${j.id} (${j.idempotencyKey})` })),
    ...obs.events.filter((e) => e.type === 'job.reopened').map((e) => ({ at: e.at, what: `a new run of job ${e.jobId}` })),
  ].filter((a) => a.at > reachedAt + BUDGET_RACE_MS);
  if (!admissions.length) return [];
  const adjusted = obs.adjustments.filter((d) => d.createdAt <= reachedAt).reduce((sum, d) => sum + d.inputTokens + d.outputTokens, 0);
  return [
    {
      kind: 'budget',
      detail: `${admissions.length} admitted after the spend reached the budget of ${obs.budgetTokens} tokens at ${new Date(reachedAt).toISOString()} (${adjusted} of it in adjustments): first ${admissions[0]!.what}, ${admissions[0]!.at - reachedAt} ms later`,
    },
  ];
}
