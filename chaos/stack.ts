/**
 * The real stack of a chaos run, each part a separate OS process: PostgreSQL
 * (embedded, unless DATABASE_URL), the Temporal dev server (in memory, free
 * ports), the simulators (providers and downstream in two processes, so the
 * providers can be paused alone), one or two workers and the API, all from
 * dist/. Everything is stopped by stop(), and by the supervisor on any exit.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { crashLine } from './crash-log';
import path from 'node:path';
import { Client as PgClient, Pool } from 'pg';
import { Client, Connection } from '@temporalio/client';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/stack/postgres';
import { devServerArgs, freePort, loadTemporalDevConfig, waitForPort } from '../src/stack/temporal-dev';
import { resolveTemporalCli } from '../src/stack/tools';
import { projectRoot } from '../src/paths';
import { builtInProvidersYaml } from '../src/providers/config';
import { settingsEnv } from './settings';
import { Supervisor, type ManagedProcess } from './supervisor';

const NODE = process.execPath;
const dist = (file: string): string => path.join(projectRoot, 'dist', file);

export const PRINCIPAL = 'chaos';

/** A process of the stack that died without the suite killing it. */
export interface Crash {
  name: string;
  at: number;
  detail: string;
}

/** A role that can be killed and started again (the API, a worker); restarted, like a process manager would, when it crashes. */
export interface Service {
  readonly name: string;
  readonly process: ManagedProcess | undefined;
  readonly running: boolean;
  start(): Promise<void>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export interface ChaosStack {
  readonly runDir: string;
  readonly apiUrl: string;
  readonly downstreamUrl: string;
  readonly apiKey: string;
  readonly operatorKey: string;
  readonly namespace: string;
  /** Read-only checks and the operator's look-ups. */
  readonly db: Pool;
  readonly temporal: Client;
  readonly api: Service;
  /** workers[0] runs all the time; workers[1] is the second worker some trials start. */
  readonly workers: readonly [Service, Service];
  /** Every crash of the API or a worker so far (each was restarted). */
  readonly crashes: Crash[];
  /** Base URL (…/v1) of each simulated provider by name: its request lookup tells what it executed. */
  readonly providerUrls: Readonly<Record<string, string>>;
  /** The process of both simulated providers (SIGSTOP pauses both). */
  readonly providers: ManagedProcess;
  /** False with an external DATABASE_URL: the suite cannot restart that server. */
  readonly canRestartPostgres: boolean;
  /** Stops PostgreSQL (fast shutdown), waits downMs, starts it again on the same port and data. */
  restartPostgres(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

export interface StackOptions {
  log: (line: string) => void;
  /** Keep the run folder (logs) when stopping. */
  keepRunDir: boolean;
  /** A round's own environment for the API, the workers and the contract verification (its operations file, budgets, ...). */
  extraEnv?: Record<string, string>;
  /** The providers file from the simulators' URLs (a round's own routes and prices); default: the built-in providers. */
  providersYaml?: (simulators: { primaryUrl: string; backupUrl: string }) => string;
}

/** A fresh database in an external server, dropped at the end. */
async function createExternalDatabase(url: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `onceflow_chaos_${process.pid}_${Date.now()}`;
  const admin = new PgClient({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    url: own.toString(),
    async drop() {
      const client = new PgClient({ connectionString: url });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * Starts the whole stack.
 * @throws Error naming the part that did not start (and stops what did).
 */
export async function startStack(supervisor: Supervisor, options: StackOptions): Promise<ChaosStack> {
  const { log } = options;
  const runDir = path.join(projectRoot, '.data', 'chaos', `run-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
  mkdirSync(runDir, { recursive: true });
  const logFile = (name: string): string => path.join(runDir, `${name}.log`);
  const cleanups: Array<() => Promise<void>> = [];
  const stopAll = async (): Promise<void> => {
    await supervisor.stopAll();
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err: unknown) => log(`while stopping: ${(err as Error).message}`));
  };

  try {
    // PostgreSQL
    let databaseUrl: string;
    let pg: RunningPostgres | undefined;
    let pgPort = 0;
    const pgDataDir = path.join(runDir, 'postgres');
    const external = process.env.DATABASE_URL;
    if (external) {
      const database = await createExternalDatabase(external);
      cleanups.push(database.drop);
      databaseUrl = database.url;
      log('PostgreSQL: a fresh database in DATABASE_URL (no restarts possible)');
    } else {
      pgPort = await freePort();
      pg = await startEmbeddedPostgres({ dataDir: pgDataDir, port: pgPort, database: 'onceflow', persistent: true });
      databaseUrl = pg.url;
      cleanups.push(async () => {
        await pg?.stop();
        pg = undefined;
      });
      log(`PostgreSQL (embedded) on port ${pgPort}`);
    }
    supervisor.adopt('postgres', () => {
      if (external) return undefined;
      try {
        return Number(readFileSync(path.join(pgDataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        return undefined;
      }
    });

    // Temporal dev server: in memory, headless, free ports.
    const cli = await resolveTemporalCli({ build: false });
    if (!cli) throw new Error('no Temporal CLI: run `npm run tools -- ensure` (or set TEMPORAL_CLI_PATH)');
    const temporalPort = await freePort();
    const devConfig = { ...loadTemporalDevConfig(undefined, { TEMPORAL_PORT: String(temporalPort), TEMPORAL_DB_FILENAME: '' }), ui: false };
    const temporalServer = await supervisor.start({ name: 'temporal', command: cli.path, args: devServerArgs(devConfig), env: process.env, logFile: logFile('temporal') });
    await waitForPort(devConfig.ip, temporalPort, 60_000, () => temporalServer.alive);
    const temporalAddress = `${devConfig.ip}:${temporalPort}`;
    log(`Temporal dev server at ${temporalAddress} (namespace ${devConfig.namespace}, in memory)`);

    // Simulators: the providers in one process, the downstream in another.
    const [primaryPort, backupPort, downstreamPort] = [await freePort(), await freePort(), await freePort()];
    const sim = (name: string, env: Record<string, string>) =>
      supervisor.start({ name, command: NODE, args: [dist('sim/main.js')], env: { ...process.env, ...env }, logFile: logFile(name), readyLine: /sim-downstream listening/ });
    const providers = await sim('sim-providers', { SIM_PRIMARY_PORT: String(primaryPort), SIM_BACKUP_PORT: String(backupPort), SIM_DOWNSTREAM_PORT: '0' });
    await sim('sim-downstream', { SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: String(downstreamPort) });
    const downstreamUrl = `http://127.0.0.1:${downstreamPort}`;
    log(`simulators: sim-primary :${primaryPort}, sim-backup :${backupPort}, downstream :${downstreamPort}`);

    const providersFile = path.join(runDir, 'providers.yaml');
    // The built-in providers (prices included), or the round's own, with the simulators on this run's ports.
    const simulatorUrls = { primaryUrl: `http://127.0.0.1:${primaryPort}/v1`, backupUrl: `http://127.0.0.1:${backupPort}/v1` };
    writeFileSync(providersFile, (options.providersYaml ?? builtInProvidersYaml)(simulatorUrls));
    const apiKey = `k_chaos_${randomBytes(12).toString('hex')}`;
    const operatorKey = `k_chaos_operator_${randomBytes(12).toString('hex')}`;
    const apiPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...settingsEnv(),
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: devConfig.namespace,
      ONCEFLOW_PROVIDERS_FILE: providersFile,
      ONCEFLOW_MESSAGES_URL: downstreamUrl,
      ONCEFLOW_API_KEYS: `${PRINCIPAL}:${apiKey}`,
      ONCEFLOW_OPERATOR_KEYS: operatorKey,
      ONCEFLOW_API_HOST: '127.0.0.1',
      ONCEFLOW_API_PORT: String(apiPort),
      // As npm start does: each worker drills the effects before it takes tasks, so recovery may rely on what they show.
      ONCEFLOW_EFFECTS_VERIFY_AT_START: '1',
      ...options.extraEnv,
    };

    // Migrations, then the fallback's contract verification: without it, failover is off.
    const verify = await supervisor.start({ name: 'contracts-verify', command: NODE, args: [dist('cli/main.js'), 'contracts', 'verify', '--samples', '1'], env, logFile: logFile('contracts-verify') });
    const verified = await verify.exited;
    if (verified !== 0) throw new Error(`contracts verify exited with ${verified} (see ${logFile('contracts-verify')}): failover would be off`);
    log('contracts verified (sim-primary, sim-backup, every route of the operations): failover is on');

    const crashes: Crash[] = [];
    let stopping = false;
    const service = (name: string, args: string[], readyLine: RegExp, extraEnv: () => Promise<Record<string, string>>): Service => {
      let current: ManagedProcess | undefined;
      let starting: Promise<void> | undefined;
      const self: Service = {
        name,
        get process() {
          return current;
        },
        get running() {
          return current?.alive ?? false;
        },
        start() {
          if (current?.alive) return Promise.resolve();
          starting ??= (async () => {
            const started = await supervisor.start({ name, command: NODE, args, env: { ...env, ...(await extraEnv()) }, logFile: logFile(name), readyLine, readyTimeoutMs: 120_000 });
            current = started;
            void started.exited.then((code) => {
              if (started.expectedExit || stopping) return;
              crashes.push({ name, at: Date.now(), detail: `${name} (pid ${started.pid}) exited with ${code}: ${crashLine(logFile(name))}` });
              log(`${name} crashed; restarting it`);
              void (async () => {
                // It may not start while what killed it lasts (PostgreSQL still down): try again.
                for (let tries = 1; !stopping && !current?.alive; tries++) {
                  await new Promise((resolve) => setTimeout(resolve, 500));
                  await self.start().catch((err: unknown) => tries % 10 === 0 && log(`${name} did not restart yet: ${(err as Error).message}`));
                }
              })();
            });
          })().finally(() => (starting = undefined));
          return starting;
        },
        async kill() {
          await current?.kill();
        },
        async stop() {
          await current?.stop();
        },
      };
      return self;
    };
    const workerService = (index: number): Service =>
      service(`worker-${index + 1}`, [dist('worker/main.js')], /worker: polling/, async () => ({ ONCEFLOW_WORKER_METRICS_PORT: String(await freePort()) }));
    const workers: [Service, Service] = [workerService(0), workerService(1)];
    const api = service('api', [dist('api/main.js')], /api: listening/, async () => ({}));
    await Promise.all([workers[0].start(), api.start()]);
    log(`worker-1 and API up; API at http://127.0.0.1:${apiPort}`);

    const db = new Pool({ connectionString: databaseUrl, max: 4 });
    // A restart of PostgreSQL breaks idle connections; the pool replaces them.
    db.on('error', () => undefined);
    cleanups.push(() => db.end());
    const connection = await Connection.connect({ address: temporalAddress });
    cleanups.push(() => connection.close());
    const temporal = new Client({ connection, namespace: devConfig.namespace });

    return {
      runDir,
      apiUrl: `http://127.0.0.1:${apiPort}`,
      downstreamUrl,
      apiKey,
      operatorKey,
      namespace: devConfig.namespace,
      db,
      temporal,
      api,
      workers,
      providers,
      canRestartPostgres: !external,
      crashes,
      providerUrls: { 'sim-primary': `http://127.0.0.1:${primaryPort}/v1`, 'sim-backup': `http://127.0.0.1:${backupPort}/v1` },
      async restartPostgres(downMs: number) {
        if (!pg) throw new Error('PostgreSQL is external here: it cannot be restarted');
        await pg.stop();
        pg = undefined;
        await new Promise((resolve) => setTimeout(resolve, downMs));
        pg = await startEmbeddedPostgres({ dataDir: pgDataDir, port: pgPort, database: 'onceflow', persistent: true });
      },
      async stop() {
        stopping = true;
        await stopAll();
        if (!options.keepRunDir) rmSync(runDir, { recursive: true, force: true });
        else rmSync(pgDataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
