import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';

const START = path.join(__dirname, '..', '..', 'src', 'stack', 'start.ts');

/** `npm start` (from source) running as a child process, with its output line by line. */
export interface LaunchedStack {
  child: ChildProcess;
  lines: string[];
  /** Resolves once a line contains `text`; rejects if the process exits first. */
  waitFor(text: string): Promise<void>;
  /** Resolves with the exit code (null after a signal). */
  exited: Promise<number | null>;
  /** Every process below the stack's own, now (PostgreSQL, the Temporal server, ...). */
  descendants(): number[];
  /** SIGKILLs the stack and every process below it that is still there (for clean-up after a failure). */
  kill(): void;
}

/**
 * Starts src/stack/start.ts with `env` over the test's environment. The
 * variables a developer may have set for their own stack are cleared, so each
 * test says what it runs against.
 */
export function launchStack(env: NodeJS.ProcessEnv, options: { processGroup?: boolean } = {}): LaunchedStack {
  const base = { ...process.env };
  for (const name of Object.keys(base)) {
    if (/^(ONCEFLOW_|SIM_|TEMPORAL_)/.test(name) || name === 'DATABASE_URL') delete base[name];
  }
  // processGroup: the stack leads a process group of its own, as a shell's job
  // does, so a test can signal the whole group as a terminal's Ctrl-C does.
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', START], {
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.processGroup === true,
  });
  const lines: string[] = [];
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  const onLine = (line: string): void => {
    lines.push(line);
    for (const waiter of waiters.filter((w) => line.includes(w.text))) waiter.resolve();
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const seen = new Set<number>();
  const descendants = (): number[] => {
    const found = descendantsOf(child.pid!);
    for (const pid of found) seen.add(pid);
    return found;
  };
  return {
    child,
    lines,
    exited,
    descendants,
    waitFor: (text) =>
      new Promise<void>((resolve, reject) => {
        if (lines.some((line) => line.includes(text))) return resolve();
        waiters.push({ text, resolve });
        void exited.then(() => reject(new Error(`exited before "${text}":\n${lines.join('\n')}`)));
      }),
    kill() {
      if (child.exitCode === null && child.signalCode === null) descendants();
      for (const pid of [child.pid!, ...seen]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

/** The processes below `pid`, from /proc (Linux). */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid ...; comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    for (const next of children.get(queue.shift()!) ?? []) {
      found.push(next);
      queue.push(next);
    }
  }
  return found;
}

/** Whether a process with this id still exists (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function listening(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The process group of a process (what a terminal's Ctrl-C is sent to), from /proc (Linux). */
export function processGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid pgrp ...
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return undefined;
  }
}
