/** What every part of a trial shares: the stack, the record of down windows, the trial's event log. */
import type { ApiClient } from './api-client';
import type { ChaosStack } from './stack';

/** A span in which the API could not answer properly: it was killed, or its database was down. */
export interface DownWindow {
  what: 'api' | 'postgres';
  from: number;
  to: number;
}

export interface RunContext {
  stack: ChaosStack;
  /** Every down window of the run (trials with process faults run alone, so each window is one trial's). */
  windows: DownWindow[];
  log: (line: string) => void;
  /** Where to keep each job's workflow history (--histories), if anywhere. */
  historiesDir?: string;
}

export interface TrialEvent {
  at: number;
  what: string;
}

/** One trial's view of the run: its client, its events, its deadline. */
export interface TrialScope {
  ctx: RunContext;
  client: ApiClient;
  events: TrialEvent[];
  note(what: string): number;
  deadline: number;
  /** Resolves with the job's id once a POST was answered 2xx (undefined if none ever was). */
  jobId: Promise<string | undefined>;
  submittedAt: number;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
