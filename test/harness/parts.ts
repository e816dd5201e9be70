import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import type { SimStack } from '../../src/sim/stack';
import { readHarnessState } from './state';

const ROOT = path.join(__dirname, '..', '..');

export interface Part {
  proc: ChildProcess;
  /** The match of the line that said it was ready. */
  match: RegExpExecArray;
}

/**
 * Runs `src/<part>/main.ts` in a process of its own, as `npm run <part>` runs
 * the built one; resolves once a line of its output matches `ready`.
 */
export function startPart(part: 'api' | 'worker', env: NodeJS.ProcessEnv, ready: RegExp): Promise<Part> {
  const proc = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'src', part, 'main.ts')], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      const match = ready.exec(line);
      if (match) resolve({ proc, match });
    });
    proc.once('exit', (code, signal) => reject(new Error(`${part} exited with ${code ?? signal}: ${stderr}`)));
  });
}

/** Stops a part (SIGTERM, or the given signal) and waits for it to exit. */
export function stopPart(proc: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  return new Promise((resolve) => {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill(signal);
  });
}

/**
 * What an API or a worker part runs with here: the database, the run's
 * Temporal server, a task queue of its own (named from `name`), the
 * simulators, free ports, and alice's key.
 */
export function partEnv(opts: { databaseUrl: string; sims: SimStack; name: string; aliceKey: string }): NodeJS.ProcessEnv {
  const state = readHarnessState();
  const port = (url: string) => new URL(url).port;
  return {
    DATABASE_URL: opts.databaseUrl,
    TEMPORAL_ADDRESS: state.temporalAddress,
    TEMPORAL_NAMESPACE: state.temporalNamespace,
    ONCEFLOW_TASK_QUEUE: `${opts.name}-${randomUUID().slice(0, 8)}`,
    ONCEFLOW_API_KEYS: `alice:${opts.aliceKey}`,
    ONCEFLOW_API_PORT: '0',
    ONCEFLOW_WORKER_METRICS_PORT: '0',
    SIM_PRIMARY_PORT: port(opts.sims.primary.url),
    SIM_BACKUP_PORT: port(opts.sims.backup.url),
    SIM_DOWNSTREAM_PORT: port(opts.sims.downstream.url),
  };
}
