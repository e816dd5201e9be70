/**
 * Canary routes as operators drive them, through the API only: start one,
 * promote, stop or roll back, and read what serves each operation. The
 * canaries' own stops race these calls; a 409 is a race lost, not a failure.
 */
import type { Pool } from 'pg';
import type { ApiClient, Exchange } from '../api-client';
import type { RouteVersionObs } from './observation';
import type { CanaryAction, CanaryPlan } from './plan';

const STEPS = {
  /** Leads with sim-backup: a harm aimed at sim-backup reaches only this canary's jobs. */
  broken: [
    { provider: 'sim-backup', model: 'sim-large' },
    { provider: 'sim-primary', model: 'sim-small' },
  ],
  healthy: [
    { provider: 'sim-primary', model: 'sim-large' },
    { provider: 'sim-backup', model: 'sim-large' },
  ],
  second: [
    { provider: 'sim-primary', model: 'sim-small' },
    { provider: 'sim-backup', model: 'sim-large' },
  ],
} as const;

/** The broken canary's thresholds: the second job with a contract violation or an unknown attempt, the first with an effect in review, stop it. */
const BROKEN_THRESHOLDS = { window: 10, contractViolationsPercent: 10, unknownsPercent: 10, effectsInReview: 0, failedPercent: null };
const HEALTHY_THRESHOLDS = { window: 10 };

export class CanaryControl {
  constructor(
    private readonly client: ApiClient,
    private readonly operatorKey: string,
    private readonly plan: CanaryPlan,
  ) {}

  private post(path: string, body: unknown, label: string): Promise<Exchange> {
    return this.client.request('POST', path, { label, token: this.operatorKey, body });
  }

  /** What serves each operation's new jobs now (GET /v1/routes), and its running canary if any. */
  async serving(): Promise<Record<string, { version: string; canary: string | null; baseline: string }>> {
    const routes = await this.client.request('GET', '/v1/routes', { label: 'routes', token: this.operatorKey, timeoutMs: 10_000 });
    if (routes.status !== 200) throw new Error(`GET /v1/routes answered ${routes.status}`);
    const operations = (routes.body as { operations: Array<{ operation: string; baseline: string; serving: { version: string; canary: { version: string } | null } }> }).operations;
    return Object.fromEntries(operations.map((o) => [o.operation, { version: o.serving.version, canary: o.serving.canary?.version ?? null, baseline: o.baseline }]));
  }

  /** Stops a canary an earlier trial left running, so this trial's may start. @returns what serves each of the plan's operations then. */
  async prepare(): Promise<{ serving: Record<string, string>; baseline: Record<string, string> }> {
    const ops = [this.plan.broken.operation, this.plan.healthy.operation];
    const before = await this.serving();
    for (const op of ops) {
      const running = before[op]?.canary;
      if (running) await this.post(`/v1/routes/${op}/canaries/${running}/stop`, { reason: 'chaos: a new canary trial begins' }, 'canary:cleanup');
    }
    const after = await this.serving();
    return { serving: Object.fromEntries(ops.map((op) => [op, after[op]!.version])), baseline: Object.fromEntries(ops.map((op) => [op, after[op]!.baseline])) };
  }

  private start(operation: string, version: string, steps: readonly { provider: string; model: string }[], sharePercent: number, thresholds: object): Promise<Exchange> {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    return this.post(`/v1/routes/${operation}/canaries`, { version, steps, owner: 'chaos', expiresAt, sharePercent, thresholds, reason: 'chaos gateway trial' }, `canary:start ${version}`);
  }

  /** Starts both canaries. @throws when one cannot start: the trial could not set up what it tests. */
  async startBoth(): Promise<void> {
    const { broken, healthy } = this.plan;
    for (const started of [
      await this.start(broken.operation, broken.version, STEPS.broken, broken.sharePercent, BROKEN_THRESHOLDS),
      await this.start(healthy.operation, healthy.version, STEPS.healthy, healthy.sharePercent, HEALTHY_THRESHOLDS),
    ]) {
      if (started.status !== 201) throw new Error(`${started.label} answered ${started.status}: ${JSON.stringify(started.body).slice(0, 300)}`);
    }
  }

  /** One operator action; @returns its exchange (200, or 409 when a race was lost). */
  act(action: CanaryAction): Promise<Exchange> {
    const { broken, healthy, second } = this.plan;
    const [operation, version] = action.target === 'broken' ? [broken.operation, broken.version] : action.target === 'healthy' ? [healthy.operation, healthy.version] : [healthy.operation, second.version];
    if (action.action === 'start-second') return this.start(operation, version, STEPS.second, 100, HEALTHY_THRESHOLDS);
    const body = action.action === 'promote' ? {} : { reason: `chaos operator: ${action.action}` };
    return this.post(`/v1/routes/${operation}/canaries/${version}/${action.action}`, body, `canary:${action.action} ${version}`);
  }

  /** Leaves no canary of the trial running (promoted ones stay: what the next trial is tried against). */
  async cleanup(): Promise<void> {
    const now = await this.serving();
    for (const op of [this.plan.broken.operation, this.plan.healthy.operation]) {
      const running = now[op]?.canary;
      if (running) await this.post(`/v1/routes/${op}/canaries/${running}/stop`, { reason: 'chaos: the canary trial ended' }, 'canary:cleanup');
    }
  }
}

/** The route versions of the operations and their events since `sinceMs`, from the ledger (read-only). */
export async function readRouteVersions(db: Pool, operations: string[], sinceMs: number): Promise<RouteVersionObs[]> {
  const versions = await db.query(`SELECT operation, version, state, previous_version, share_bp, thresholds, created_at FROM route_versions WHERE operation = ANY($1)`, [operations]);
  const events = await db.query(`SELECT operation, version, type, created_at, detail FROM route_version_events WHERE operation = ANY($1) AND created_at >= $2 ORDER BY id`, [operations, new Date(sinceMs)]);
  return versions.rows
    .map((row) => ({
      operation: row.operation as string,
      version: row.version as string,
      state: row.state as string,
      previousVersion: row.previous_version as string | null,
      shareBp: row.share_bp as number | null,
      thresholds: row.thresholds as RouteVersionObs['thresholds'],
      createdAt: (row.created_at as Date).getTime(),
      events: events.rows
        .filter((e) => e.operation === row.operation && e.version === row.version)
        .map((e) => ({ type: e.type as string, at: (e.created_at as Date).getTime(), by: String(e.detail?.by ?? ''), ...(e.detail?.cause ? { cause: String(e.detail.cause) } : {}) })),
    }))
    .filter((v) => v.events.length > 0);
}
