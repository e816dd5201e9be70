import { randomUUID } from 'node:crypto';
import { bucketOf, inCanaryShare } from '../../src/canary/share';
import { crossedThreshold } from '../../src/canary/thresholds';
import { DEFAULT_THRESHOLDS } from '../../src/ledger/route-versions';

describe("a canary's share of new jobs", () => {
  it('puts the same job id on the same side every time', () => {
    // Arrange
    const ids = Array.from({ length: 200 }, () => randomUUID());

    // Act
    const first = ids.map((id) => inCanaryShare(id, 2_500));
    const again = ids.map((id) => inCanaryShare(id, 2_500));

    // Assert
    expect(again).toEqual(first);
    expect(ids.map(bucketOf)).toEqual(ids.map(bucketOf));
  });

  it.each([
    [500, 0.05],
    [2_500, 0.25],
    [9_000, 0.9],
  ])('takes roughly the configured share of 20,000 random ids (%i basis points)', (shareBp, expected) => {
    // Act
    let taken = 0;
    for (let i = 0; i < 20_000; i++) if (inCanaryShare(randomUUID(), shareBp)) taken++;

    // Assert: within 1.5 percentage points (over 6 standard deviations at these sizes)
    expect(Math.abs(taken / 20_000 - expected)).toBeLessThan(0.015);
  });

  it('takes no job at 0 and every job at 10,000 basis points', () => {
    const ids = Array.from({ length: 1_000 }, () => randomUUID());
    expect(ids.filter((id) => inCanaryShare(id, 0))).toEqual([]);
    expect(ids.every((id) => inCanaryShare(id, 10_000))).toBe(true);
  });
});

describe("a canary's thresholds over a fixed denominator", () => {
  const counts = { jobs: 10, succeeded: 10, failed: 0, cancelled: 0, withUnknowns: 0, withContractViolations: 0, withEffectsInReview: 0 };

  it('counts harm against the window, not against the jobs served so far', () => {
    // 4 violations in 10 jobs is 40 % of those, but 2 % of a window of 200: not over
    expect(crossedThreshold({ ...counts, withContractViolations: 4 }, DEFAULT_THRESHOLDS)).toBeUndefined();
    expect(crossedThreshold({ ...counts, withContractViolations: 5 }, DEFAULT_THRESHOLDS)).toMatchObject({ threshold: 'contract_violations' });
  });

  it('stops at more unknowns than the share allows, at the first effect in review, and on failures only when asked', () => {
    expect(crossedThreshold({ ...counts, withUnknowns: 10 }, DEFAULT_THRESHOLDS)).toBeUndefined();
    expect(crossedThreshold({ ...counts, withUnknowns: 11 }, DEFAULT_THRESHOLDS)).toMatchObject({ threshold: 'unknowns' });
    expect(crossedThreshold({ ...counts, withEffectsInReview: 1 }, DEFAULT_THRESHOLDS)).toMatchObject({ threshold: 'effects_in_review' });
    expect(crossedThreshold({ ...counts, failed: 200 }, DEFAULT_THRESHOLDS)).toBeUndefined();
    expect(crossedThreshold({ ...counts, failed: 21 }, { ...DEFAULT_THRESHOLDS, failedPercent: 10 })).toMatchObject({ threshold: 'failed' });
  });
});
