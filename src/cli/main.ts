#!/usr/bin/env node
/**
 * `onceflow check [--operations FILE] [--providers FILE]` (see check/command.ts)
 * `onceflow contracts verify [--operation NAME] [--provider NAME] [--samples N]`
 * `onceflow histories collect|replay ...` (see cli/histories.ts)
 * `onceflow keys create|list|revoke ...` (see cli/keys.ts)
 * `onceflow jobs|attempts|effects|providers|entries|routes ...`, the operator's commands over the API (see cli/operator.ts)
 *
 * Verifies providers against operations' output contracts (probe fixtures,
 * several samples each) and records the outcome in provider_contracts. Reads
 * DATABASE_URL and ONCEFLOW_PROVIDERS_FILE. Exits 0 when every verification
 * passed, 1 when one failed, 2 on bad usage.
 */
import { parseArgs } from 'node:util';
import { CHECK_USAGE, checkCommand } from '../check/command';
import { loadConfig } from '../config';
import { verifyContracts } from '../contracts/verify';
import { migrate } from '../db/migrate';
import { assertReachable, createPool, poolSettings } from '../db/pool';
import { loadOperations } from '../operations/load';
import { loadProviders } from '../providers/load';
import { HISTORIES_USAGE, historiesCommand } from './histories';
import { ExitCode, processIo, UsageError, type CliIo } from './io';
import { KEYS_USAGE, keysCommand } from './keys';
import { OPERATOR_GROUPS, OPERATOR_USAGE, operatorCommand } from './operator';

const USAGE = [
  CHECK_USAGE,
  '       onceflow contracts verify [--operation NAME] [--provider NAME] [--samples N]',
  HISTORIES_USAGE.replace('usage: ', '       '),
  KEYS_USAGE.replace('usage: ', '       '),
  OPERATOR_USAGE.replace('usage: ', '       '),
].join('\n');

/** parseArgs' own complaints (unknown flag, missing value) are usage errors too. */
const isUsageError = (err: unknown): boolean => err instanceof UsageError || String((err as { code?: unknown })?.code ?? '').startsWith('ERR_PARSE_ARGS');

/**
 * Runs one command line and returns its exit code: 0 done, 1 refused (by the
 * server, the database or a failed check), 2 a bad command line.
 */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  const [group, command, ...rest] = argv;
  if (group === 'check') return checkCommand(argv.slice(1), io);
  try {
    if (group === 'keys') return await keysCommand(command, rest, io);
    if (group !== undefined && OPERATOR_GROUPS.includes(group)) return await operatorCommand(group, command, rest, io);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    io.err(`onceflow: ${(err as Error).message}\n${group === 'keys' ? KEYS_USAGE : OPERATOR_USAGE}`);
    return ExitCode.usage;
  }
  if (group === 'histories') return historiesCommand(command, rest);
  if (group !== 'contracts' || command !== 'verify') {
    io.err(USAGE);
    return ExitCode.usage;
  }
  let values;
  try {
    ({ values } = parseArgs({ args: rest, options: { operation: { type: 'string' }, provider: { type: 'string' }, samples: { type: 'string' } }, strict: true }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const config = loadConfig(values.samples ? { ...process.env, ONCEFLOW_VERIFICATION_SAMPLES: values.samples } : process.env);
  if (!config.databaseUrl) {
    console.error('onceflow: DATABASE_URL is not set');
    return 2;
  }
  const db = createPool(config.databaseUrl, poolSettings(config.database));
  try {
    await assertReachable(db, config.databaseUrl);
    await migrate(db);
    // A dev tool like `onceflow check`: TypeScript modules load through tsx.
    const operations = loadOperations(config.operationsFile, { typeScriptModules: true }).registry;
    const { providers, routeFor } = await loadProviders(config, operations);
    const records = await verifyContracts({ db, operations, providers, routeFor }, { operation: values.operation, provider: values.provider }, { samples: config.contracts.samples, timeoutMs: config.attempts.timeoutMs });
    if (records.length === 0) {
      console.error('onceflow: nothing to verify (no route step matches)');
      return 2;
    }
    for (const record of records) {
      console.log(`${record.passed ? 'PASS' : 'FAIL'}  ${record.operation} v${record.schemaVersion}  ${record.provider}/${record.model}  template ${record.templateHash.slice(0, 19)}…  ${record.samples} samples per fixture`);
    }
    return records.every((record) => record.passed) ? 0 : 1;
  } finally {
    await db.end();
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`onceflow: ${(err as Error).message ?? String(err)}`);
      process.exit(1);
    },
  );
}
