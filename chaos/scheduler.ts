/**
 * Runs trials with bounded concurrency; a trial that changes what every other
 * trial sees (a killed process, a second worker, paused simulators) runs
 * alone, so its faults and its reproduction belong to it only.
 */
export interface Job<T> {
  alone: boolean;
  run(): Promise<T>;
}

export async function schedule<T>(jobs: Array<Job<T>>, concurrency: number, onDone: (result: T) => void, stopped: () => boolean): Promise<T[]> {
  const results: T[] = [];
  let running = 0;
  let aloneRunning = false;
  let next = 0;
  return new Promise((resolve, reject) => {
    const pump = (): void => {
      if ((next >= jobs.length || stopped()) && running === 0) return resolve(results);
      while (next < jobs.length && !stopped() && !aloneRunning && running < concurrency) {
        const job = jobs[next]!;
        if (job.alone && running > 0) break;
        next++;
        running++;
        aloneRunning = job.alone;
        job.run().then(
          (result) => {
            results.push(result);
            running--;
            if (job.alone) aloneRunning = false;
            onDone(result);
            pump();
          },
          reject,
        );
      }
    };
    pump();
  });
}
