import { Client, Connection } from '@temporalio/client';
import { preparePeer, runJobs, startFloor, startOnceflow, startPeer, type RunResult, type System } from '../e2e';
import type { Infra } from '../infra';
import { fixed, median, type ResultRow } from '../stats';

export interface E2eOptions {
  rounds: number;
  jobsAt1: number;
  jobsAt16: number;
}

interface Measured {
  at1: RunResult[];
  at16: RunResult[];
  historyEvents?: number;
}

async function measure(system: System, infra: Infra, opts: E2eOptions, round: number, into: Measured): Promise<void> {
  await runJobs(system, infra, { jobs: 20, concurrency: 4, ticketPrefix: `warm-${round}` });
  into.at1.push(await runJobs(system, infra, { jobs: opts.jobsAt1, concurrency: 1, ticketPrefix: `c1-${round}` }));
  into.at16.push(await runJobs(system, infra, { jobs: opts.jobsAt16, concurrency: 16, ticketPrefix: `c16-${round}` }));
}

/** The length of one finished job's workflow history (the happy path). */
async function historyEvents(infra: Infra, workflowUrl: string, jobId: string, headers: Record<string, string>): Promise<number> {
  const job = (await (await fetch(`${workflowUrl}/v1/jobs/${jobId}`, { headers })).json()) as { workflowId: string };
  const connection = await Connection.connect({ address: infra.temporal.address });
  try {
    const history = await new Client({ connection, namespace: infra.temporal.namespace }).workflow.getHandle(job.workflowId).fetchHistory();
    return history.events?.length ?? NaN;
  } finally {
    await connection.close();
  }
}

/**
 * The same job end to end, Onceflow against the DBOS peer and against the
 * floor under it (the job as one bare Temporal workflow with one local
 * activity, no ledger: bench/floor), at concurrency 1 and 16, round after
 * round in rotating order; each run on fresh processes and a fresh database.
 */
export async function e2eSection(infra: Infra, opts: E2eOptions, log: (line: string) => void): Promise<ResultRow[]> {
  preparePeer(log);
  const onceflow: Measured = { at1: [], at16: [] };
  const peer: Measured = { at1: [], at16: [] };
  const floor: Measured = { at1: [], at16: [] };
  const systems = { onceflow, peer, floor } as const;
  const names = Object.keys(systems) as Array<keyof typeof systems>;
  for (let round = 0; round < opts.rounds; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]!);
    for (const which of order) {
      log(`e2e round ${round + 1}/${opts.rounds}: ${which}`);
      const system = which === 'onceflow' ? await startOnceflow(infra) : which === 'peer' ? await startPeer(infra) : await startFloor(infra);
      try {
        await measure(system, infra, opts, round, systems[which]);
        if (which === 'onceflow' && onceflow.historyEvents === undefined) {
          const sample = onceflow.at16[onceflow.at16.length - 1]?.sampleJobId;
          if (sample) onceflow.historyEvents = await historyEvents(infra, system.url, sample, system.headers);
        }
      } finally {
        await system.stop();
      }
    }
  }
  const m = (runs: RunResult[], pick: (r: RunResult) => number) => median(runs.map(pick));
  const failed = [...onceflow.at1, ...onceflow.at16, ...peer.at1, ...peer.at16, ...floor.at1, ...floor.at16].reduce((sum, r) => sum + r.failed, 0);
  const rows: ResultRow[] = [];
  for (const [label, runsO, runsP, runsF] of [
    ['c1', onceflow.at1, peer.at1, floor.at1],
    ['c16', onceflow.at16, peer.at16, floor.at16],
  ] as const) {
    const cpuO = m(runsO, (r) => r.cpuPerJob.total);
    const cpuP = m(runsP, (r) => r.cpuPerJob.total);
    rows.push({
      section: 'e2e',
      measure: `CPU/job ${label} (ms; app+pg+temporal)`,
      value: `${fixed(cpuO)} (${fixed(m(runsO, (r) => r.cpuPerJob.app))}+${fixed(m(runsO, (r) => r.cpuPerJob.postgres))}+${fixed(m(runsO, (r) => r.cpuPerJob.temporal))})`,
      reference: `${fixed(cpuP)} (${fixed(m(runsP, (r) => r.cpuPerJob.app))}+${fixed(m(runsP, (r) => r.cpuPerJob.postgres))}) peer`,
      ratio: cpuO / cpuP,
      target: '<= 45 ms',
      ok: cpuO <= 45,
    });
    // What Onceflow adds to Temporal's own cost of the job: its ledger, its API, its checks.
    const cpuF = m(runsF, (r) => r.cpuPerJob.total);
    rows.push({
      section: 'e2e',
      measure: `CPU/job ${label}, the floor (ms; app+temporal)`,
      value: `${fixed(cpuO - cpuF)} above it`,
      reference: `${fixed(cpuF)} (${fixed(m(runsF, (r) => r.cpuPerJob.app))}+${fixed(m(runsF, (r) => r.cpuPerJob.temporal))}) bare Temporal`,
      ratio: cpuO / cpuF,
    });
  }
  const p50 = m(onceflow.at1, (r) => r.p50);
  rows.push({ section: 'e2e', measure: 'p50 submit-to-done c1 (ms)', value: fixed(p50), reference: `${fixed(m(peer.at1, (r) => r.p50))} peer`, ratio: p50 / m(peer.at1, (r) => r.p50), target: '<= 100 ms', ok: p50 <= 100 });
  const tputO = m(onceflow.at16, (r) => r.jobsPerSecond);
  const tputP = m(peer.at16, (r) => r.jobsPerSecond);
  rows.push({ section: 'e2e', measure: 'throughput c16 (jobs/s)', value: fixed(tputO), reference: `${fixed(tputP)} peer`, ratio: tputO / tputP, target: '>= 0.20x', ok: tputO / tputP >= 0.2 });
  const p50F = m(floor.at1, (r) => r.p50);
  rows.push({ section: 'e2e', measure: 'p50 submit-to-done c1 (ms), the floor', value: fixed(p50), reference: `${fixed(p50F)} bare Temporal`, ratio: p50 / p50F });
  const tputF = m(floor.at16, (r) => r.jobsPerSecond);
  rows.push({ section: 'e2e', measure: 'throughput c16 (jobs/s), the floor', value: fixed(tputO), reference: `${fixed(tputF)} bare Temporal`, ratio: tputO / tputF });
  rows.push({ section: 'e2e', measure: 'p99 submit-to-done c16 (ms)', value: fixed(m(onceflow.at16, (r) => r.p99)), reference: `${fixed(m(peer.at16, (r) => r.p99))} peer` });
  rows.push({ section: 'e2e', measure: 'history events, happy path', value: String(onceflow.historyEvents ?? 'n/a'), target: '<= 20', ok: (onceflow.historyEvents ?? Infinity) <= 20 });
  rows.push({ section: 'e2e', measure: 'jobs that did not succeed', value: String(failed), target: '0', ok: failed === 0 });
  return rows;
}
