import path from 'node:path';
import { parseArgs } from 'node:util';
import { assertReachable, createPool } from '../db/pool';
import type { Pool } from 'pg';
import { ExitCode, type CliIo } from '../cli/io';
import { ENVIRONMENT, formatProblem, type OperationProblem } from '../operations/problems';
import { checkConfiguration } from './check-configuration';

export const CHECK_USAGE = 'usage: onceflow check [--operations FILE] [--providers FILE]';

/**
 * `onceflow check [--operations FILE] [--providers FILE]`: what `npm start`
 * would find wrong, without starting anything. The files default to
 * ONCEFLOW_OPERATIONS_FILE and ONCEFLOW_PROVIDERS_FILE (then the demo and
 * built-in ones); TypeScript modules are loaded through tsx; with
 * DATABASE_URL, the input schemas are compared with the versions jobs were
 * made with (read only). Prints every problem on stderr, one a line, and
 * exits 1; else one line naming what was checked, and 0. 2: a bad command line.
 */
export async function checkCommand(args: string[], io: CliIo): Promise<number> {
  let values: { operations?: string; providers?: string };
  try {
    ({ values } = parseArgs({ args, options: { operations: { type: 'string' }, providers: { type: 'string' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    io.err(`onceflow: ${(err as Error).message}\n${CHECK_USAGE}`);
    return ExitCode.usage;
  }
  const env = io.env;
  const unreachable: OperationProblem[] = [];
  let db: Pool | undefined;
  if (env.DATABASE_URL) {
    db = createPool(env.DATABASE_URL, { max: 1 });
    try {
      await assertReachable(db, env.DATABASE_URL);
    } catch (err) {
      unreachable.push({ file: ENVIRONMENT, pointer: '', problem: `DATABASE_URL: ${(err as Error).message}` });
      await db.end();
      db = undefined;
    }
  }
  try {
    const checked = await checkConfiguration({
      env,
      typeScriptModules: true,
      ...(values.operations === undefined ? {} : { operationsFile: path.resolve(values.operations) }),
      ...(values.providers === undefined ? {} : { providersFile: path.resolve(values.providers) }),
      ...(db ? { db } : {}),
    });
    const problems = [...checked.problems, ...unreachable];
    if (problems.length > 0) {
      for (const problem of problems) io.err(formatProblem(problem));
      io.err(`onceflow check: ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
      return ExitCode.refused;
    }
    io.out(`${checked.summary}${env.DATABASE_URL ? '' : ' (DATABASE_URL is not set)'}`);
    return ExitCode.ok;
  } finally {
    await db?.end();
  }
}
