/** Every check of the gateway round, on one observation. Pure functions: the self-test feeds them fabricated data. */
import type { GatewayObservation } from '../observation';
import { checkAttention } from './attention-check';
import { checkBackoff } from './backoff-check';
import { checkCanaryRoutes, checkCanaryStops } from './canary-checks';
import { checkAttemptCap, checkBills, checkCrashes, checkOneJob, checkOneWinner, checkProgress, checkReplays, checkServerErrors } from './core-checks';
import { checkEffectOnce, checkLiars, checkSecretHost } from './effect-checks';
import type { GatewayViolation } from './kinds';
import { checkBudget, checkUsage } from './usage-checks';

export { GATEWAY_VIOLATION_KINDS, type GatewayViolation, type GatewayViolationKind } from './kinds';

export function checkGatewayTrial(obs: GatewayObservation): GatewayViolation[] {
  return [
    ...checkOneJob(obs),
    ...checkOneWinner(obs),
    ...checkBills(obs),
    ...checkProgress(obs),
    ...checkServerErrors(obs),
    ...checkReplays(obs),
    ...checkAttemptCap(obs),
    ...checkCrashes(obs),
    ...checkUsage(obs),
    ...checkBudget(obs),
    ...checkCanaryStops(obs),
    ...checkCanaryRoutes(obs),
    ...checkAttention(obs),
    ...checkEffectOnce(obs),
    ...checkSecretHost(obs),
    ...checkLiars(obs),
    ...checkBackoff(obs),
  ];
}
