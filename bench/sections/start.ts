import { runJobs, startOnceflow } from '../e2e';
import type { Infra } from '../infra';
import { fixed, median, type ResultRow } from '../stats';

/**
 * The first job after a start against the hundredth: fresh API and worker
 * processes, one job at a time. Each round starts the processes anew.
 */
export async function startSection(infra: Infra, opts: { rounds: number }, log: (line: string) => void): Promise<ResultRow[]> {
  const first: number[] = [];
  const hundredth: number[] = [];
  const startMs: number[] = [];
  for (let round = 0; round < opts.rounds; round++) {
    log(`start round ${round + 1}/${opts.rounds}`);
    const t0 = Date.now();
    const system = await startOnceflow(infra);
    startMs.push(Date.now() - t0);
    try {
      first.push((await runJobs(system, infra, { jobs: 1, concurrency: 1, ticketPrefix: `first-${round}` })).p50);
      await runJobs(system, infra, { jobs: 98, concurrency: 1, ticketPrefix: `mid-${round}` });
      hundredth.push((await runJobs(system, infra, { jobs: 1, concurrency: 1, ticketPrefix: `hundredth-${round}` })).p50);
    } finally {
      await system.stop();
    }
  }
  const f = median(first);
  const h = median(hundredth);
  return [
    { section: 'start', measure: 'API and worker ready (ms)', value: fixed(median(startMs), 0) },
    { section: 'start', measure: 'first job after start (ms)', value: fixed(f), reference: `${fixed(h)} the 100th`, ratio: f / h, target: '<= 1.5x', ok: f / h <= 1.5 },
  ];
}
