#!/usr/bin/env node
/**
 * `onceflow contracts verify [--operation NAME] [--provider NAME] [--samples N]`
 * `onceflow histories collect|replay ...` (see cli/histories.ts)
 *
 * Verifies providers against operations' output contracts (probe fixtures,
 * several samples each) and records the outcome in provider_contracts. Reads
 * DATABASE_URL and ONCEFLOW_PROVIDERS_FILE. Exits 0 when every verification
 * passed, 1 when one failed, 2 on bad usage.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import { verifyContracts } from '../contracts/verify';
import { migrate } from '../db/migrate';
import { assertReachable, createPool, poolSettings } from '../db/pool';
import { createRegistry } from '../operations/registry';
import { loadProviders } from '../providers/load';
import { HISTORIES_USAGE, historiesCommand } from './histories';

const USAGE = `usage: onceflow contracts verify [--operation NAME] [--provider NAME] [--samples N]\n       ${HISTORIES_USAGE.replace('usage: ', '')}`;

async function main(argv: string[]): Promise<number> {
  const [group, command, ...rest] = argv;
  if (group === 'histories') return historiesCommand(command, rest);
  if (group !== 'contracts' || command !== 'verify') {
    console.error(USAGE);
    return 2;
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
    const operations = createRegistry();
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

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`onceflow: ${(err as Error).message ?? String(err)}`);
    process.exit(1);
  },
);
