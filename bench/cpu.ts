import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times. */
export const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** A /proc stat line (of a process, or of one of its threads), read: its command name and the numeric fields after it. */
export interface StatLine {
  name: string;
  ppid: number;
  /** CPU time in ticks: its own (user and system), and that of the children it has reaped. */
  ownTicks: number;
  reapedTicks: number;
}

/**
 * Reads /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat.
 * @throws when the process or thread is gone.
 */
export function readStat(file: string): StatLine {
  const stat = readFileSync(file, 'utf8');
  // The command may hold spaces and parentheses: the fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ppid: fields[1]!, ownTicks: fields[11]! + fields[12]!, reapedTicks: fields[13]! + fields[14]! };
}

interface ProcessTimes {
  ppid: number;
  /** Its own CPU time and that of its children it has reaped, in ticks. */
  ticks: number;
}

function readProcesses(): Map<number, ProcessTimes> {
  const processes = new Map<number, ProcessTimes>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readStat(`/proc/${entry}/stat`);
      processes.set(Number(entry), { ppid: stat.ppid, ticks: stat.ownTicks + stat.reapedTicks });
    } catch {
      // gone meanwhile
    }
  }
  return processes;
}

/**
 * CPU time used by process trees, in milliseconds: each root with every
 * descendant alive now, plus those that ended and were reaped (a parent's
 * cutime/cstime), so a PostgreSQL backend that came and went is counted.
 */
export function treeCpuMs(roots: number[]): number {
  const processes = readProcesses();
  const children = new Map<number, number[]>();
  for (const [pid, times] of processes) children.set(times.ppid, [...(children.get(times.ppid) ?? []), pid]);
  let ticks = 0;
  const seen = new Set<number>();
  const walk = (pid: number): void => {
    if (seen.has(pid)) return;
    seen.add(pid);
    ticks += processes.get(pid)?.ticks ?? 0;
    for (const child of children.get(pid) ?? []) walk(child);
  };
  roots.forEach(walk);
  return (ticks / TICKS_PER_SECOND) * 1000;
}

/** CPU used by named groups of process trees between start() and stop(). */
export class CpuMeter {
  private before: Record<string, number> = {};
  constructor(private readonly groups: Record<string, () => number[]>) {}

  start(): void {
    this.before = Object.fromEntries(Object.entries(this.groups).map(([name, roots]) => [name, treeCpuMs(roots())]));
  }

  /** Milliseconds of CPU per group since start(). */
  stop(): Record<string, number> {
    return Object.fromEntries(Object.entries(this.groups).map(([name, roots]) => [name, treeCpuMs(roots()) - (this.before[name] ?? 0)]));
  }
}

/** Resident memory of one process, in MiB. */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kib / 1024;
}
