import { condition, continueAsNew, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { jobChangedSignal, searchAttributes, type JobWorkflowInput } from '../temporal/contract';

/**
 * A run's history stays well under Temporal's limits however long a job
 * waits: past this many events, the run continues as new at its next step
 * (the ledger holds the job's state, so the next run needs only its id).
 */
export const HISTORY_EVENTS_PER_RUN = 1_000;

/** What one run of a job's workflow keeps: the wake-up flag and the last status it published. */
export interface JobRun {
  readonly jobId: string;
  /** The workflow revision this run follows (see JobWorkflowInput.revision). */
  readonly revision: number;
  /** Publishes the status search attribute, only when it changed. */
  setStatus(status: string): void;
  /** After a wait (an unknown attempt, an effect in review), publishes 'running' again. */
  leaveWait(): void;
  /** Forgets earlier wake-ups: called before a look at the ledger, so a signal during the look is not lost. */
  beforeLook(): void;
  /** Sleeps up to ms, waking early when a signal says the job changed (a resolution, a cancellation). */
  waitForChange(ms: number): Promise<void>;
  /** Continues as new when this run's history is long; returns only when it is not. */
  continueAsNewIfLong(): Promise<void>;
}

/** The statuses that say a job waits for a person: always published, so an operator can find it. */
const WAITING = ['awaiting_resolution', 'needs_review'];

export function startJobRun(input: JobWorkflowInput): JobRun {
  let changed = false;
  let published = input.status;
  const revision = input.revision ?? 1;
  setHandler(jobChangedSignal, () => {
    changed = true;
  });
  return {
    jobId: input.jobId,
    revision,
    setStatus(status) {
      if (status === published) return;
      // From revision 2, a job that never waited writes no status at all: nothing would be corrected.
      if (revision >= 2 && published === undefined && !WAITING.includes(status)) return;
      published = status;
      if (input.searchAttributes !== false) upsertSearchAttributes([{ key: searchAttributes.status, value: status }]);
    },
    leaveWait() {
      if (published !== undefined && WAITING.includes(published)) this.setStatus('running');
    },
    beforeLook() {
      changed = false;
    },
    async waitForChange(ms) {
      await condition(() => changed, ms);
    },
    async continueAsNewIfLong() {
      const info = workflowInfo();
      if (info.historyLength < HISTORY_EVENTS_PER_RUN && !info.continueAsNewSuggested) return;
      const next: JobWorkflowInput = {
        jobId: input.jobId,
        ...(input.searchAttributes === false ? { searchAttributes: false } : {}),
        ...(published ? { status: published } : {}),
        ...(input.revision ? { revision: input.revision } : {}),
      };
      await continueAsNew<(input: JobWorkflowInput) => Promise<string>>(next);
    },
  };
}
