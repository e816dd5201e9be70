import { startInfra } from './infra';
import { runJobs, startOnceflow } from './e2e';
import { Client } from 'pg';
import { DefaultLogger, Runtime } from '@temporalio/worker';
async function main() {
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const infra = await startInfra(console.log);
  try {
    const sys = await startOnceflow(infra);
    try {
      await runJobs(sys, infra, { jobs: 30, concurrency: 1, ticketPrefix: 'W' });
      const r = await runJobs(sys, infra, { jobs: 20, concurrency: 1, ticketPrefix: 'T' });
      console.log('p50', r.p50);
      const db = new Client({ connectionString: sys.env.DATABASE_URL }); await db.connect();
      const { rows } = await db.query(`SELECT j.id, j.created_at, j.terminal_at, e.type, e.created_at AS at FROM jobs j JOIN job_events e ON e.job_id = j.id WHERE j.id IN (SELECT id FROM jobs ORDER BY created_at DESC LIMIT 3) ORDER BY j.id, e.id`);
      let last = ''; let t0 = 0;
      for (const row of rows) { if (row.id !== last) { last = row.id; t0 = row.created_at.getTime(); console.log('--', row.id, 'total', row.terminal_at.getTime() - t0); } console.log('  ', (row.at.getTime() - t0).toString().padStart(5), row.type); }
      const { Connection, Client: TClient } = await import('@temporalio/client');
      const conn = await Connection.connect({ address: infra.temporal.address });
      const tc = new TClient({ connection: conn, namespace: infra.temporal.namespace });
      const wf = (await db.query('SELECT workflow_id, created_at FROM jobs ORDER BY created_at DESC LIMIT 1')).rows[0];
      const h = await tc.workflow.getHandle(wf.workflow_id).fetchHistory();
      const ms = (t: any) => Number(t.seconds) * 1000 + Math.round((t.nanos ?? 0) / 1e6);
      const base = wf.created_at.getTime();
      for (const e of h.events ?? []) console.log('   ', (ms(e.eventTime) - base).toString().padStart(5), e.eventType, JSON.stringify(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? e.markerRecordedEventAttributes?.markerName ?? '').slice(0, 120));
      await conn.close();
      await db.end();
    } finally { await sys.stop(); }
  } finally { await infra.stop(); }
}
main().catch((e) => { console.error(e); process.exit(1); });
