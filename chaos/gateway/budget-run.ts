/**
 * A budget trial, made as it goes: long jobs one after another (most of them
 * hedged, with a late primary whose usage comes after the job settled) until
 * the principal's spend nears its daily budget, then, once the late usage
 * has landed, a burst of new intents at once. Its draws come from the
 * trial's own stream, so a rerun makes the same jobs.
 */
import type { Pool } from 'pg';
import { createPrng, trialSeed } from '../prng';
import { SETTINGS } from '../settings';
import { sleep } from '../context';
import { readAtProvider } from '../observe';
import type { TrialIntents } from './intents';
import type { BudgetPlan, GatewayPlan, IntentPlan } from './plan';
import { GW, GW_BUDGET_TOKENS } from './stack-config';

/** The principal's tokens so far: settled and adjusted. */
export async function spentTokens(db: Pool, principal: string): Promise<number> {
  const { rows } = await db.query(
    `SELECT COALESCE((SELECT sum(input_tokens + output_tokens) FROM settlements WHERE principal_id = $1), 0)
          + COALESCE((SELECT sum(d.input_tokens + d.output_tokens) FROM settlement_adjustments d JOIN settlements s ON s.job_id = d.job_id AND s.run = d.run WHERE s.principal_id = $1), 0) AS tokens`,
    [principal],
  );
  return Number(rows[0].tokens);
}

/** Unknown attempts of ended jobs, with their provider. */
async function leftovers(db: Pool, principal: string): Promise<Array<{ id: string; provider: string }>> {
  const { rows } = await db.query(`SELECT a.id, a.provider FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.principal_id = $1 AND j.terminal_at IS NOT NULL AND a.status = 'unknown'`, [principal]);
  return rows as Array<{ id: string; provider: string }>;
}

/**
 * Waits (up to maxMs) until no ended job of the principal has an unknown
 * attempt its provider completed: the sweeper settles those (about once a
 * minute) and their usage becomes an adjustment. One that still hangs at its
 * provider never will, and is not waited for.
 * @returns whether nothing was left to wait for.
 */
export async function awaitLeftovers(db: Pool, principal: string, providerUrls: Readonly<Record<string, string>>, maxMs: number): Promise<boolean> {
  const until = Date.now() + maxMs;
  while (Date.now() < until) {
    const left = await leftovers(db, principal);
    const states = await Promise.all(left.map((a) => readAtProvider(providerUrls[a.provider], a.id)));
    if (!states.includes('completed')) return true;
    await sleep(1_000);
  }
  return false;
}

export async function runBudget(db: Pool, providerUrls: Readonly<Record<string, string>>, plan: GatewayPlan & { budget: BudgetPlan }, intents: TrialIntents, made: IntentPlan[], note: (what: string) => void, startedAt: number): Promise<void> {
  const rng = createPrng(trialSeed(plan.runSeed ^ 0x62756467, plan.trial));
  const intent = (n: number, late: boolean): IntentPlan => ({
    label: `b${n}`,
    operation: GW.lookup,
    key: `gw${plan.tag}-${plan.runSeed}-${plan.trial}-b${n}`,
    ticketId: `G${plan.tag}-${plan.runSeed}-${plan.trial}-b${n}`,
    text: 'A long ticket.',
    directives: late ? [`@sim(sim-primary:late=${SETTINGS.attemptTimeoutMs + rng.int(300, 1_200)})`] : [],
    padTo: plan.budget.padTo,
    burst: 1,
    startMs: 0,
  });
  const target = plan.budget.targetShare * GW_BUDGET_TOKENS;
  let n = 0;
  for (; n < plan.budget.maxPrefill && (await spentTokens(db, plan.principal)) < target; n++) {
    const next = intent(n, rng.next() < plan.budget.lateShare);
    made.push(next);
    await intents.run(next, startedAt);
    // Refused (the budget is spent already): the prefill is over.
    if (!intents.jobOf.has(next.label)) break;
    await intents.untilTerminal(next.label);
  }
  note(`budget: ${n} prefill jobs, ${await spentTokens(db, plan.principal)} tokens spent`);
  // The late usage lands as adjustments: the burst comes once the spend is all in the ledger.
  const settled = await awaitLeftovers(db, plan.principal, providerUrls, 75_000);
  note(`budget: ${settled ? 'late usage settled' : 'late usage still open'}; ${await spentTokens(db, plan.principal)} tokens spent; burst of ${plan.budget.burst}`);
  const burst = Array.from({ length: plan.budget.burst }, (_, i) => intent(n + i, false));
  made.push(...burst);
  await Promise.all(burst.map((b) => intents.run(b, startedAt)));
}
