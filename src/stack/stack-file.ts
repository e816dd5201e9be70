import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataDir } from '../paths';

/**
 * What `npm start` tells the command line of this checkout while it runs:
 * where its database and API are, and its operator key, so that
 * `onceflow keys create` and the operator's commands need no DATABASE_URL,
 * ONCEFLOW_URL or ONCEFLOW_KEY on the dev stack. Written when the stack is
 * ready (readable by its user only), removed when it stops; a file left by a
 * stack that died is ignored (its process is gone).
 */
export interface StackFile {
  databaseUrl: string;
  apiUrl: string;
  operatorKey?: string;
  pid: number;
  startedAt: string;
}

/** The stack file of this checkout (`.data/stack.json`), or ONCEFLOW_STACK_FILE. */
export function stackFilePath(env: NodeJS.ProcessEnv = process.env): string {
  return env.ONCEFLOW_STACK_FILE || path.join(dataDir, 'stack.json');
}

/** Writes the file whole (a reader never sees half of it), mode 0600: it holds a password and a key. */
export function writeStackFile(file: string, content: Omit<StackFile, 'pid' | 'startedAt'>): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify({ ...content, pid: process.pid, startedAt: new Date().toISOString() }, null, 2), { mode: 0o600 });
  renameSync(temporary, file);
}

/** Removes the file if this process wrote it (another stack's stays). */
export function removeStackFile(file: string): void {
  if (readStackFile(file, { evenIfStale: true })?.pid === process.pid) rmSync(file, { force: true });
}

/** The running stack's file, or undefined when there is none, it cannot be read, or its process is gone. */
export function readStackFile(file: string, opts: { evenIfStale?: boolean } = {}): StackFile | undefined {
  let content: StackFile;
  try {
    content = JSON.parse(readFileSync(file, 'utf8')) as StackFile;
  } catch {
    return undefined;
  }
  if (typeof content?.databaseUrl !== 'string' || typeof content.apiUrl !== 'string' || !Number.isInteger(content.pid)) return undefined;
  if (!opts.evenIfStale && !isAlive(content.pid)) return undefined;
  return content;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, owned by someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
