/**
 * A job that only an operator can move must be where operators look: in the
 * API's list of its status (GET /v1/jobs?status=awaiting_resolution, or
 * status=needs_review for an effect in review), and, blocked on an unknown
 * attempt, shown as awaiting_resolution. (A job with an effect in review
 * keeps the status `running` by design: API.md's awaiting_resolution names an
 * unknown attempt; the needs_review list is where it is found.)
 */
import type { GatewayObservation } from '../observation';
import type { GatewayViolation } from './kinds';

export function checkAttention(obs: GatewayObservation): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  for (const sample of obs.samples) {
    const waited = `after ${(sample.waitedMs / 1000).toFixed(1)} s`;
    const list = sample.reason === 'unknown' ? 'awaiting_resolution' : 'needs_review';
    if (sample.reason === 'unknown' && sample.status !== 'awaiting_resolution') {
      violations.push({ kind: 'attention', detail: `job ${sample.jobId} was blocked on an unknown attempt with no hedge possible ${waited}, but showed ${sample.status}` });
    }
    if (!sample.listed) violations.push({ kind: 'attention', detail: `job ${sample.jobId} waited for an operator (${sample.reason === 'unknown' ? 'an unknown attempt' : 'an effect in review'}) ${waited}, but GET /v1/jobs?status=${list} did not list it` });
  }
  return violations.slice(0, 4);
}
