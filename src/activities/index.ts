import type { Pool } from 'pg';
import type { Metrics } from '../metrics/metrics';
import type { OperationRegistry } from '../operations/registry';
import type { ProviderAdapter } from '../providers/types';
import type { RouteStep } from '../temporal/contract';
import { createAttemptActivities } from './attempt-activities';
import { createJobActivities } from './job-activities';
import { createEffectActivities } from './effect-activities';
import type { EffectRunner } from '../effects/runner';
import type { GateSettings } from '../contracts/eligibility';

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

export interface ActivityDeps {
  db: Pool;
  metrics: Metrics;
  operations: OperationRegistry;
  providers: ReadonlyMap<string, ProviderAdapter>;
  /** The provider route of an operation, in failover order. */
  routeFor(operation: string): RouteStep[];
  attempts: AttemptSettings;
  /** Runs effects through the ledger (claim, perform, settle, recover). */
  effects: EffectRunner;
  /** How long one performEffect or recoverEffect may run. */
  effectTimeoutMs: number;
  /** The failover gate: verification age and run-time demotion. */
  gate: GateSettings;
  clock?: Clock;
}

/** Builds the activities from their dependencies; nothing here is a module-level singleton. */
export function createActivities(deps: ActivityDeps) {
  return { ...createJobActivities(deps), ...createAttemptActivities(deps), ...createEffectActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
