/**
 * A production-shaped Temporal: Temporal's own server (its frontend, history,
 * matching and worker services in one process) on a PostgreSQL of its own,
 * with several history shards, as a self-hosted cluster runs it. The bench
 * runs its e2e section against it (`npm run bench -- --temporal postgres`).
 *
 * The server comes from resolveTemporalServer (tools.ts). Its databases are
 * made and migrated by its own schema tool; its config file is written here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { stringify } from 'yaml';
import { ownProcess } from './owned-process';
import { waitForPort } from './temporal-dev';
import type { ResolvedTemporalServer } from './tools';

export interface TemporalClusterOptions {
  /** Where its config and logs go. */
  dir: string;
  /** The PostgreSQL it keeps its databases on (their own server's, apart from the ledger's). */
  postgres: { host: string; port: number; user: string; password: string };
  namespace: string;
  /** Its two databases' names (default temporal and temporal_visibility): made by its schema tool, so they must not exist yet. */
  databases?: { store: string; visibility: string };
  /** History shards (a cluster's count is fixed once made). */
  shards: number;
  /** Custom search attributes to register in the namespace (NAME: Keyword, ...). */
  searchAttributes: Record<string, string>;
  /** Dynamic config, as the server's file takes it (key: value). */
  dynamicConfig: Record<string, unknown>;
  log: (line: string) => void;
}

export interface RunningTemporalCluster {
  address: string;
  namespace: string;
  process: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

const DATABASES = { store: 'temporal', visibility: 'temporal_visibility' };

function runTool(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out = (out + chunk.toString()).slice(-4000)));
    child.stderr.on('data', (chunk: Buffer) => (out = (out + chunk.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(file)} ${args.join(' ')} exited with ${code}: ${out.trim()}`))));
  });
}

/** Makes both databases and brings their schemas to the server's version. */
async function migrate(tool: ResolvedTemporalServer, pg: TemporalClusterOptions['postgres'], databases: typeof DATABASES): Promise<void> {
  const base = ['--ep', pg.host, '-p', String(pg.port), '-u', pg.user, '--pw', pg.password, '--pl', 'postgres12'];
  for (const [kind, database] of Object.entries(databases)) {
    const dir = path.join(tool.schemaDir, kind === 'store' ? 'temporal' : 'visibility', 'versioned');
    await runTool(tool.sqlTool, [...base, '--db', database, 'create-database']);
    await runTool(tool.sqlTool, [...base, '--db', database, 'setup-schema', '-v', '0.0']);
    await runTool(tool.sqlTool, [...base, '--db', database, 'update-schema', '-d', dir]);
  }
}

/**
 * A free loopback port below 32768: the server keeps its services' ports in
 * a smallint column (cluster_membership), so the kernel's ephemeral ports
 * above it are refused at its start.
 */
async function freeLowPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    if (taken.has(candidate)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(candidate, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) {
      taken.add(candidate);
      return candidate;
    }
  }
}

/** The server's config: SQL persistence on PostgreSQL, the four services on free loopback ports. */
async function configOf(options: TemporalClusterOptions, dynamicConfigFile: string): Promise<{ config: Record<string, unknown>; frontendPort: number }> {
  const pg = options.postgres;
  const databases = options.databases ?? DATABASES;
  const datastore = (database: string, conns: number) => ({
    sql: { pluginName: 'postgres12', databaseName: database, connectAddr: `${pg.host}:${pg.port}`, connectProtocol: 'tcp', user: pg.user, password: pg.password, maxConns: conns, maxIdleConns: conns, maxConnLifetime: '1h' },
  });
  const taken = new Set<number>();
  const port = () => freeLowPort(taken);
  const service = async (http = false) => ({
    rpc: { grpcPort: await port(), membershipPort: await port(), bindOnLocalHost: true, ...(http ? { httpPort: await port() } : {}) },
  });
  const frontend = await service(true);
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: options.shards,
      datastores: { 'postgres-default': datastore(databases.store, 20), 'postgres-visibility': datastore(databases.visibility, 4) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: { frontend, history: await service(), matching: await service(), worker: await service() },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${frontend.rpc.grpcPort}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
  return { config, frontendPort: frontend.rpc.grpcPort };
}

const SEARCH_ATTRIBUTE_TYPE: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Text: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Int: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** Registers the namespace and its search attributes, retrying while the server's services join. */
async function prepareNamespace(address: string, options: TemporalClusterOptions, alive: () => boolean): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    for (let tries = 1; ; tries++) {
      try {
        await connection.workflowService.registerNamespace({ namespace: options.namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
        break;
      } catch (err) {
        if (/already exists/i.test((err as Error).message)) break;
        if (!alive() || tries >= 60) throw err;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
    const searchAttributes = Object.fromEntries(Object.entries(options.searchAttributes).map(([name, type]) => [name, SEARCH_ATTRIBUTE_TYPE[type]!]));
    if (Object.keys(searchAttributes).length) await connection.operatorService.addSearchAttributes({ namespace: options.namespace, searchAttributes });
    // A new namespace reaches every service's cache within its refresh interval: wait until a describe answers.
    for (let tries = 1; ; tries++) {
      try {
        await connection.workflowService.describeNamespace({ namespace: options.namespace });
        return;
      } catch (err) {
        if (tries >= 30) throw err;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  } finally {
    await connection.close();
  }
}

/**
 * Migrates the databases, writes the config, starts the server and makes the namespace.
 * @throws Error when the schema tool fails or the server does not come up.
 */
export async function startTemporalCluster(tool: ResolvedTemporalServer, options: TemporalClusterOptions): Promise<RunningTemporalCluster> {
  mkdirSync(options.dir, { recursive: true });
  await migrate(tool, options.postgres, options.databases ?? DATABASES);
  const dynamicConfigFile = path.join(options.dir, 'dynamic-config.yaml');
  writeFileSync(dynamicConfigFile, stringify(Object.fromEntries(Object.entries(options.dynamicConfig).map(([key, value]) => [key, [{ value }]]))));
  const { config, frontendPort } = await configOf(options, dynamicConfigFile);
  const configFile = path.join(options.dir, 'temporal-server.yaml');
  writeFileSync(configFile, stringify(config));
  const child = spawn(tool.server, ['--config-file', configFile, '--allow-no-auth', 'start'], { stdio: ['ignore', 'pipe', 'pipe'], cwd: options.dir });
  const owned = ownProcess(child, { keep: 8000, killAfterMs: 15_000 });
  const address = `127.0.0.1:${frontendPort}`;
  try {
    await waitForPort('127.0.0.1', frontendPort, 90_000, () => !owned.exited());
    await prepareNamespace(address, options, () => !owned.exited());
  } catch (err) {
    await owned.stop();
    options.log(owned.output().trim());
    throw new Error(`the Temporal server did not start: ${(err as Error).message}`);
  }
  options.log(`Temporal server ${address} (namespace ${options.namespace}, ${options.shards} history shards, PostgreSQL persistence)`);
  return { address, namespace: options.namespace, process: child, output: owned.output, stop: owned.stop };
}
