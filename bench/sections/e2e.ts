import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { preparePeer, runJobs, startFloor, startOnceflow, startPeer, type RunResult, type System } from '../e2e';
import type { Infra } from '../infra';
import { fixed, median, percentile, type ResultRow } from '../stats';

export interface E2eOptions {
  rounds: number;
  jobsAt1: number;
  jobsAt16: number;
}

interface Measured {
  at1: RunResult[];
  at16: RunResult[];
  historyEvents?: number;
  /** From a workflow's start to its first workflow task's start, ms, for each job of a run at concurrency 1 (Temporal's history). */
  dispatchMs?: number[];
}

async function measure(system: System, infra: Infra, opts: E2eOptions, round: number, into: Measured): Promise<void> {
  await runJobs(system, infra, { jobs: 20, concurrency: 4, ticketPrefix: `warm-${round}` });
  into.at1.push(await runJobs(system, infra, { jobs: opts.jobsAt1, concurrency: 1, ticketPrefix: `c1-${round}` }));
  into.at16.push(await runJobs(system, infra, { jobs: opts.jobsAt16, concurrency: 16, ticketPrefix: `c16-${round}` }));
}

/** The histories of finished jobs' workflows, by job id. */
async function histories(infra: Infra, workflowUrl: string, jobIds: string[], headers: Record<string, string>): Promise<temporal.api.history.v1.IHistory[]> {
  const connection = await Connection.connect({ address: infra.temporal.address });
  try {
    const client = new Client({ connection, namespace: infra.temporal.namespace });
    const found: temporal.api.history.v1.IHistory[] = [];
    for (const jobId of jobIds) {
      const job = (await (await fetch(`${workflowUrl}/v1/jobs/${jobId}`, { headers })).json()) as { workflowId: string };
      found.push(await client.workflow.getHandle(job.workflowId).fetchHistory());
    }
    return found;
  } finally {
    await connection.close();
  }
}

/** A history event's time, ms since the epoch. */
const eventMs = (event: temporal.api.history.v1.IHistoryEvent | undefined): number =>
  event?.eventTime ? Number(event.eventTime.seconds ?? 0) * 1000 + (event.eventTime.nanos ?? 0) / 1e6 : NaN;

/** From the workflow's start to its first workflow task's start: how long Temporal took to hand the job to the worker. */
function dispatchMs(history: temporal.api.history.v1.IHistory): number {
  const events = history.events ?? [];
  return eventMs(events.find((event) => event.workflowTaskStartedEventAttributes)) - eventMs(events.find((event) => event.workflowExecutionStartedEventAttributes));
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
          const sample = onceflow.at16[onceflow.at16.length - 1]?.jobIds[0];
          if (sample) onceflow.historyEvents = (await histories(infra, system.url, [sample], system.headers))[0]?.events?.length ?? NaN;
          // Onceflow's first run of jobs at concurrency 1, one at a time: no queueing of Onceflow's own in their dispatch.
          onceflow.dispatchMs = (await histories(infra, system.url, onceflow.at1[onceflow.at1.length - 1]?.jobIds ?? [], system.headers)).map(dispatchMs);
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
    const cpuF = m(runsF, (r) => r.cpuPerJob.total);
    // The target: what Onceflow adds to Temporal's own cost of the same job (its ledger, its API, its checks), as a ratio in this run.
    rows.push({
      section: 'e2e',
      measure: `CPU/job ${label} (ms; app+pg+temporal)`,
      value: `${fixed(cpuO)} (${fixed(m(runsO, (r) => r.cpuPerJob.app))}+${fixed(m(runsO, (r) => r.cpuPerJob.postgres))}+${fixed(m(runsO, (r) => r.cpuPerJob.temporal))})`,
      reference: `${fixed(cpuF)} (${fixed(m(runsF, (r) => r.cpuPerJob.app))}+${fixed(m(runsF, (r) => r.cpuPerJob.temporal))}) the floor`,
      ratio: cpuO / cpuF,
      target: '<= 1.30x',
      ok: cpuO / cpuF <= 1.3,
    });
    rows.push({
      section: 'e2e',
      measure: `CPU/job ${label}, the DBOS peer (ms; app+pg)`,
      value: fixed(cpuO),
      reference: `${fixed(cpuP)} (${fixed(m(runsP, (r) => r.cpuPerJob.app))}+${fixed(m(runsP, (r) => r.cpuPerJob.postgres))}) peer`,
      ratio: cpuO / cpuP,
    });
  }
  const p50 = m(onceflow.at1, (r) => r.p50);
  const p50F = m(floor.at1, (r) => r.p50);
  rows.push({ section: 'e2e', measure: 'p50 submit-to-done c1 (ms)', value: fixed(p50), reference: `${fixed(p50F)} the floor; ${fixed(m(peer.at1, (r) => r.p50))} peer`, ratio: p50 / p50F, target: '<= 100 ms', ok: p50 <= 100 });
  const tputO = m(onceflow.at16, (r) => r.jobsPerSecond);
  const tputF = m(floor.at16, (r) => r.jobsPerSecond);
  rows.push({ section: 'e2e', measure: 'throughput c16 (jobs/s)', value: fixed(tputO), reference: `${fixed(tputF)} the floor`, ratio: tputO / tputF, target: '>= 0.80x', ok: tputO / tputF >= 0.8 });
  const tputP = m(peer.at16, (r) => r.jobsPerSecond);
  rows.push({ section: 'e2e', measure: 'throughput c16 (jobs/s), the DBOS peer', value: fixed(tputO), reference: `${fixed(tputP)} peer`, ratio: tputO / tputP });
  const p95 = m(onceflow.at16, (r) => r.p95);
  const p95F = m(floor.at16, (r) => r.p95);
  rows.push({ section: 'e2e', measure: 'p95 submit-to-done c16 (ms)', value: fixed(p95), reference: `${fixed(p95F)} the floor; ${fixed(m(peer.at16, (r) => r.p95))} peer`, ratio: p95 / p95F, target: '<= 1.50x', ok: p95 / p95F <= 1.5 });
  rows.push({ section: 'e2e', measure: 'p99 submit-to-done c16 (ms)', value: fixed(m(onceflow.at16, (r) => r.p99)), reference: `${fixed(m(floor.at16, (r) => r.p99))} the floor; ${fixed(m(peer.at16, (r) => r.p99))} peer` });
  const dispatch = [...(onceflow.dispatchMs ?? [])].sort((a, b) => a - b);
  // Not a target: where a job at concurrency 1 waits for Temporal (the dev server's task queue readers), apart from Onceflow's own work.
  rows.push({ section: 'e2e', measure: 'first workflow task dispatch c1 (ms)', value: `p50 ${fixed(median(dispatch))}, p90 ${fixed(percentile(dispatch, 90))}; over 25 ms ${dispatch.filter((ms) => ms > 25).length} of ${dispatch.length}` });
  rows.push({ section: 'e2e', measure: 'history events, happy path', value: String(onceflow.historyEvents ?? 'n/a'), target: '<= 20', ok: (onceflow.historyEvents ?? Infinity) <= 20 });
  rows.push({ section: 'e2e', measure: 'jobs that did not succeed', value: String(failed), target: '0', ok: failed === 0 });
  return rows;
}
