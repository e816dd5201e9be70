/**
 * `npm run guards [name filter]`: deletes each guard of guards.ts in turn,
 * runs the tests that protect it, and reports a guard whose tests still pass.
 * Restores every file, also on Ctrl-C. Exits 1 when a guard is unprotected,
 * or when the filter names no guard.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GUARDS } from './guards';

const root = path.resolve(__dirname, '..', '..');
const filter = process.argv[2];
const originals = new Map<string, string>();
const restore = (): void => originals.forEach((text, file) => writeFileSync(file, text));
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    restore();
    process.exit(130);
  });
}

/** Builds what the tests load (the client package) from the sources as they are now. */
function rebuild(script: string | undefined): void {
  if (!script) return;
  const built = spawnSync('npm', ['run', '--silent', script], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`npm run ${script} failed:\n${built.stdout}${built.stderr}`);
}

const chosen = GUARDS.filter((g) => !filter || g.name.includes(filter));
// A filter that names no guard has proven nothing: it fails rather than report every guard protected.
if (chosen.length === 0) {
  console.log(`no guard's name contains ${JSON.stringify(filter)}`);
  process.exit(1);
}
let unprotected = 0;
for (const guard of chosen) {
  const file = path.join(root, guard.file);
  const text = readFileSync(file, 'utf8');
  originals.set(file, text);
  if (text.split(guard.find).length !== 2) {
    console.log(`?? ${guard.name}: its text is not in ${guard.file} exactly once; update guards.ts`);
    unprotected++;
    continue;
  }
  writeFileSync(file, text.replace(guard.find, guard.replace));
  const args = ['jest', '--forceExit', ...guard.tests, ...(guard.testNamePattern ? ['-t', guard.testNamePattern] : [])];
  const started = Date.now();
  let run: ReturnType<typeof spawnSync>;
  try {
    rebuild(guard.rebuild);
    // A guard whose absence makes a test hang (a sleep of an hour) is caught too: the tests did not pass.
    run = spawnSync('npx', args, { cwd: root, encoding: 'utf8', timeout: 240_000, killSignal: 'SIGKILL', env: { ...process.env, ONCEFLOW_TEST_LONG_WAIT_PASSES: '50' } });
  } finally {
    writeFileSync(file, text);
    rebuild(guard.rebuild);
  }
  const failed = run.status !== 0;
  const seconds = Math.round((Date.now() - started) / 1000);
  const how = run.status === null ? 'timed out' : `${seconds} s`;
  console.log(`${failed ? 'ok' : 'UNPROTECTED'}  ${guard.name}  (${guard.tests.join(', ')}, ${how})`);
  if (!failed) unprotected++;
}
restore();
console.log(unprotected ? `${unprotected} guard(s) not protected by a failing test` : 'every guard is protected by a test that fails without it');
process.exit(unprotected ? 1 : 0);
