/**
 * After a trial has settled, what the outside shows of it: PostgreSQL
 * (read-only queries), the API, the downstream's deliveries, Temporal's
 * describe of the workflow. The checks run on this plain record alone.
 */
import type { Pool } from 'pg';
import type { Exchange } from './api-client';
import type { DownWindow } from './context';
import type { JobView } from './job-view';
import { PRINCIPAL } from './stack';
import { workflowStatus } from './temporal-view';
import type { Client } from '@temporalio/client';

export interface JobRow {
  id: string;
  idempotencyKey: string;
  status: string;
  result: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  completedBy: string | null;
  terminalAt: number | null;
  workflowId: string;
  /** The caller's deadline the ledger stored (epoch ms), or null. */
  deadlineAt: number | null;
}

export interface AttemptRow {
  id: string;
  jobId: string;
  seq: number;
  provider: string;
  status: string;
  errorClass: string | null;
  /** An operator resolved it. */
  resolved: boolean;
  /** When it was opened (epoch ms, the database's clock). */
  startedAt: number;
  /** What its provider's request lookup says it did with the attempt's request. */
  atProvider?: 'absent' | 'executing' | 'completed' | 'unreachable';
}

export interface EffectRow {
  name: string;
  key: string;
  status: string;
  receipt: Record<string, unknown> | null;
  /** An operator settled it. */
  resolved: boolean;
}

/** A job's bill (settlements), as the ledger holds it. */
export interface SettlementRow {
  jobId: string;
  jobStatus: string;
  /** Decimal strings, as PostgreSQL's numeric reads. */
  providerCost: string;
  billable: string;
  attempts: number;
}

export interface Delivery {
  messageId: string;
  idempotencyKey: string;
}

export interface Observation {
  idempotencyKey: string;
  maxAttempts: number;
  /** Every API exchange of the trial (submits, the conflicting submit, polls, operator calls, the replay). */
  exchanges: Exchange[];
  windows: DownWindow[];
  /** The jobs of the trial's ticket (one intent per ticket): exactly one is expected. */
  jobs: JobRow[];
  attempts: AttemptRow[];
  effects: EffectRow[];
  settlements: SettlementRow[];
  deliveries: Delivery[];
  /** Temporal's status of the job's workflow, read before any replay could start a new one. */
  workflow?: string;
  /** The job as the API showed it after settling (before the replay). */
  view?: JobView;
  /** Whether the conflicting submit was part of the trial. */
  conflictSent: boolean;
  /** Nothing in the trial's plan is a reason for the job to fail (faults.expectsSuccess). */
  expectSuccess: boolean;
  /** Processes of the stack that died during the trial without the suite killing them. */
  crashes: Array<{ name: string; at: number; detail: string }>;
  /** The Request-Deadline every submit carried (epoch ms), when the trial drew one. */
  requestDeadline?: number;
}

async function retrying<T>(read: () => Promise<T>, tries = 20): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await read();
    } catch (err) {
      if (i >= tries) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** The ledger rows of a ticket's jobs, read-only. */
export async function readLedger(db: Pool, ticketId: string): Promise<{ jobs: JobRow[]; attempts: AttemptRow[]; effects: EffectRow[]; settlements: SettlementRow[] }> {
  return retrying(async () => {
    const jobs = await db.query(
      `SELECT id, idempotency_key, status, result, error, completed_by, terminal_at, workflow_id, deadline_at
         FROM jobs WHERE principal_id = $1 AND input ->> 'ticketId' = $2 ORDER BY created_at`,
      [PRINCIPAL, ticketId],
    );
    const ids = jobs.rows.map((row) => row.id as string);
    const attempts = await db.query(`SELECT id, job_id, seq, provider, status, error_class, resolution IS NOT NULL AS resolved, started_at FROM attempts WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, seq`, [ids]);
    const effects = await db.query(`SELECT name, effect_key, status, receipt, resolution IS NOT NULL AS resolved FROM effects WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, name`, [ids]);
    const settlements = await db.query(
      `SELECT job_id, job_status, provider_cost::text, billable::text, attempts FROM settlements WHERE job_id = ANY($1::uuid[]) ORDER BY job_id`,
      [ids],
    );
    return {
      jobs: jobs.rows.map((row) => ({
        id: row.id,
        idempotencyKey: row.idempotency_key,
        status: row.status,
        result: row.result,
        error: row.error,
        completedBy: row.completed_by,
        terminalAt: row.terminal_at ? (row.terminal_at as Date).getTime() : null,
        workflowId: row.workflow_id,
        deadlineAt: row.deadline_at ? (row.deadline_at as Date).getTime() : null,
      })),
      attempts: attempts.rows.map((row) => ({ id: row.id, jobId: row.job_id, seq: row.seq, provider: row.provider, status: row.status, errorClass: row.error_class, resolved: row.resolved, startedAt: (row.started_at as Date).getTime() })),
      effects: effects.rows.map((row) => ({ name: row.name, key: row.effect_key, status: row.status, receipt: row.receipt, resolved: row.resolved })),
      settlements: settlements.rows.map((row) => ({ jobId: row.job_id, jobStatus: row.job_status, providerCost: row.provider_cost, billable: row.billable, attempts: row.attempts })),
    };
  });
}

/** What the downstream received for a ticket. */
export async function readDeliveries(downstreamUrl: string, ticketId: string): Promise<Delivery[]> {
  return retrying(async () => {
    const response = await fetch(`${downstreamUrl}/v1/messages?ticketId=${encodeURIComponent(ticketId)}`, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`deliveries: HTTP ${response.status}`);
    const { messages } = (await response.json()) as { messages: Delivery[] };
    return messages.map((m) => ({ messageId: m.messageId, idempotencyKey: m.idempotencyKey }));
  });
}

/** The provider's own record of a request (SIM.md lookup), by the attempt id sent as its Idempotency-Key. */
export async function readAtProvider(baseUrl: string | undefined, attemptId: string): Promise<AttemptRow['atProvider']> {
  if (!baseUrl) return 'unreachable';
  try {
    const response = await fetch(`${baseUrl}/requests/${encodeURIComponent(attemptId)}`, { signal: AbortSignal.timeout(5_000) });
    if (response.status === 404) return 'absent';
    if (!response.ok) return 'unreachable';
    const body = (await response.json()) as { status?: string };
    return body.status === 'completed' ? 'completed' : 'executing';
  } catch {
    return 'unreachable';
  }
}

export async function observe(args: {
  db: Pool;
  temporal: Client;
  downstreamUrl: string;
  providerUrls: Readonly<Record<string, string>>;
  ticketId: string;
  idempotencyKey: string;
  maxAttempts: number;
  exchanges: Exchange[];
  windows: DownWindow[];
  view?: JobView;
  conflictSent: boolean;
  crashes: Observation['crashes'];
  expectSuccess: boolean;
  requestDeadline?: number;
}): Promise<Observation> {
  const ledger = await readLedger(args.db, args.ticketId);
  for (const attempt of ledger.attempts) attempt.atProvider = await readAtProvider(args.providerUrls[attempt.provider], attempt.id);
  const deliveries = await readDeliveries(args.downstreamUrl, args.ticketId);
  const job = ledger.jobs.find((j) => j.idempotencyKey === args.idempotencyKey);
  let workflow: string | undefined;
  if (job) {
    workflow = await workflowStatus(args.temporal, job.workflowId);
    for (let i = 0; workflow === 'UNREACHABLE' && i < 10; i++) workflow = await workflowStatus(args.temporal, job.workflowId);
  }
  return {
    idempotencyKey: args.idempotencyKey,
    maxAttempts: args.maxAttempts,
    exchanges: args.exchanges,
    windows: args.windows,
    ...ledger,
    deliveries,
    ...(workflow ? { workflow } : {}),
    ...(args.view ? { view: args.view } : {}),
    conflictSent: args.conflictSent,
    crashes: args.crashes,
    expectSuccess: args.expectSuccess,
    ...(args.requestDeadline !== undefined ? { requestDeadline: args.requestDeadline } : {}),
  };
}
