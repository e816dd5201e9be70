import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

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
