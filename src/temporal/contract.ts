/**
 * What the API, the worker and the workflow agree on: names, signals, search
 * attributes and the shapes that cross the workflow boundary. Imported by the
 * workflow bundle, so it must stay free of Node.js modules.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineSignal } from '@temporalio/workflow';

export const DEFAULT_TASK_QUEUE = 'onceflow-jobs';

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

/** Wakes the workflow: a job was cancelled or an attempt resolved out of band. */
export const jobChangedSignal = defineSignal('jobChanged');
