import type { CanaryThresholds, RouteVersionCounts } from '../ledger/route-versions';

/** The threshold a canary crossed, named as its event names it, with the counts it was crossed by. */
export interface CrossedThreshold {
  threshold: 'contract_violations' | 'unknowns' | 'failed' | 'effects_in_review';
  reason: string;
}

/**
 * The first threshold that the last jobs of a canary cross, or undefined.
 * Shares are over the fixed denominator (the window), not over the jobs seen
 * so far: "contract violations > 2 % of the last 200" stops at the fifth such
 * job whether it is the 5th job served or the 500th.
 */
export function crossedThreshold(counts: RouteVersionCounts, thresholds: CanaryThresholds): CrossedThreshold | undefined {
  const over = (harm: number, percent: number) => harm * 100 > percent * thresholds.window;
  const of = `of the last ${thresholds.window} jobs it served`;
  if (counts.withEffectsInReview > thresholds.effectsInReview) {
    return { threshold: 'effects_in_review', reason: `${counts.withEffectsInReview} jobs with an effect in review (at most ${thresholds.effectsInReview} allowed) ${of}` };
  }
  if (over(counts.withContractViolations, thresholds.contractViolationsPercent)) {
    return { threshold: 'contract_violations', reason: `${counts.withContractViolations} jobs with contract violations, over ${thresholds.contractViolationsPercent} % ${of}` };
  }
  if (over(counts.withUnknowns, thresholds.unknownsPercent)) {
    return { threshold: 'unknowns', reason: `${counts.withUnknowns} jobs with unknown attempts, over ${thresholds.unknownsPercent} % ${of}` };
  }
  if (thresholds.failedPercent !== null && over(counts.failed, thresholds.failedPercent)) {
    return { threshold: 'failed', reason: `${counts.failed} failed jobs, over ${thresholds.failedPercent} % ${of}` };
  }
  return undefined;
}
