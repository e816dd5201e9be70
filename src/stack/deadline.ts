/**
 * Settles as `work` does, or rejects once `ms` have passed without it: a
 * start-up step that never settles (a child that never answers, an import
 * that never resolves) then fails with its name instead of leaving the caller
 * idle for ever. The timer is cleared as soon as the work settles.
 * @throws Error "<step> did not finish within <ms> ms" on the deadline.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, step: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${step} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
