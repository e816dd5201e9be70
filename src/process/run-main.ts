/** Thrown by a start-up step when a signal asked the process to stop. */
export class InterruptedError extends Error {
  override name = 'InterruptedError';
  constructor() {
    super('interrupted');
  }
}

/** The signals that ask a part to stop: Ctrl-C, a service manager, a closed terminal. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Shared by every `npm run <part>` entry: one-line errors and a non-zero
 * exit; one clean shutdown, in main's order, on SIGINT, SIGTERM or SIGHUP,
 * exiting 0 once it is done (no other handler may exit the process first:
 * see importEmbeddedPostgres). A signal during start-up aborts `signal`: main
 * is expected to check it between steps (throwIfInterrupted) and stop what it
 * started before rethrowing.
 */
export function runMain(name: string, main: (signal: AbortSignal) => Promise<() => Promise<void>>): void {
  const interrupted = new AbortController();
  let stop: (() => Promise<void>) | undefined;
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    if (!stop) {
      // Still starting: main notices, stops what it started, and settles below.
      interrupted.abort();
      return;
    }
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`${name}: shutdown failed: ${(err as Error).message ?? String(err)}`);
        process.exit(1);
      },
    );
  };
  for (const name of STOP_SIGNALS) process.on(name, shutdown);
  main(interrupted.signal).then(
    async (s) => {
      stop = s;
      if (stopping) await s().finally(() => process.exit(130));
    },
    (err: unknown) => {
      if (err instanceof InterruptedError || interrupted.signal.aborted) {
        console.error(`${name}: interrupted during start-up; everything started was stopped`);
        process.exit(130);
      }
      console.error(`${name}: ${(err as Error).message ?? String(err)}`);
      process.exit(1);
    },
  );
}

/** @throws InterruptedError when the signal was aborted. */
export function throwIfInterrupted(signal: AbortSignal): void {
  if (signal.aborted) throw new InterruptedError();
}
