import { preparePeer, runJobs, startFloor, startOnceflow, startPeer, type System } from '../e2e';
import type { Infra } from '../infra';
import { fixed, median, type ResultRow } from '../stats';

/** The first job after a start and the hundredth, one at a time, each round on processes started anew. */
interface FirstAndHundredth {
  readyMs: number[];
  first: number[];
  hundredth: number[];
}

async function firstAndHundredth(infra: Infra, start: () => Promise<System>, rounds: number, label: string, log: (line: string) => void): Promise<FirstAndHundredth> {
  const found: FirstAndHundredth = { readyMs: [], first: [], hundredth: [] };
  for (let round = 0; round < rounds; round++) {
    log(`start: ${label}, round ${round + 1}/${rounds}`);
    const t0 = Date.now();
    const system = await start();
    found.readyMs.push(Date.now() - t0);
    try {
      found.first.push((await runJobs(system, infra, { jobs: 1, concurrency: 1, ticketPrefix: `first-${round}` })).p50);
      await runJobs(system, infra, { jobs: 98, concurrency: 1, ticketPrefix: `mid-${round}` });
      found.hundredth.push((await runJobs(system, infra, { jobs: 1, concurrency: 1, ticketPrefix: `hundredth-${round}` })).p50);
    } finally {
      await system.stop();
    }
  }
  return found;
}

/**
 * The first job after a start against the hundredth: fresh API and worker
 * processes, one job at a time. The DBOS peer and the floor (bench/floor)
 * are started and measured the same way, in the same run: what any Node
 * service pays for its code's first runs, beside Onceflow's.
 */
export async function startSection(infra: Infra, opts: { rounds: number }, log: (line: string) => void): Promise<ResultRow[]> {
  preparePeer(log);
  const onceflow = await firstAndHundredth(infra, () => startOnceflow(infra), opts.rounds, 'Onceflow', log);
  const peer = await firstAndHundredth(infra, () => startPeer(infra), opts.rounds, 'the DBOS peer', log);
  const floor = await firstAndHundredth(infra, () => startFloor(infra), opts.rounds, 'the floor', log);
  const ratioOf = (found: FirstAndHundredth) => median(found.first) / median(found.hundredth);
  const row = (found: FirstAndHundredth) => `${fixed(median(found.first))} against ${fixed(median(found.hundredth))} (${fixed(ratioOf(found), 2)}x)`;
  const ratio = ratioOf(onceflow);
  // 1.5x, or the floor's own ratio in the same run when that is larger: what any Temporal worker pays for its first job.
  const allowed = Math.max(1.5, ratioOf(floor));
  return [
    { section: 'start', measure: 'API and worker ready (ms)', value: fixed(median(onceflow.readyMs), 0) },
    { section: 'start', measure: 'first job after start (ms)', value: fixed(median(onceflow.first)), reference: `${fixed(median(onceflow.hundredth))} the 100th`, ratio, target: `<= ${fixed(allowed, 2)}x (1.5x, or the floor's)`, ok: ratio <= allowed },
    { section: 'start', measure: 'first job against the 100th: the DBOS peer (ms)', value: '', reference: row(peer) },
    { section: 'start', measure: 'first job against the 100th: the floor (ms)', value: '', reference: row(floor) },
  ];
}
