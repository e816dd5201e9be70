/**
 * What the outside shows of one settled gateway trial, as plain data: the
 * ledger (read-only), the API's answers, the usage report, the downstream's
 * records, the route versions and their events, and what the suite's
 * operator saw while jobs waited. The checks are pure functions of it.
 */
import type { Exchange } from '../api-client';
import type { DownWindow } from '../context';
import type { HedgePolicy } from '../../src/operations/operation';
import type { DownstreamRequest } from './downstream';

export interface GwJob {
  id: string;
  operation: string;
  idempotencyKey: string;
  ticketId: string;
  status: string;
  result: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  completedBy: string | null;
  /** Epoch ms, the database's clock (as every time of the ledger). */
  createdAt: number;
  terminalAt: number | null;
  workflowId: string;
  deadlineAt: number | null;
  run: number;
  routeVersion: string | null;
}

export interface GwAttempt {
  id: string;
  jobId: string;
  run: number;
  seq: number;
  lane: number;
  provider: string;
  model: string;
  status: string;
  errorClass: string | null;
  resolved: boolean;
  startedAt: number;
  endedAt: number | null;
  /** The Retry-After the ledger kept from a 429 (evidence.retryAfterMs). */
  retryAfterMs?: number;
  usageReported: boolean;
  /** Decimal text; null when unknown or unpriced. */
  cost: string | null;
  inputTokens: number;
  outputTokens: number;
}

export interface GwEffect {
  jobId: string;
  name: string;
  key: string;
  status: string;
  resolved: boolean;
}

export interface GwSettlement {
  jobId: string;
  run: number;
  jobStatus: string;
  providerCost: string;
  billable: string;
  inputTokens: number;
  outputTokens: number;
  attempts: number;
  settledAt: number;
}

export interface GwAdjustment {
  jobId: string;
  run: number;
  attemptId: string;
  providerCost: string;
  inputTokens: number;
  outputTokens: number;
  createdAt: number;
}

export interface GwEvent {
  jobId: string;
  type: string;
  at: number;
}

export interface RouteVersionEventObs {
  type: string;
  at: number;
  by: string;
  cause?: string;
}

export interface RouteVersionObs {
  operation: string;
  version: string;
  state: string;
  previousVersion: string | null;
  shareBp: number | null;
  thresholds: { window: number; contractViolationsPercent: number; unknownsPercent: number; failedPercent: number | null; effectsInReview: number } | null;
  createdAt: number;
  events: RouteVersionEventObs[];
}

/** What the operator saw of a job that only an operator could move, once that had lasted a while. */
export interface AttentionSample {
  at: number;
  jobId: string;
  reason: 'unknown' | 'review';
  /** The job's status as the API showed it then. */
  status: string;
  /** Whether GET /v1/jobs?status=… (awaiting_resolution, or needs_review) listed it then. */
  listed: boolean;
  /** How long the wait had lasted when sampled. */
  waitedMs: number;
}

/** One intent of the trial, as the plan and the client knew it. */
export interface IntentFacts {
  label: string;
  operation: string;
  key: string;
  /** The Retry-After of each provider's 429 as the plan chose it (ms). */
  retryAfterMs: Record<string, number>;
}

/** GET /v1/usage's totals for the principal, and the ledger's, read together. */
export interface UsageFacts {
  status: number;
  reported: { providerCost: string; inputTokens: number; outputTokens: number; jobs: number };
  /** Σ over the principal's attempts whose run is settled: cost and tokens (settlements plus adjustments). */
  ledger: { providerCost: string; inputTokens: number; outputTokens: number };
  /** The ledger changed while the report was read (a late usage landed): the comparison says nothing. */
  unstable: boolean;
}

export interface GatewayObservation {
  principal: string;
  intents: IntentFacts[];
  exchanges: Exchange[];
  windows: DownWindow[];
  crashes: Array<{ name: string; at: number; detail: string }>;
  jobs: GwJob[];
  attempts: GwAttempt[];
  effects: GwEffect[];
  settlements: GwSettlement[];
  adjustments: GwAdjustment[];
  events: GwEvent[];
  /** Temporal's status of each open job's workflow (by job id). */
  workflows: Record<string, string>;
  usage?: UsageFacts;
  downstream: {
    /** The declared effect: its host (Host header) and method. */
    host: string;
    method: string;
    secret: string;
    /** Every request attributed to this trial's tickets and keys, on either server. */
    requests: DownstreamRequest[];
    /** The effects' keys the downstream acted on (stored a comment for). */
    performed: string[];
    /** What either server stored for the trial's effects' keys: one entry per comment. */
    comments: Array<{ key: string; server: 'declared' | 'liar'; id: string }>;
    /** The effects declared against the liar: every claim they make, a drill found false. */
    liars: readonly string[];
  };
  canary?: {
    /** Per operation, what served new jobs when the trial began. */
    initialServing: Record<string, string>;
    /** Per operation, the providers file's route version: what serves when no version is promoted. */
    baseline: Record<string, string>;
    /** Every version of the canary operations the trial created, and the one serving when it began. */
    versions: RouteVersionObs[];
  };
  samples: AttentionSample[];
  /** The principal's daily token budget (input plus output). */
  budgetTokens: number;
  settings: {
    backoffMs: number;
    maxAttempts: number;
    hedge: Record<string, HedgePolicy | undefined>;
    minAttemptMs: Record<string, number>;
    /** Operations whose failed jobs are reopened by the same intent: their earlier answers may differ from the stored result. */
    reopenable: string[];
  };
}
