/**
 * What the outside shows of one settled entries trial, as plain data: every
 * HTTP answer the SDKs got and what each SDK call returned to the app, the
 * ledger (read-only, by the trial's principal), Temporal's status of open
 * jobs. The checks are pure functions of it.
 */
import type { DownWindow } from '../context';
import type { GwAttempt, GwEffect, GwJob, GwSettlement } from '../gateway/observation';
import type { EntryAlias, Protocol } from './plan';
import type { RawExchange, SdkCall } from './sdk-app';

export interface EntryIntentFacts {
  label: string;
  key: string;
  alias: EntryAlias;
  protocol: Protocol;
  /** No provider was told to misbehave: one attempt must do. */
  clean: boolean;
}

export interface EntriesObservation {
  principal: string;
  intents: EntryIntentFacts[];
  exchanges: RawExchange[];
  calls: SdkCall[];
  windows: DownWindow[];
  crashes: Array<{ name: string; at: number; detail: string }>;
  /** A worker was killed in this trial: an attempt it held may be followed by another. */
  workerKilled: boolean;
  jobs: GwJob[];
  attempts: GwAttempt[];
  effects: GwEffect[];
  settlements: GwSettlement[];
  /** Temporal's status of each open job's workflow (by job id). */
  workflows: Record<string, string>;
  settings: { maxAttempts: number };
}
