import { rssMiB } from '../cpu';
import { runJobs, startOnceflow } from '../e2e';
import type { Infra } from '../infra';
import { fixed, type ResultRow } from '../stats';

/** Resident memory of the API and the worker after `first` jobs, and after `total`: it must stay flat in between. */
export async function memorySection(infra: Infra, opts: { first: number; total: number }, log: (line: string) => void): Promise<ResultRow[]> {
  const system = await startOnceflow(infra);
  const rss = () => ({ api: rssMiB(system.services.api.proc.pid!), worker: rssMiB(system.services.worker.proc.pid!) });
  try {
    const chunk = 2_000;
    let done = 0;
    let atFirst: ReturnType<typeof rss> | undefined;
    while (done < opts.total) {
      const jobs = Math.min(chunk, opts.total - done);
      await runJobs(system, infra, { jobs, concurrency: 16, ticketPrefix: `mem-${done}` });
      done += jobs;
      log(`memory: ${done} jobs, API ${fixed(rss().api, 0)} MiB, worker ${fixed(rss().worker, 0)} MiB`);
      if (done >= opts.first && !atFirst) atFirst = rss();
    }
    const atTotal = rss();
    const first = atFirst ?? atTotal;
    return [
      { section: 'memory', measure: `API RSS after ${opts.first} jobs (MiB)`, value: fixed(first.api, 0), target: '<= 150', ok: first.api <= 150 },
      { section: 'memory', measure: `worker RSS after ${opts.first} jobs (MiB)`, value: fixed(first.worker, 0), target: '<= 300', ok: first.worker <= 300 },
      { section: 'memory', measure: `API RSS after ${opts.total} jobs (MiB)`, value: fixed(atTotal.api, 0), reference: `${fixed(first.api, 0)} at ${opts.first}`, ratio: atTotal.api / first.api, target: 'flat (<= 1.10x)', ok: atTotal.api / first.api <= 1.1 },
      { section: 'memory', measure: `worker RSS after ${opts.total} jobs (MiB)`, value: fixed(atTotal.worker, 0), reference: `${fixed(first.worker, 0)} at ${opts.first}`, ratio: atTotal.worker / first.worker, target: 'flat (<= 1.10x)', ok: atTotal.worker / first.worker <= 1.1 },
    ];
  } finally {
    await system.stop();
  }
}
