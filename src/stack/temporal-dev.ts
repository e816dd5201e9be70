import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../paths';
import { ownProcess } from './owned-process';

/** temporal-dev.yaml, parsed and checked. */
export interface TemporalDevConfig {
  namespace: string;
  ip: string;
  port: number;
  uiPort: number;
  ui: boolean;
  /** Absolute path, or undefined for an in-memory server. */
  dbFilename?: string;
  logLevel: string;
  searchAttributes: Record<string, string>;
  dynamicConfig: Record<string, unknown>;
}

const SEARCH_ATTRIBUTE_TYPES = new Set(['Text', 'Keyword', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList']);

export class DevConfigError extends Error {
  override name = 'DevConfigError';
}

function port(value: unknown, key: string): number {
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 65535) {
    throw new DevConfigError(`temporal-dev.yaml: ${key} must be a port number (0-65535), got ${JSON.stringify(value)}`);
  }
  return n;
}

function flag(value: unknown, key: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(1|true|on|yes)$/i.test(value)) return true;
  if (typeof value === 'string' && /^(0|false|off|no)$/i.test(value)) return false;
  throw new DevConfigError(`${key} must be true or false (1 or 0), got ${JSON.stringify(value)}`);
}

/**
 * Reads temporal-dev.yaml; TEMPORAL_NAMESPACE, TEMPORAL_PORT, TEMPORAL_UI_PORT,
 * TEMPORAL_UI and TEMPORAL_DB_FILENAME override it.
 * @throws DevConfigError on a missing file or a malformed key.
 */
export function loadTemporalDevConfig(
  file = path.join(projectRoot, 'temporal-dev.yaml'),
  env: NodeJS.ProcessEnv = process.env,
): TemporalDevConfig {
  let raw: Record<string, unknown>;
  try {
    raw = (parse(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
  } catch (err) {
    throw new DevConfigError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const searchAttributes = (raw.searchAttributes ?? {}) as Record<string, string>;
  for (const [name, type] of Object.entries(searchAttributes)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || !SEARCH_ATTRIBUTE_TYPES.has(type)) {
      throw new DevConfigError(`temporal-dev.yaml: search attribute ${name}: ${type} is not NAME: ${[...SEARCH_ATTRIBUTE_TYPES].join('|')}`);
    }
  }
  // TEMPORAL_DB_FILENAME overrides dbFilename; empty means in memory.
  const dbFile = env.TEMPORAL_DB_FILENAME ?? raw.dbFilename;
  const dbFilename = typeof dbFile === 'string' && dbFile ? path.resolve(projectRoot, dbFile) : undefined;
  const portValue = port(env.TEMPORAL_PORT ?? raw.port ?? 7233, 'port');
  return {
    namespace: env.TEMPORAL_NAMESPACE ?? String(raw.namespace ?? 'default'),
    ip: String(raw.ip ?? '127.0.0.1'),
    port: portValue,
    uiPort: port(env.TEMPORAL_UI_PORT ?? raw.uiPort ?? portValue + 1000, 'uiPort'),
    ui: env.TEMPORAL_UI !== undefined && env.TEMPORAL_UI !== '' ? flag(env.TEMPORAL_UI, 'TEMPORAL_UI') : flag(raw.ui ?? true, 'temporal-dev.yaml: ui'),
    dbFilename,
    logLevel: String(raw.logLevel ?? 'warn'),
    searchAttributes,
    dynamicConfig: (raw.dynamicConfig ?? {}) as Record<string, unknown>,
  };
}

/** The `temporal server start-dev` flags that a config stands for. */
export function devServerArgs(config: TemporalDevConfig): string[] {
  const args = ['server', 'start-dev', '--namespace', config.namespace, '--ip', config.ip, '--port', String(config.port)];
  args.push('--log-level', config.logLevel);
  if (config.ui) args.push('--ui-port', String(config.uiPort));
  else args.push('--headless');
  if (config.dbFilename) args.push('--db-filename', config.dbFilename);
  return [...args, ...registrationArgs(config)];
}

/** The flags for search attributes and dynamic config. */
function registrationArgs(config: TemporalDevConfig): string[] {
  return [
    ...Object.entries(config.searchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
    ...Object.entries(config.dynamicConfig).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
  ];
}

/** Resolves once something accepts TCP connections on host:port, or rejects after timeoutMs. */
export function waitForPort(host: string, portNumber: number, timeoutMs: number, isAlive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const socket = net.connect({ host, port: portNumber });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (!isAlive()) reject(new Error(`the process meant to listen on ${host}:${portNumber} exited`));
        else if (Date.now() > deadline) reject(new Error(`nothing listens on ${host}:${portNumber} after ${timeoutMs} ms`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** Rejects with a clear message when host:port is already taken. */
export function assertPortFree(host: string, portNumber: number, hint: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(new Error(err.code === 'EADDRINUSE' ? `port ${portNumber} on ${host} is busy; ${hint}` : `cannot bind ${host}:${portNumber}: ${err.message}`));
    });
    server.listen(portNumber, host, () => server.close(() => resolve()));
  });
}

/** Finds a free TCP port on loopback. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const found = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(found));
    });
  });
}

export interface RunningDevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  process?: ChildProcess;
  /** The server's latest output (its last 4000 characters), for diagnostics. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` with the config's flags and waits until its frontend answers.
 * With ownProcessGroup, a terminal's Ctrl-C reaches only the caller, which
 * stops the server in its turn (`npm start`); the caller must then stop it on
 * every signal it handles.
 * @throws Error when a port is busy or the server exits or does not come up in time.
 */
export async function startDevServer(
  cliPath: string,
  config: TemporalDevConfig,
  log: (line: string) => void,
  options: { ownProcessGroup?: boolean } = {},
): Promise<RunningDevServer> {
  await assertPortFree(config.ip, config.port, 'set TEMPORAL_PORT or port in temporal-dev.yaml, or stop what uses it');
  if (config.ui) await assertPortFree(config.ip, config.uiPort, 'set TEMPORAL_UI_PORT or uiPort in temporal-dev.yaml');
  if (config.dbFilename) mkdirSync(path.dirname(config.dbFilename), { recursive: true });
  const child = spawn(cliPath, devServerArgs(config), { stdio: ['ignore', 'pipe', 'pipe'], detached: options.ownProcessGroup === true });
  const owned = ownProcess(child, {
    keep: 4000,
    killAfterMs: 10_000,
    onAlreadyExited: () => log(`the Temporal dev server had already exited (${child.signalCode ?? `code ${child.exitCode}`}) before its turn to stop`),
  });
  try {
    await waitForPort(config.ip, config.port, 60_000, () => !owned.exited());
    if (config.ui) await waitForPort(config.ip, config.uiPort, 30_000, () => !owned.exited());
  } catch (err) {
    await owned.stop();
    log(owned.output().trim());
    throw new Error(`Temporal dev server did not start: ${(err as Error).message}`);
  }
  return {
    address: `${config.ip}:${config.port}`,
    namespace: config.namespace,
    uiUrl: config.ui ? `http://${config.ip}:${config.uiPort}` : undefined,
    process: child,
    output: owned.output,
    stop: owned.stop,
  };
}

/**
 * The last resort when no Temporal CLI can be found or built: the SDK downloads
 * the CLI itself (needs internet) and runs it with the same settings.
 */
export async function startDevServerByDownload(config: TemporalDevConfig, log: (line: string) => void): Promise<RunningDevServer> {
  log('no Temporal CLI here and no Go to build one: asking the SDK to download it (needs internet)');
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  let env;
  try {
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        namespace: config.namespace,
        ip: config.ip,
        port: config.port,
        ui: config.ui,
        uiPort: config.ui ? config.uiPort : undefined,
        dbFilename: config.dbFilename,
        extraArgs: [...registrationArgs(config), '--log-level', config.logLevel],
      },
    });
  } catch (err) {
    throw new Error(`no Temporal CLI: install Go (to build it), put \`temporal\` on PATH or set TEMPORAL_CLI_PATH; the SDK's download failed too (${(err as Error).message})`);
  }
  return {
    address: `${config.ip}:${config.port}`,
    namespace: config.namespace,
    uiUrl: config.ui ? `http://${config.ip}:${config.uiPort}` : undefined,
    process: undefined,
    output: () => '',
    stop: () => env.teardown(),
  };
}
