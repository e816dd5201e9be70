import type { Pool } from 'pg';
import type { ActivityDeps, SweeperSettings } from '../activities/deps';
import type { OnceflowConfig } from '../config';
import type { HttpEffectDeclaration } from '../effects/http-declaration';
import { createEffectRegistry } from '../effects/registry';
import { createEffectRunner } from '../effects/runner';
import type { EffectAdapter } from '../effects/types';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import type { PriceTable } from '../providers/config';
import type { ProviderAdapter } from '../providers/types';
import type { RouteStep } from '../temporal/contract';
import type { WorkflowTarget } from '../temporal/starter';

export interface WorkerParts {
  db: Pool;
  metrics: Metrics;
  config: Pick<OnceflowConfig, 'attempts' | 'effects' | 'contracts'>;
  operations: OperationRegistry;
  providers: ReadonlyMap<string, ProviderAdapter>;
  /** Prices by provider and model (loadProviders checked that every route model has one). */
  prices?: PriceTable;
  routeFor(operation: string): RouteStep[];
  /** Effect adapters; by default those of config.effects and declaredEffects. */
  effectAdapters?: ReadonlyMap<string, EffectAdapter>;
  /** HTTP downstreams declared in the operations file, beside the built-in effects. */
  declaredEffects?: readonly HttpEffectDeclaration[];
  /** Where the sweeper starts job workflows (the worker's own Temporal client). */
  workflows?: WorkflowTarget;
  sweeper?: SweeperSettings;
}

/** The sweeper's defaults: open jobs older than a minute, each looked at every five minutes at most. */
export const DEFAULT_SWEEPER: SweeperSettings = { minAgeMs: 60_000, intervalMs: 5 * 60_000, batchSize: 500 };

/**
 * Everything the activities depend on, from configuration and the parts a worker was given.
 * @throws Error when an operation names an effect this deployment has no adapter for.
 * @throws HttpEffectDeclarationError when a declared effect cannot be built (see createEffectRegistry).
 */
export function buildActivityDeps(parts: WorkerParts): ActivityDeps {
  const { config } = parts;
  const adapters = parts.effectAdapters ?? createEffectRegistry({ config: config.effects, db: parts.db, declared: parts.declaredEffects });
  // A missing adapter is a boot error, not a job that fails at its effect.
  for (const operation of parts.operations.values()) {
    const missing = (operation.effects ?? []).filter((name) => !adapters.has(name));
    if (missing.length) throw new Error(`operation ${operation.name} needs effect ${missing.join(', ')}, which has no adapter in this deployment (see docs/effects.md)`);
  }
  return {
    db: parts.db,
    metrics: parts.metrics,
    operations: parts.operations,
    providers: parts.providers,
    ...(parts.prices ? { prices: parts.prices } : {}),
    routeFor: parts.routeFor,
    attempts: config.attempts,
    effects: createEffectRunner({
      db: parts.db,
      metrics: parts.metrics,
      adapters,
      operations: parts.operations,
      settings: { leaseMs: config.effects.leaseMs, maxTries: config.effects.maxTries, backoffMs: config.effects.backoffMs, callTimeoutMs: config.effects.callTimeoutMs, maxLookupFailures: config.effects.maxLookupFailures, verificationMaxAgeMs: config.effects.verificationMaxAgeMs },
    }),
    effectTimeoutMs: config.effects.leaseMs,
    gate: { maxAgeMs: config.contracts.maxAgeMs, demotion: config.contracts.demotion },
    ...(parts.workflows ? { workflows: parts.workflows, sweeper: parts.sweeper ?? DEFAULT_SWEEPER } : {}),
  };
}
