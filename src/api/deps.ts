import type { Pool } from 'pg';
import type { OnceflowConfig } from '../config';
import type { GateSettings } from '../contracts/eligibility';
import type { EffectAdapter } from '../effects/types';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import type { ProviderAdapter } from '../providers/types';
import type { RouteStep } from '../temporal/contract';
import type { WorkflowTarget } from '../temporal/starter';
import type { JobWaiter } from './job-waiter';

/** Everything the API's routes depend on, passed in: nothing is a module-level singleton. */
export interface ApiDeps {
  /** Without budgets, no daily budget applies. */
  config: Pick<OnceflowConfig, 'api' | 'keys' | 'temporal' | 'logLevel' | 'contracts' | 'attempts'> & Partial<Pick<OnceflowConfig, 'budgets'>>;
  db: Pool;
  workflows: WorkflowTarget;
  operations: OperationRegistry;
  metrics: Metrics;
  waiter: JobWaiter;
  /** What the provider routes need: adapters, routes, the failover gate, verification settings. */
  contracts: {
    providers: ReadonlyMap<string, ProviderAdapter>;
    routeFor(operation: string): RouteStep[];
    gate: GateSettings;
    samples: number;
    timeoutMs: number;
  };
  /** The effects of the deployment, for their drills (GET /v1/effects, POST /v1/effects/verify); none when absent. */
  effects?: { adapters: ReadonlyMap<string, EffectAdapter>; verificationMaxAgeMs: number };
  /** Readiness of Temporal: resolves when reachable. */
  temporalReady: () => Promise<void>;
  logger?: boolean;
}

/** The contracts part of ApiDeps, from configuration and the provider adapters. */
export function apiContracts(
  config: Pick<OnceflowConfig, 'contracts' | 'attempts'>,
  providers: ReadonlyMap<string, ProviderAdapter>,
  routeFor: (operation: string) => RouteStep[],
): ApiDeps['contracts'] {
  return {
    providers,
    routeFor,
    gate: { maxAgeMs: config.contracts.maxAgeMs, demotion: config.contracts.demotion },
    samples: config.contracts.samples,
    timeoutMs: config.attempts.timeoutMs,
  };
}

