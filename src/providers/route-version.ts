import { createHash } from 'node:crypto';
import type { RouteStep } from '../temporal/contract';

/**
 * The version of a route: the same providers and models in the same order
 * are the same version, whatever file or process they came from; any change
 * of provider, model or order is another. Jobs record the version that served
 * them, and their outcomes are counted per version.
 */
export function routeVersionOf(route: readonly RouteStep[]): string {
  const steps = JSON.stringify(route.map((step) => [step.provider, step.model]));
  return `config-${createHash('sha256').update(steps, 'utf8').digest('hex').slice(0, 12)}`;
}
