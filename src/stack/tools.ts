import { spawn } from 'node:child_process';
import { accessSync, chmodSync, constants, cpSync, existsSync, readdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { projectRoot, toolsDir } from '../paths';

/**
 * Where the Temporal servers come from. Each is resolved in one order:
 * explicit env path → on PATH → cached build in `.tools/` → build or fetch it
 * (Go for the CLI, Maven for the test server) → the SDK's own download, which
 * needs internet and is represented here as `undefined`.
 */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
/** The newest CLI tag whose go.mod has no `replace` directive, so `go install` works. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';

export type ToolSource = 'env' | 'path' | 'cache' | 'built';

export interface ResolvedTool {
  path: string;
  source: ToolSource;
}

export class ToolError extends Error {
  override name = 'ToolError';
}

export interface ResolveOptions {
  /** Build or fetch the tool when nothing else has it. */
  build: boolean;
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

const cachedCli = path.join(toolsDir, 'bin', 'temporal');
const testServerLib = path.join(toolsDir, 'temporal-test-server', 'lib');
const testServerWrapper = path.join(projectRoot, 'scripts', 'temporal-test-server');
const testServerPom = path.join(projectRoot, 'tools', 'temporal-test-server', 'pom.xml');

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds an executable on PATH, like `command -v`. */
export function which(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function fromEnv(variable: string, env: NodeJS.ProcessEnv): ResolvedTool | undefined {
  const explicit = env[variable];
  if (!explicit) return undefined;
  if (!isExecutable(explicit)) {
    throw new ToolError(`${variable}=${explicit} is not an executable file; fix the path or unset ${variable}`);
  }
  return { path: explicit, source: 'env' };
}

/** Makes a folder and everything in it writable by its owner. */
function writable(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) writable(file);
    else chmodSync(file, 0o644);
  }
}

/** A command's standard output, trimmed. */
function output(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(text.trim()) : reject(new ToolError(`${command} ${args.join(' ')} exited with ${code}`))));
  });
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, log?: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const keep = (chunk: Buffer): void => {
      tail = (tail + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve();
      else {
        log?.(tail.trim());
        reject(new ToolError(`${command} ${args.join(' ')} exited with ${code}`));
      }
    });
  });
}

/**
 * Resolves the Temporal CLI (`temporal server start-dev`).
 * @returns the tool, or undefined when only the SDK's download is left.
 * @throws ToolError when TEMPORAL_CLI_PATH is wrong or the Go build fails.
 */
export async function resolveTemporalCli(opts: ResolveOptions): Promise<ResolvedTool | undefined> {
  const env = opts.env ?? process.env;
  const resolved =
    fromEnv('TEMPORAL_CLI_PATH', env) ??
    (which('temporal', env) ? { path: which('temporal', env)!, source: 'path' as const } : undefined) ??
    (isExecutable(cachedCli) ? { path: cachedCli, source: 'cache' as const } : undefined);
  if (resolved || !opts.build) return resolved;

  const go = which('go', env);
  if (!go) return undefined;
  opts.log?.(`building the Temporal CLI ${TEMPORAL_CLI_VERSION} with Go into ${path.dirname(cachedCli)} (first time only; a few minutes)`);
  await run(go, ['install', `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`], { ...env, GOBIN: path.dirname(cachedCli) }, opts.log);
  if (!isExecutable(cachedCli)) throw new ToolError(`go install finished but ${cachedCli} is missing`);
  return { path: cachedCli, source: 'built' };
}

function hasTestServerJars(): boolean {
  return existsSync(testServerLib) && readdirSync(testServerLib).some((f) => /^temporal-test-server-.*\.jar$/.test(f));
}

/**
 * Resolves Temporal's time-skipping test server as an executable taking `<port>`.
 * @returns the tool, or undefined when only the SDK's download is left.
 * @throws ToolError when TEMPORAL_TEST_SERVER_PATH is wrong or the Maven fetch fails.
 */
export async function resolveTestServer(opts: ResolveOptions): Promise<ResolvedTool | undefined> {
  const env = opts.env ?? process.env;
  const onPath = which('temporal-test-server', env);
  const resolved =
    fromEnv('TEMPORAL_TEST_SERVER_PATH', env) ??
    (onPath ? { path: onPath, source: 'path' as const } : undefined) ??
    (hasTestServerJars() && which('java', env) ? { path: testServerWrapper, source: 'cache' as const } : undefined);
  if (resolved || !opts.build) return resolved;

  const mvn = which('mvn', env);
  if (!mvn || !which('java', env)) return undefined;
  opts.log?.(`fetching Temporal's test server from Maven Central into ${testServerLib}`);
  await run(mvn, ['-q', '-B', '-f', testServerPom, 'package', `-Dtest-server.lib=${testServerLib}`], env, opts.log);
  if (!hasTestServerJars()) throw new ToolError(`Maven finished but ${testServerLib} has no test-server jar`);
  return { path: testServerWrapper, source: 'built' };
}

/**
 * Temporal's own server (frontend, history, matching and worker services in
 * one process) with SQL persistence, and its schema tool: a production-shaped
 * Temporal for the bench (`--temporal postgres`). Built from Go modules:
 * its go.mod has no `replace` directive; it needs a Go newer than 1.26.8,
 * which the go command takes from the module proxy (GOTOOLCHAIN).
 */
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';
export const TEMPORAL_SERVER_VERSION = 'v1.32.2';
export const TEMPORAL_SERVER_GO_TOOLCHAIN = 'go1.27.3';

export interface ResolvedTemporalServer {
  server: string;
  sqlTool: string;
  /** The folder with the PostgreSQL schemas: `temporal/versioned` and `visibility/versioned` (the module's schema/postgresql/v12). */
  schemaDir: string;
  source: ToolSource;
}

const serverCache = path.join(toolsDir, 'temporal-server');

function cachedServer(): ResolvedTemporalServer | undefined {
  const found = { server: path.join(serverCache, 'bin', 'temporal-server'), sqlTool: path.join(serverCache, 'bin', 'temporal-sql-tool'), schemaDir: path.join(serverCache, 'schema', 'postgresql', 'v12') };
  return isExecutable(found.server) && isExecutable(found.sqlTool) && existsSync(path.join(found.schemaDir, 'temporal', 'versioned')) ? { ...found, source: 'cache' } : undefined;
}

/**
 * Resolves the Temporal server, its SQL schema tool and the PostgreSQL schemas:
 * TEMPORAL_SERVER_PATH with TEMPORAL_SQL_TOOL_PATH and TEMPORAL_SCHEMA_DIR →
 * `temporal-server` and `temporal-sql-tool` on PATH with TEMPORAL_SCHEMA_DIR →
 * a cached build in `.tools/temporal-server` → a build with Go (about ten
 * minutes on two cores, the first time).
 * @returns undefined when nothing has it and it may not be built (no Go, or `build` false).
 * @throws ToolError when an explicit path is wrong or the build fails.
 */
export async function resolveTemporalServer(opts: ResolveOptions): Promise<ResolvedTemporalServer | undefined> {
  const env = opts.env ?? process.env;
  const explicit = fromEnv('TEMPORAL_SERVER_PATH', env);
  const schemaDir = env.TEMPORAL_SCHEMA_DIR;
  const needSchemas = (from: string): string => {
    if (!schemaDir) throw new ToolError(`${from} is set, but TEMPORAL_SCHEMA_DIR is not: name the server's schema/postgresql/v12 folder`);
    if (!existsSync(path.join(schemaDir, 'temporal', 'versioned'))) throw new ToolError(`TEMPORAL_SCHEMA_DIR=${schemaDir} has no temporal/versioned folder`);
    return schemaDir;
  };
  if (explicit) {
    const sqlTool = fromEnv('TEMPORAL_SQL_TOOL_PATH', env);
    if (!sqlTool) throw new ToolError('TEMPORAL_SERVER_PATH is set, but TEMPORAL_SQL_TOOL_PATH is not: name the temporal-sql-tool beside it');
    return { server: explicit.path, sqlTool: sqlTool.path, schemaDir: needSchemas('TEMPORAL_SERVER_PATH'), source: 'env' };
  }
  const onPath = { server: which('temporal-server', env), sqlTool: which('temporal-sql-tool', env) };
  if (onPath.server && onPath.sqlTool && schemaDir) return { server: onPath.server, sqlTool: onPath.sqlTool, schemaDir: needSchemas('temporal-server on PATH'), source: 'path' };
  const cached = cachedServer();
  if (cached || !opts.build) return cached;

  const go = which('go', env);
  if (!go) return undefined;
  const bin = path.join(serverCache, 'bin');
  const goEnv = { ...env, GOBIN: bin, GOTOOLCHAIN: TEMPORAL_SERVER_GO_TOOLCHAIN };
  opts.log?.(`building the Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL tool with Go (${TEMPORAL_SERVER_GO_TOOLCHAIN}) into ${bin} (first time only; about ten minutes)`);
  await run(go, ['install', `${TEMPORAL_SERVER_MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`, `${TEMPORAL_SERVER_MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`], goEnv, opts.log);
  renameSync(path.join(bin, 'server'), path.join(bin, 'temporal-server'));
  renameSync(path.join(bin, 'sql'), path.join(bin, 'temporal-sql-tool'));
  // The schemas are files of the module, not of the binaries: kept beside them.
  const modCache = await output(go, ['env', 'GOMODCACHE'], goEnv);
  const schemas = path.join(serverCache, 'schema', 'postgresql');
  cpSync(path.join(modCache, `${TEMPORAL_SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql'), schemas, { recursive: true });
  // The module cache is read-only; the copy need not be (so `rm -rf .tools` works for anyone).
  writable(schemas);
  const built = cachedServer();
  if (!built) throw new ToolError(`go install finished but ${serverCache} lacks the server, the SQL tool or the schemas`);
  return { ...built, source: 'built' };
}

/** The names a Chromium goes by on PATH, Debian's first. */
const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

/**
 * Resolves a Chromium for the browser tests (Playwright drives it through
 * `playwright-core`, which downloads no browser): CHROMIUM_PATH → on PATH →
 * Debian's `chromium` package, installed with apt-get when this process is
 * root. There is no cached build: a browser is the system's.
 * @returns the browser, or undefined when none is here and none can be installed.
 * @throws ToolError when CHROMIUM_PATH is wrong or apt-get fails.
 */
export async function resolveChromium(opts: ResolveOptions): Promise<ResolvedTool | undefined> {
  const env = opts.env ?? process.env;
  const onPath = CHROMIUM_NAMES.map((name) => which(name, env)).find(Boolean);
  const resolved = fromEnv('CHROMIUM_PATH', env) ?? (onPath ? { path: onPath, source: 'path' as const } : undefined);
  if (resolved || !opts.build) return resolved;

  const aptGet = which('apt-get', env);
  if (!aptGet || process.getuid?.() !== 0) return undefined;
  opts.log?.('installing Debian\'s chromium with apt-get (first time only)');
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  await run(aptGet, ['update', '-q'], aptEnv, opts.log);
  await run(aptGet, ['install', '-y', '-q', '--no-install-recommends', 'chromium'], aptEnv, opts.log);
  const installed = CHROMIUM_NAMES.map((name) => which(name, env)).find(Boolean);
  if (!installed) throw new ToolError('apt-get installed chromium but no chromium is on PATH');
  return { path: installed, source: 'built' };
}
