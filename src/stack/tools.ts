import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
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
