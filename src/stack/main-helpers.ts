/** Shared by every `npm run <part>` entry: one-line errors, clean shutdown on signals. */
export function runMain(name: string, main: () => Promise<() => Promise<void>>): void {
  let stop: (() => Promise<void>) | undefined;
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    (stop ?? (async () => undefined))().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`${name}: shutdown failed: ${(err as Error).message ?? String(err)}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  main().then(
    (s) => {
      stop = s;
      if (stopping) void s().finally(() => process.exit(0));
    },
    (err: unknown) => {
      console.error(`${name}: ${(err as Error).message ?? String(err)}`);
      process.exit(1);
    },
  );
}
