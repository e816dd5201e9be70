import type { Pool } from 'pg';
import type { GateSettings } from '../contracts/eligibility';
import type { EffectRunner } from '../effects/runner';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import type { PriceTable } from '../providers/config';
import type { ProviderAdapter } from '../providers/types';
import type { RouteStep } from '../temporal/contract';
import type { WorkflowTarget } from '../temporal/starter';

export interface Clock {
  now(): Date;
}

export interface AttemptSettings {
  timeoutMs: number;
  heartbeatTimeoutMs: number;
  reconcileIntervalMs: number;
  maxAttempts: number;
  backoffMs: number;
}

/** What the sweeper looks for: open jobs older than minAgeMs, each looked at no more often than every intervalMs. */
export interface SweeperSettings {
  minAgeMs: number;
  intervalMs: number;
  batchSize: number;
}

/** Everything the activities depend on, passed in: nothing is a module-level singleton. */
export interface ActivityDeps {
  db: Pool;
  metrics: Metrics;
  operations: OperationRegistry;
  providers: ReadonlyMap<string, ProviderAdapter>;
  /** Prices by provider and model; an attempt of a model without a price records its tokens and no cost. */
  prices?: PriceTable;
  /** The provider route of an operation, in failover order. */
  routeFor(operation: string): RouteStep[];
  attempts: AttemptSettings;
  /** Runs effects through the ledger (claim, perform, settle, recover). */
  effects: EffectRunner;
  /** How long one performEffect or recoverEffect may run. */
  effectTimeoutMs: number;
  /** The failover gate: verification age and run-time demotion. */
  gate: GateSettings;
  /** Where the sweeper starts or attaches job workflows; without it, sweeping is off. */
  workflows?: WorkflowTarget;
  sweeper?: SweeperSettings;
  clock?: Clock;
}
