import type { ChildProcess } from 'node:child_process';

/** A server process this one started and owns: the tail of its output, whether it has exited, and one way to stop it. */
export interface OwnedProcess {
  exited(): boolean;
  /** Its latest output (stdout and stderr), for diagnostics. */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited after `killAfterMs`; resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Takes ownership of a started server: its output is kept (the last `keep`
 * characters), and if this process ends without stop() (a crash,
 * process.exit elsewhere) the server is stopped with it rather than left
 * running without its owner.
 */
export function ownProcess(child: ChildProcess, options: { keep: number; killAfterMs: number; onAlreadyExited?: () => void }): OwnedProcess {
  let exited = false;
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-options.keep);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('exit', () => {
    exited = true;
  });
  const onExit = (): void => {
    if (!exited) child.kill('SIGTERM');
  };
  process.on('exit', onExit);
  return {
    exited: () => exited,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        process.removeListener('exit', onExit);
        if (exited) {
          options.onAlreadyExited?.();
          return resolve();
        }
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => !exited && child.kill('SIGKILL'), options.killAfterMs).unref();
      }),
  };
}
