/**
 * Starts, signals and stops the OS processes of a chaos run, and makes sure
 * none outlives it: stopAll() on a normal end, and on SIGINT/SIGTERM or a
 * crash the 'exit' hook SIGKILLs whatever is still alive (synchronously).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Where stdout and stderr go. */
  logFile: string;
  /** Resolves start() once a line of output matches (default: at spawn). */
  readyLine?: RegExp;
  readyTimeoutMs?: number;
}

export class ManagedProcess {
  private exitedFlag = false;
  private pausedFlag = false;
  /** Set when the suite itself kills or stops it: any other exit is a crash. */
  private expectedFlag = false;
  readonly exited: Promise<number | null>;

  constructor(
    readonly spec: ProcessSpec,
    readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      this.exitedFlag = true;
      resolve(code ?? (signal ? -1 : null));
    }));
  }

  get name(): string {
    return this.spec.name;
  }
  get pid(): number {
    return this.child.pid ?? -1;
  }
  get alive(): boolean {
    return !this.exitedFlag;
  }
  get paused(): boolean {
    return this.pausedFlag;
  }
  get expectedExit(): boolean {
    return this.expectedFlag;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.exitedFlag) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
  }

  /** SIGKILL, and wait until the kernel has reaped it. */
  async kill(): Promise<void> {
    this.expectedFlag = true;
    this.pausedFlag = false;
    this.signal('SIGKILL');
    await this.exited;
  }

  pause(): void {
    this.signal('SIGSTOP');
    this.pausedFlag = true;
  }

  resume(): void {
    this.signal('SIGCONT');
    this.pausedFlag = false;
  }

  /** SIGTERM (after SIGCONT if paused); SIGKILL if it has not exited after graceMs. */
  async stop(graceMs = 5_000): Promise<void> {
    if (this.exitedFlag) return;
    this.expectedFlag = true;
    if (this.pausedFlag) this.resume();
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

export class Supervisor {
  private readonly processes = new Set<ManagedProcess>();
  private readonly extraPids = new Map<string, () => number | undefined>();
  private readonly logs = new Set<WriteStream>();

  constructor() {
    // Last resort, synchronous: nothing this run started may outlive it.
    process.on('exit', () => this.killAllNow());
  }

  /**
   * Spawns a process, its output appended to spec.logFile.
   * @throws Error when it exits, or prints nothing matching readyLine in time.
   */
  async start(spec: ProcessSpec): Promise<ManagedProcess> {
    const log = createWriteStream(spec.logFile, { flags: 'a' });
    this.logs.add(log);
    const child = spawn(spec.command, spec.args, { env: spec.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const managed = new ManagedProcess(spec, child);
    this.processes.add(managed);
    void managed.exited.then(() => this.processes.delete(managed));
    log.write(`--- ${new Date().toISOString()} start ${spec.name} pid ${child.pid}\n`);
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    if (!spec.readyLine) return managed;
    const readyLine = spec.readyLine;
    await new Promise<void>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      const timer = setTimeout(() => reject(new Error(`${spec.name} was not ready after ${spec.readyTimeoutMs ?? 60_000} ms (see ${spec.logFile})`)), spec.readyTimeoutMs ?? 60_000);
      lines.on('line', (line) => {
        if (readyLine.test(line)) {
          clearTimeout(timer);
          lines.close();
          resolve();
        }
      });
      void managed.exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${spec.name} exited with ${code} before it was ready (see ${spec.logFile})`));
      });
    }).catch(async (err: unknown) => {
      await managed.kill();
      throw err;
    });
    return managed;
  }

  /** A process started by someone else on our behalf (e.g. the PostgreSQL postmaster): killed on exit too. */
  adopt(name: string, pid: () => number | undefined): void {
    this.extraPids.set(name, pid);
  }

  running(): ManagedProcess[] {
    return [...this.processes].filter((p) => p.alive);
  }

  /** Stops every process it started, in reverse order of starting. */
  async stopAll(): Promise<void> {
    for (const managed of [...this.processes].reverse()) await managed.stop();
    for (const log of this.logs) log.end();
  }

  private killAllNow(): void {
    for (const managed of this.processes) {
      if (!managed.alive) continue;
      try {
        process.kill(managed.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    for (const pid of this.extraPids.values()) {
      const value = pid();
      if (!value) continue;
      try {
        process.kill(value, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
}
