import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The pinned Schemathesis version: a new one is a deliberate change. */
export const SCHEMATHESIS_VERSION = '4.32.5';

const ROOT = path.resolve(__dirname, '../../..');

/** Where the virtual environment lives: ONCEFLOW_SCHEMATHESIS_VENV, or .tools/ (ignored by git). */
export function venvDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.ONCEFLOW_SCHEMATHESIS_VENV ?? path.join(ROOT, '.tools', 'schemathesis-venv');
}

/**
 * The `st` executable of the pinned Schemathesis, installing it into its own
 * virtual environment first when it is missing or another version.
 * @throws Error when Python 3 or PyPI cannot be reached, saying which.
 */
export function ensureSchemathesis(log: (line: string) => void = () => undefined): string {
  const dir = venvDir();
  const st = path.join(dir, 'bin', 'st');
  const installed = existsSync(st) ? spawnSync(st, ['--version'], { encoding: 'utf8' }).stdout.trim() : '';
  if (installed.endsWith(` ${SCHEMATHESIS_VERSION}`)) return st;
  const python = process.env.PYTHON ?? 'python3';
  log(`installing schemathesis ${SCHEMATHESIS_VERSION} into ${dir}`);
  try {
    if (!existsSync(path.join(dir, 'bin', 'python'))) execFileSync(python, ['-m', 'venv', dir], { stdio: 'pipe' });
    execFileSync(path.join(dir, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `schemathesis==${SCHEMATHESIS_VERSION}`], { stdio: 'pipe', timeout: 600_000 });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`could not install schemathesis ${SCHEMATHESIS_VERSION} with ${python} into ${dir}: ${(err as Error).message}\n${stderr}`);
  }
  return st;
}
