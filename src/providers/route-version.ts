import { createHash } from 'node:crypto';
import type { RouteStep } from '../temporal/contract';

/** Every baseline version's name starts with this; no canary's may. */
export const BASELINE_VERSION_PREFIX = 'config-';

/** Whether a version name is a providers file's route (never a canary). */
export const isBaselineVersion = (version: string): boolean => version.startsWith(BASELINE_VERSION_PREFIX);

/**
 * The version of a route: the same providers and models in the same order
 * are the same version, whatever file or process they came from; any change
 * of provider, model or order is another. Jobs record the version that served
 * them, and their outcomes are counted per version.
 */
export function routeVersionOf(route: readonly RouteStep[]): string {
  const steps = JSON.stringify(route.map((step) => [step.provider, step.model]));
  return `${BASELINE_VERSION_PREFIX}${createHash('sha256').update(steps, 'utf8').digest('hex').slice(0, 12)}`;
}
