/**
 * What the API, the worker and the workflow agree on: names, signals, search
 * attributes and the shapes that cross the workflow boundary. Imported by the
 * workflow bundle, so it must stay free of Node.js modules.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineSignal } from '@temporalio/workflow';

export { DEFAULT_TASK_QUEUE } from './names';

/** The workflow type name, as registered by the worker and started by the API. */
export const JOB_WORKFLOW = 'jobWorkflow';

export const searchAttributes = {
  principal: defineSearchAttributeKey('OnceflowPrincipal', SearchAttributeType.KEYWORD),
  operation: defineSearchAttributeKey('OnceflowOperation', SearchAttributeType.KEYWORD),
  status: defineSearchAttributeKey('OnceflowJobStatus', SearchAttributeType.KEYWORD),
} as const;

/** The workflow needs only the job's id: everything else is in the ledger. */
export interface JobWorkflowInput {
  jobId: string;
  /** False on servers without Onceflow's custom search attributes (the time-skipping test server). */
  searchAttributes?: boolean;
}

export const RETENTION_WORKFLOW = 'retentionWorkflow';
export const RETENTION_SCHEDULE_ID = 'onceflow-retention';

/** Wakes the workflow: a job was cancelled or an attempt resolved out of band. */
export const jobChangedSignal = defineSignal('jobChanged');

/** One step of an operation's provider route. */
export interface RouteStep {
  provider: string;
  model: string;
}

/** What the workflow needs to drive a job, read from the ledger and configuration. */
export interface JobPlan {
  status: string;
  terminal: boolean;
  /** The AI step already has its winning result (only effects are left). */
  hasWinner: boolean;
  operation: string;
  route: RouteStep[];
  maxAttempts: number;
  attemptsMade: number;
  /** Index into route of the next attempt's provider. */
  nextRouteIndex: number;
  attemptTimeoutMs: number;
  heartbeatTimeoutMs: number;
  reconcileIntervalMs: number;
  backoffMs: number;
  /** The operation's side effects, in order. */
  effects: string[];
  /** How long a performEffect may run before Temporal gives up on it. */
  effectTimeoutMs: number;
  /** An attempt left live by an earlier run of this workflow. */
  live?: { attemptId: string; status: string; provider: string };
}

/** Where an attempt stands after a step of the workflow. */
export interface AttemptOutcome {
  status: 'starting' | 'running' | 'unknown' | 'succeeded' | 'failed' | 'cancelled' | 'discarded';
  /** True when the job is terminal (won, cancelled, failed): nothing more to try. */
  jobTerminal: boolean;
  class?: string;
  /** From a 429's Retry-After: wait at least this long before the same provider again. */
  retryAfterMs?: number;
}

/** The route step the next attempt goes to, or why there is none. */
export type NextStep = { kind: 'step'; step: RouteStep; index: number; skipped: string[] } | { kind: 'exhausted'; detail: string };

/** How the next attempt relates to the previous one (for metrics and events). */
export type AttemptKind = 'first' | 'retry' | 'fallback';

/** Where an effect stands, as the workflow sees it. */
export interface EffectStateView {
  status: 'pending' | 'succeeded' | 'failed' | 'needs_review' | 'absent';
  leaseRemainingMs: number;
}
