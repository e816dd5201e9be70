import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/stack/postgres';
import { startTemporalCluster } from '../src/stack/temporal-cluster';
import { freePort, loadTemporalDevConfig, startDevServer, type TemporalDevConfig } from '../src/stack/temporal-dev';
import { resolveTemporalCli, resolveTemporalServer } from '../src/stack/tools';

export const root = path.resolve(__dirname, '..');

export interface Service {
  proc: ChildProcess;
  /** The line of output that matched the ready pattern. */
  ready: RegExpMatchArray;
  /** Every line printed up to and with that one. */
  lines: string[];
  stop(): Promise<void>;
}

/**
 * Starts a process and waits for a line of its stdout matching `ready`.
 * @throws Error when it exits first or does not get ready in time.
 */
export function startService(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp, timeoutMs = 60_000): Promise<Service> {
  const proc = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 10_000).unref();
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${args.join(' ')} was not ready in ${timeoutMs} ms`));
    }, timeoutMs);
    const seen: string[] = [];
    const lines = createInterface({ input: proc.stdout! });
    lines.on('line', (line) => {
      seen.push(line);
      const match = ready.exec(line);
      if (!match) return;
      clearTimeout(timer);
      lines.removeAllListeners('line');
      // Read on, so the process never blocks on a full pipe.
      lines.on('line', () => undefined);
      resolve({ proc, ready: match, lines: seen, stop });
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited with ${code} before it was ready`));
    });
  });
}

export interface Infra {
  /** Base connection string of the PostgreSQL server (no database). */
  serverUrl: string;
  pgPid(): number[];
  temporal: { address: string; namespace: string; pid(): number[] };
  sims: { primaryUrl: string; backupUrl: string; downstreamUrl: string; pid(): number[] };
  /** A fresh database on the server, by name. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** Which Temporal the benchmark runs on: the dev server (SQLite in memory, one history shard), or Temporal's own server on a PostgreSQL of its own. */
export type TemporalKind = 'dev' | 'postgres';

/** History shards of the production-shaped Temporal: more than one, as a cluster has. */
const CLUSTER_SHARDS = 4;

/**
 * The shared parts of every benchmark: PostgreSQL, Temporal and the
 * simulators, each a process of its own. With `temporal: 'postgres'`,
 * Temporal is its own server (src/stack/temporal-cluster.ts) on a second
 * PostgreSQL, apart from the ledger's: its CPU (the server's and its
 * database's) is Temporal's share.
 */
export async function startInfra(log: (line: string) => void, options: { temporal?: TemporalKind } = {}): Promise<Infra> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-bench-'));
  chmodSync(dir, 0o755);
  const stops: Array<() => Promise<void>> = [];
  try {
    log(`starting PostgreSQL, ${options.temporal === 'postgres' ? "Temporal's server on a PostgreSQL of its own" : 'the Temporal dev server'} and the simulators …`);
    const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'postgres', persistent: false });
    stops.push(pg.stop);
    const devConfig = loadTemporalDevConfig();
    const temporal = options.temporal === 'postgres' ? await startCluster(dir, devConfig, stops, log) : await startDev(devConfig, stops, log);
    const sims = await startService(
      process.execPath,
      [path.join(root, 'dist', 'sim', 'main.js')],
      { ...process.env, SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: '0' },
      /sim-downstream listening on (\S+)/,
    );
    stops.push(sims.stop);
    const urlOf = (name: string): string => {
      const line = sims.lines.find((l) => l.startsWith(`${name} listening on `));
      if (!line) throw new Error(`the simulators did not say where ${name} listens`);
      return line.slice(`${name} listening on `.length).trim();
    };
    const urls = { primaryUrl: urlOf('sim-primary'), backupUrl: urlOf('sim-backup'), downstreamUrl: urlOf('sim-downstream') };
    const serverUrl = pg.adminUrl.replace(/\/postgres$/, '');
    return {
      serverUrl,
      pgPid: () => (pg.pid ? [pg.pid] : []),
      temporal,
      sims: { ...urls, pid: () => (sims.proc.pid ? [sims.proc.pid] : []) },
      async createDatabase(name) {
        const admin = new Client({ connectionString: pg.adminUrl });
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.query(`CREATE DATABASE ${name}`);
        await admin.end();
        // BENCH_PG_UNIX=1: connect over the server's Unix socket instead of TCP loopback.
        return process.env.BENCH_PG_UNIX === '1' ? `${serverUrl}/${name}?host=/tmp` : `${serverUrl}/${name}`;
      },
      async stop() {
        for (const stop of stops.reverse()) await stop().catch(() => undefined);
      },
    };
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}

async function startDev(devConfig: TemporalDevConfig, stops: Array<() => Promise<void>>, log: (line: string) => void): Promise<Infra['temporal']> {
  const cli = await resolveTemporalCli({ build: true, log });
  if (!cli) throw new Error('no Temporal CLI (run npm run tools -- ensure)');
  // BENCH_TEMPORAL_DYNAMIC_CONFIG='{}' replaces temporal-dev.yaml's dynamic config (to measure what a setting costs).
  const dynamicConfig = process.env.BENCH_TEMPORAL_DYNAMIC_CONFIG ? (JSON.parse(process.env.BENCH_TEMPORAL_DYNAMIC_CONFIG) as Record<string, unknown>) : devConfig.dynamicConfig;
  const server = await startDevServer(cli.path, { ...devConfig, dynamicConfig, port: await freePort(), ui: false, dbFilename: undefined }, log);
  stops.push(server.stop);
  return { address: server.address, namespace: server.namespace, pid: () => (server.process?.pid ? [server.process.pid] : []) };
}

/**
 * Temporal's own server on a PostgreSQL of its own, several history shards.
 * Its dynamic config is the dev file's, without the transfer queue's read
 * rate (a cluster keeps the default of 20 reads a second per shard, and has
 * several shards) and with the search-attribute cache off (its attributes are
 * added once it runs). BENCH_TEMPORAL_DYNAMIC_CONFIG replaces it, as for the
 * dev server.
 */
async function startCluster(dir: string, devConfig: TemporalDevConfig, stops: Array<() => Promise<void>>, log: (line: string) => void): Promise<Infra['temporal']> {
  const tool = await resolveTemporalServer({ build: true, log });
  if (!tool) throw new Error('no Temporal server: set TEMPORAL_SERVER_PATH (with TEMPORAL_SQL_TOOL_PATH and TEMPORAL_SCHEMA_DIR), or install Go so `npm run tools -- ensure --temporal-server` can build it');
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'temporal-pg'), port: await freePort(), database: 'postgres', persistent: false });
  stops.push(pg.stop);
  const admin = new URL(pg.adminUrl);
  const { 'history.transferProcessorMaxPollRPS': _tuned, ...dynamic } = devConfig.dynamicConfig;
  // This server's search attributes are added once it runs, not before it starts as the dev server's are: its cache must not hide them.
  const dynamicConfig = process.env.BENCH_TEMPORAL_DYNAMIC_CONFIG
    ? (JSON.parse(process.env.BENCH_TEMPORAL_DYNAMIC_CONFIG) as Record<string, unknown>)
    : { ...dynamic, 'system.forceSearchAttributesCacheRefreshOnRead': true };
  const server = await startTemporalCluster(tool, {
    dir: path.join(dir, 'temporal'),
    postgres: { host: admin.hostname, port: Number(admin.port), user: decodeURIComponent(admin.username), password: decodeURIComponent(admin.password) },
    namespace: devConfig.namespace,
    shards: CLUSTER_SHARDS,
    searchAttributes: devConfig.searchAttributes,
    dynamicConfig,
    log,
  });
  stops.push(server.stop);
  return { address: server.address, namespace: server.namespace, pid: () => [server.process.pid, pg.pid].filter((pid): pid is number => pid !== undefined) };
}
