/**
 * `--live-self-test`: the checks fire on the real stack too. Each scenario runs
 * a trial and breaks one invariant on purpose, from outside where it can (an
 * extra delivery, a terminated workflow, a stopped worker, a killed process,
 * PostgreSQL restarted unannounced, a provider request under an attempt's id)
 * and by a write to the ledger where nothing else can (a second job, a second
 * winner, a tampered result, extra attempts). It passes only if every
 * scenario's violation is reported: collectors and checks both work.
 */
import type { Pool } from 'pg';
import type { ViolationKind } from './checks';
import { sleep, type RunContext } from './context';
import { composeMessage, type ProviderFault, type SinkFault, type TrialPlan } from './faults';
import { watchJob } from './job-view';
import { runTrial, type Sabotage } from './trial';

interface Scenario {
  name: string;
  expect: ViolationKind;
  primary?: ProviderFault;
  backup?: ProviderFault;
  sink?: SinkFault;
  settleMs?: number;
  sabotage: (ctx: RunContext, plan: TrialPlan) => Sabotage;
}

const deliverExtra = (ctx: RunContext, ticketId: string, key: string) =>
  fetch(`${ctx.stack.downstreamUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ ticketId, channel: 'email', text: 'sent twice on purpose' }),
  }).then((r) => void r.body?.cancel());

const sql = (db: Pool, text: string, params: unknown[]) => db.query(text, params).then(() => undefined);

function scenarios(): Scenario[] {
  return [
    { name: 'a second delivery for the ticket', expect: 'dup-msg', sabotage: (ctx, plan) => ({ after: () => deliverExtra(ctx, plan.ticketId, 'sabotage-dup') }) },
    { name: 'a delivery for a failed job', expect: 'stray-msg', sink: { kind: 'status', code: 400 }, sabotage: (ctx, plan) => ({ after: () => deliverExtra(ctx, plan.ticketId, 'sabotage-stray') }) },
    {
      name: 'the result names another messageId',
      expect: 'lost-msg',
      sabotage: (ctx) => ({ after: (_, id) => sql(ctx.stack.db, `UPDATE jobs SET result = jsonb_set(result, '{messageId}', '"msg_sabotage"') WHERE id = $1`, [id]) }),
    },
    {
      name: 'a second job for the intent',
      expect: 'one-job',
      sabotage: (ctx) => ({
        after: (_, id) =>
          sql(
            ctx.stack.db,
            `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id)
             SELECT principal_id, operation, idempotency_key || '-sabotage', request_digest, schema_version, input, workflow_id || '-sabotage' FROM jobs WHERE id = $1`,
            [id],
          ),
      }),
    },
    {
      name: 'a failed attempt turned into a second winner',
      expect: 'one-winner',
      primary: { kind: 'status', code: 429 },
      sabotage: (ctx) => ({ after: (_, id) => sql(ctx.stack.db, `UPDATE attempts SET status = 'succeeded' WHERE job_id = $1 AND seq = 1`, [id]) }),
    },
    {
      name: 'the workflow terminated while its job waits',
      expect: 'stuck',
      primary: { kind: 'hang' },
      settleMs: 30_000,
      sabotage: (ctx) => ({
        operator: false,
        during: async (scope) => {
          const id = await scope.jobId;
          if (!id) return;
          const watched = await watchJob(scope.client, ctx.stack.operatorKey, id, (job) => job.attempts.some((a) => a.status === 'unknown'), scope.deadline);
          if (watched.reached) await ctx.stack.temporal.workflow.getHandle(watched.job.workflowId).terminate('chaos live self-test');
        },
      }),
    },
    { name: 'no worker at all', expect: 'waiting', settleMs: 12_000, sabotage: (ctx) => ({ during: () => ctx.stack.workers[0].kill() }) },
    { name: 'an unknown attempt nobody resolves', expect: 'unsettled', primary: { kind: 'hang' }, backup: { kind: 'hang' }, settleMs: 15_000, sabotage: () => ({ operator: false }) },
    {
      name: 'PostgreSQL restarted without a down window',
      expect: '5xx',
      primary: { kind: 'delay', ms: 1_800 },
      sabotage: (ctx) => ({
        during: async () => {
          await sleep(300);
          await ctx.stack.restartPostgres(1_500);
        },
      }),
    },
    {
      name: 'a worker dies unannounced',
      expect: 'crash',
      primary: { kind: 'delay', ms: 1_500 },
      sabotage: (ctx) => ({
        during: async () => {
          await sleep(300);
          const pid = ctx.stack.workers[0].process?.pid;
          if (pid) process.kill(pid, 'SIGKILL');
        },
      }),
    },
    {
      name: 'the stored result changed after it was answered',
      expect: 'replay',
      sabotage: (ctx) => ({ after: (_, id) => sql(ctx.stack.db, `UPDATE jobs SET result = jsonb_set(result, '{reply}', '"tampered"') WHERE id = $1`, [id]) }),
    },
    {
      name: 'three extra attempts in the ledger',
      expect: 'attempts',
      sabotage: (ctx) => ({
        after: (_, id) =>
          sql(
            ctx.stack.db,
            `INSERT INTO attempts (job_id, seq, provider, model, status, job_version) SELECT $1, 100 + n, 'sim-primary', 'sim-small', 'failed', 0 FROM generate_series(1, 3) AS n`,
            [id],
          ),
      }),
    },
    {
      name: 'a good job marked failed',
      expect: 'outcome',
      sabotage: (ctx) => ({ after: (_, id) => sql(ctx.stack.db, `UPDATE jobs SET status = 'failed', result = NULL, error = '{"type": "sabotage", "detail": "marked failed by the live self-test"}' WHERE id = $1`, [id]) }),
    },
    {
      name: "a provider request under a failed attempt's id",
      expect: 'phantom',
      primary: { kind: 'status', code: 429 },
      sabotage: (ctx) => ({
        after: async (_, id) => {
          const { rows } = await ctx.stack.db.query(`SELECT id FROM attempts WHERE job_id = $1 AND seq = 1`, [id]);
          await fetch(`${ctx.stack.providerUrls['sim-primary']}/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': rows[0].id },
            body: JSON.stringify({ model: 'sim-small', messages: [{ role: 'user', content: 'executed behind the ledger' }] }),
          }).then((r) => r.text());
        },
      }),
    },
  ];
}

function planFor(index: number, scenario: Scenario): TrialPlan {
  const primary = scenario.primary ?? { kind: 'ok' };
  const backup = scenario.backup ?? { kind: 'ok' };
  const sink = scenario.sink ?? { kind: 'ok' };
  const tag = `${process.pid}-${index}`;
  return {
    runSeed: 0,
    trial: 9_000 + index,
    ticketId: `S-${tag}`,
    idempotencyKey: `sabotage-${tag}`,
    channel: 'email',
    customerMessage: composeMessage('Where is my order?', primary, backup, sink),
    burst: 1,
    waitSeconds: [0],
    primary,
    backup,
    sink,
    process: { kind: 'none' },
    race: { kind: 'none' },
    secondWorker: false,
    operatorOutcome: 'failed',
  };
}

/** Runs every scenario; @returns the exit code (0: every check fired). */
export async function runLiveSelfTest(ctx: RunContext): Promise<number> {
  let failed = 0;
  const list = scenarios();
  for (const [index, scenario] of list.entries()) {
    const plan = planFor(index, scenario);
    const record = await runTrial(ctx, plan, { settleMs: scenario.settleMs ?? 45_000, sabotage: scenario.sabotage(ctx, plan) });
    const kinds = [...new Set(record.violations.map((v) => v.kind))];
    const ok = kinds.includes(scenario.expect);
    if (!ok) failed++;
    console.log(`${ok ? 'pass' : 'FAIL'}  ${scenario.expect.padEnd(10)} fires on the real stack: ${scenario.name} (reported: ${kinds.join(', ') || 'nothing'}${record.error ? `; suite error: ${record.error.split('\n')[0]}` : ''})`);
  }
  console.log(`\nchaos live self-test: ${list.length - failed} of ${list.length} checks fired (conflict-409 is shown on fabricated data only: no outside act makes the API accept another body)`);
  return failed ? 1 : 0;
}
