/**
 * Reads a settled gateway trial from the outside: the ledger (read-only
 * queries, by the trial's principal), GET /v1/usage beside the ledger's own
 * sums, the downstream's records and Temporal's describe of open jobs.
 */
import type { Pool } from 'pg';
import type { Client } from '@temporalio/client';
import type { ApiClient } from '../api-client';
import { workflowStatus } from '../temporal-view';
import type { GatewayDownstream } from './downstream';
import type { GwAdjustment, GwAttempt, GwEffect, GwEvent, GwJob, GwSettlement, UsageFacts } from './observation';
import { sumDecimals } from './checks/decimal';

const ms = (value: Date | null): number | null => (value ? value.getTime() : null);

export interface LedgerRead {
  jobs: GwJob[];
  attempts: GwAttempt[];
  effects: GwEffect[];
  settlements: GwSettlement[];
  adjustments: GwAdjustment[];
  events: GwEvent[];
}

/** Every row of the principal's jobs. */
export async function readGatewayLedger(db: Pool, principal: string): Promise<LedgerRead> {
  const jobs = await db.query(
    `SELECT id, operation, idempotency_key, input ->> 'ticketId' AS ticket_id, status, result, error, completed_by, created_at, terminal_at, workflow_id, deadline_at, run, route_version
       FROM jobs WHERE principal_id = $1 ORDER BY created_at`,
    [principal],
  );
  const ids = jobs.rows.map((row) => row.id as string);
  const [attempts, effects, settlements, adjustments, events] = await Promise.all([
    db.query(
      `SELECT id, job_id, run, seq, lane, provider, model, status, error_class, resolution IS NOT NULL AS resolved, started_at, ended_at,
              (evidence ->> 'retryAfterMs')::numeric AS retry_after_ms, usage_reported, cost::text AS cost, input_tokens, output_tokens
         FROM attempts WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, run, seq`,
      [ids],
    ),
    db.query(`SELECT job_id, name, effect_key, status, resolution IS NOT NULL AS resolved FROM effects WHERE job_id = ANY($1::uuid[])`, [ids]),
    db.query(`SELECT job_id, run, job_status, provider_cost::text, billable::text, input_tokens, output_tokens, attempts, settled_at FROM settlements WHERE job_id = ANY($1::uuid[])`, [ids]),
    db.query(`SELECT job_id, run, attempt_id, provider_cost::text, input_tokens, output_tokens, created_at FROM settlement_adjustments WHERE job_id = ANY($1::uuid[])`, [ids]),
    db.query(`SELECT job_id, type, created_at FROM job_events WHERE job_id = ANY($1::uuid[]) AND type = ANY($2) ORDER BY id`, [ids, ['attempt.unknown', 'effect.needs_review', 'effect.repeat_refused', 'job.reopened']]),
  ]);
  return {
    jobs: jobs.rows.map((row) => ({
      id: row.id,
      operation: row.operation,
      idempotencyKey: row.idempotency_key,
      ticketId: row.ticket_id,
      status: row.status,
      result: row.result,
      error: row.error,
      completedBy: row.completed_by,
      createdAt: ms(row.created_at)!,
      terminalAt: ms(row.terminal_at),
      workflowId: row.workflow_id,
      deadlineAt: ms(row.deadline_at),
      run: row.run,
      routeVersion: row.route_version,
    })),
    attempts: attempts.rows.map((row) => ({
      id: row.id,
      jobId: row.job_id,
      run: row.run,
      seq: row.seq,
      lane: row.lane,
      provider: row.provider,
      model: row.model,
      status: row.status,
      errorClass: row.error_class,
      resolved: row.resolved,
      startedAt: ms(row.started_at)!,
      endedAt: ms(row.ended_at),
      ...(row.retry_after_ms !== null ? { retryAfterMs: Number(row.retry_after_ms) } : {}),
      usageReported: row.usage_reported,
      cost: row.cost,
      inputTokens: Number(row.input_tokens ?? 0),
      outputTokens: Number(row.output_tokens ?? 0),
    })),
    effects: effects.rows.map((row) => ({ jobId: row.job_id, name: row.name, key: row.effect_key, status: row.status, resolved: row.resolved })),
    settlements: settlements.rows.map((row) => ({
      jobId: row.job_id,
      run: row.run,
      jobStatus: row.job_status,
      providerCost: row.provider_cost,
      billable: row.billable,
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      attempts: row.attempts,
      settledAt: ms(row.settled_at)!,
    })),
    adjustments: adjustments.rows.map((row) => ({
      jobId: row.job_id,
      run: row.run,
      attemptId: row.attempt_id,
      providerCost: row.provider_cost,
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      createdAt: ms(row.created_at)!,
    })),
    events: events.rows.map((row) => ({ jobId: row.job_id, type: row.type, at: ms(row.created_at)! })),
  };
}

/** What the bill should say: every reported attempt of a run that is settled (at its settlement, or later as an adjustment). */
export function ledgerSpend(ledger: LedgerRead): UsageFacts['ledger'] {
  const settled = new Set(ledger.settlements.map((s) => `${s.jobId}/${s.run}`));
  const billed = ledger.attempts.filter((a) => a.usageReported && settled.has(`${a.jobId}/${a.run}`));
  return {
    providerCost: sumDecimals(billed.map((a) => a.cost)),
    inputTokens: billed.reduce((sum, a) => sum + a.inputTokens, 0),
    outputTokens: billed.reduce((sum, a) => sum + a.outputTokens, 0),
  };
}

/**
 * GET /v1/usage for the principal over the trial's days, between two reads
 * of the ledger: when they differ, a late usage landed meanwhile (unstable).
 */
export async function readUsage(client: ApiClient, operatorKey: string, db: Pool, principal: string, sinceMs: number): Promise<{ usage: UsageFacts; ledger: LedgerRead }> {
  for (let tries = 1; ; tries++) {
    const before = await readGatewayLedger(db, principal);
    const from = new Date(Math.floor(sinceMs / 86_400_000) * 86_400_000 - 86_400_000).toISOString();
    const to = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 + 2 * 86_400_000).toISOString();
    const answer = await client.request('GET', `/v1/usage?principal=${encodeURIComponent(principal)}&from=${from}&to=${to}&groupBy=day`, { label: 'usage', token: operatorKey, timeoutMs: 10_000 });
    const after = await readGatewayLedger(db, principal);
    const spend = ledgerSpend(after);
    const unstable = JSON.stringify(ledgerSpend(before)) !== JSON.stringify(spend);
    if (unstable && tries < 5) continue;
    const lines = answer.status === 200 ? ((answer.body as { lines?: Array<{ jobs: number; inputTokens: number; outputTokens: number; providerCost: string }> }).lines ?? []) : [];
    return {
      ledger: after,
      usage: {
        status: answer.status,
        reported: {
          providerCost: sumDecimals(lines.map((l) => l.providerCost)),
          inputTokens: lines.reduce((sum, l) => sum + l.inputTokens, 0),
          outputTokens: lines.reduce((sum, l) => sum + l.outputTokens, 0),
          jobs: lines.reduce((sum, l) => sum + l.jobs, 0),
        },
        ledger: spend,
        unstable,
      },
    };
  }
}

/** Temporal's status of each open job's workflow. */
export async function openWorkflows(temporal: Client, jobs: GwJob[]): Promise<Record<string, string>> {
  const statuses: Record<string, string> = {};
  for (const job of jobs.filter((j) => j.terminalAt === null)) {
    let status = await workflowStatus(temporal, job.workflowId);
    for (let i = 0; status === 'UNREACHABLE' && i < 10; i++) status = await workflowStatus(temporal, job.workflowId);
    statuses[job.id] = status;
  }
  return statuses;
}

/** The downstream's records that belong to this trial: its tickets' and its effects' keys, on either server. */
export function trialRequests(downstream: GatewayDownstream, ticketIds: string[], keys: string[]): ReturnType<GatewayDownstream['requests']> {
  const keySet = new Set(keys);
  return downstream.requests().filter((r) => {
    if (r.key && keySet.has(r.key)) return true;
    if (r.ticketId !== undefined && ticketIds.includes(r.ticketId)) return true;
    let path = r.path;
    try {
      path = decodeURIComponent(r.path);
    } catch {
      // kept as sent
    }
    return ticketIds.some((ticket) => path.includes(ticket)) || keys.some((key) => path.includes(key));
  });
}
