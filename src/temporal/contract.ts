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

/** What the workflow of an earlier run of a reopened job is told at its next step, and ends with: its run is over. */
export const RUN_SUPERSEDED = 'superseded';

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
  /** The status search attribute as the previous run left it (carried across continue-as-new). */
  status?: string;
  /**
   * The workflow revision this job's runs follow (absent: 1). A change of
   * behaviour that would not replay earlier histories is keyed on it: runs
   * started before the change keep their path, new runs take the new one.
   * Unlike patched(), it costs no marker and no search-attribute write per job.
   */
  revision?: number;
}

/**
 * The revision new job workflows start with.
 * 2: the step that opens an attempt also sends it (a local activity), so a
 *    job that wins at once is one workflow task; the status search attribute
 *    is written only while the job waits for a person (awaiting_resolution,
 *    needs_review) and, for a job that waited, as it goes on and ends.
 */
export const JOB_WORKFLOW_REVISION = 2;

export const RETENTION_WORKFLOW = 'retentionWorkflow';
export const RETENTION_SCHEDULE_ID = 'onceflow-retention';

export const SWEEPER_WORKFLOW = 'sweeperWorkflow';
export const SWEEPER_SCHEDULE_ID = 'onceflow-sweeper';

export const WARM_UP_WORKFLOW = 'warmUpWorkflow';
/** A worker's warm-up workflow id: the prefix, then the worker's host and process. */
export const WARM_UP_WORKFLOW_ID_PREFIX = 'onceflow-warm-up-';

/** Wakes the workflow: a job was cancelled or an attempt resolved out of band. */
export const jobChangedSignal = defineSignal('jobChanged');

/** One step of an operation's provider route. */
export interface RouteStep {
  provider: string;
  model: string;
}

/** How the next attempt relates to the previous one (for metrics and events). */
export type AttemptKind = 'first' | 'retry' | 'fallback' | 'hedge';

/** The timeouts the workflow schedules its activities with, from the worker's configuration. */
export interface JobTimings {
  attemptTimeoutMs: number;
  heartbeatTimeoutMs: number;
  reconcileIntervalMs: number;
  /** How long one performEffect or recoverEffect may run: the claim's lease. */
  effectTimeoutMs: number;
}

/**
 * What the ledger says a job needs next. The workflow does only this; every
 * decision (which provider, whether to wait, whether the job is done) is made
 * in one ledger transaction whose WHERE clauses are the rules.
 */
export type JobAction =
  | { kind: 'terminal'; status: string }
  /** An attempt is open (starting): send it. `seq` counts the job's attempts (1 for the first). */
  | { kind: 'call'; attemptId: string; provider: string; model: string; seq?: number }
  /** An attempt was opened and sent in the same step (revision 2): what came of it. */
  | { kind: 'called'; attemptId: string; seq?: number; report: AttemptReport }
  /** An attempt is unknown: nothing new starts until it is reconciled or resolved (invariant 4). */
  | { kind: 'await'; attemptId: string }
  /** The next attempt goes to the provider that just failed: not before this. */
  | { kind: 'backoff'; ms: number }
  /** The AI step has its winner: these effects are left, in order. */
  | { kind: 'effects'; names: string[] };

export type JobStep = JobAction & { timings: JobTimings };

/** What one provider call (or one reconciliation) left in the ledger. */
export interface AttemptReport {
  status: 'starting' | 'running' | 'unknown' | 'succeeded' | 'failed' | 'cancelled' | 'discarded';
  /** The job is terminal (it won without effects, was cancelled, or failed). */
  jobTerminal: boolean;
  jobStatus: string;
  /** This attempt won the job's result slot and these effects are to run. */
  effects?: string[];
  class?: string;
  /**
   * Another unknown attempt of the job (a hedge's sibling) left `unknown`
   * while this one was reconciled: the job may take its next step (a freed
   * lane, or an answer that won).
   */
  othersMoved?: boolean;
}

/** Where an effect stands, as the workflow sees it. */
export interface EffectStateView {
  status: 'pending' | 'succeeded' | 'failed' | 'needs_review' | 'absent';
  leaseRemainingMs: number;
  jobTerminal: boolean;
  jobStatus: string;
}

/** Names of the failures the workflow must tell apart (ApplicationFailure types). */
export const FailureType = {
  /** The deployment has no adapter for an effect; nothing was claimed. */
  effectNotConfigured: 'effect_not_configured',
  /** The job is not in the ledger (removed by retention): nothing is left to drive. */
  jobNotFound: 'job_not_found',
} as const;
