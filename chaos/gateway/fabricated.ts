/** Ledger rows for the self-tests' fabricated observations: a job and an attempt that went right, changed by the fields given. */
import type { GwAttempt, GwJob } from './observation';

/** A succeeded job of `operation` under `key`, admitted at 1 000 ms and ended at 2 000. */
export const fabricatedJob = (id: string, operation: string, key: string, fields: Partial<GwJob> = {}): GwJob => ({
  id,
  operation,
  idempotencyKey: key,
  ticketId: `T-${key}`,
  status: 'succeeded',
  result: { answer: 'ok' },
  error: null,
  completedBy: null,
  createdAt: 1_000,
  terminalAt: 2_000,
  workflowId: `wf-${key}`,
  deadlineAt: null,
  run: 1,
  routeVersion: null,
  ...fields,
});

/** A succeeded attempt `seq` of the job on `provider`, 50 ms long, with its usage reported (none, unless given). */
export const fabricatedAttempt = (id: string, jobId: string, seq: number, provider: string, fields: Partial<GwAttempt> = {}): GwAttempt => ({
  id,
  jobId,
  run: 1,
  seq,
  lane: 0,
  provider,
  model: provider === 'sim-primary' ? 'sim-small' : 'sim-large',
  status: 'succeeded',
  errorClass: null,
  resolved: false,
  startedAt: 1_000 + seq * 100,
  endedAt: 1_050 + seq * 100,
  usageReported: true,
  cost: '0',
  inputTokens: 0,
  outputTokens: 0,
  ...fields,
});
