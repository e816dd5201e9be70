import type { Pool } from 'pg';
import type { ActivityDeps } from '../activities';
import type { OnceflowConfig } from '../config';
import { createEffectAdapters } from '../effects/registry';
import { createEffectRunner } from '../effects/runner';
import type { EffectAdapter } from '../effects/types';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import type { ProviderAdapter } from '../providers/types';
import type { RouteStep } from '../temporal/contract';

export interface WorkerParts {
  db: Pool;
  metrics: Metrics;
  config: Pick<OnceflowConfig, 'attempts' | 'effects' | 'contracts'>;
  operations: OperationRegistry;
  providers: ReadonlyMap<string, ProviderAdapter>;
  routeFor(operation: string): RouteStep[];
  /** Effect adapters; by default those of config.effects. */
  effectAdapters?: ReadonlyMap<string, EffectAdapter>;
}

/** Everything the activities depend on, from configuration and the parts a worker was given. */
export function buildActivityDeps(parts: WorkerParts): ActivityDeps {
  const { config } = parts;
  return {
    db: parts.db,
    metrics: parts.metrics,
    operations: parts.operations,
    providers: parts.providers,
    routeFor: parts.routeFor,
    attempts: config.attempts,
    effects: createEffectRunner({
      db: parts.db,
      metrics: parts.metrics,
      adapters: parts.effectAdapters ?? createEffectAdapters(config.effects, parts.db),
      settings: { leaseMs: config.effects.leaseMs, maxTries: config.effects.maxTries, backoffMs: config.effects.backoffMs },
    }),
    effectTimeoutMs: config.effects.leaseMs,
    gate: { maxAgeMs: config.contracts.maxAgeMs, demotion: config.contracts.demotion },
  };
}
