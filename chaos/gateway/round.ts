/**
 * `npm run chaos -- --round gateway`: the stack with the round's operations,
 * providers, budget and recording downstream; its trials, scheduled as the
 * core's are (canary and budget trials alone); its report by fault kind.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { renderReport } from '../report';
import { schedule } from '../scheduler';
import { startStack, type ChaosStack } from '../stack';
import type { Supervisor } from '../supervisor';
import { GATEWAY_VIOLATION_KINDS } from './checks';
import { startGatewayDownstream } from './downstream';
import { drawGatewayPlan, gatewayRunsAlone } from './draw';
import { gatewayOperations, gatewayProvidersYaml, gatewayStackEnv } from './stack-config';
import { runGatewayTrial, type GatewayContext, type GatewayTrialRecord } from './trial';
import { gatewayTrialLine } from './trial-line';

export interface GatewayRoundOptions {
  seed: number;
  trialNumbers: number[];
  repeat: number;
  concurrency: number;
  settleMs: number;
  minutes?: number;
  keep: boolean;
  json?: string;
  /** Keep each job's workflow history here, for the replay gate. */
  histories?: string;
  log: (line: string) => void;
  started: number;
  interrupted: () => boolean;
  /** Hands the stack to the caller's signal handler, which stops it. */
  onStack: (stack: ChaosStack) => void;
}

/** @returns the exit code: 1 on any violation or a trial the suite could not finish. */
export async function runGatewayRound(supervisor: Supervisor, options: GatewayRoundOptions): Promise<number> {
  const { log } = options;
  const operations = gatewayOperations();
  const downstream = await startGatewayDownstream();
  log(`gateway downstream at ${downstream.url} (redirects to ${downstream.elsewhereUrl}), the liar at ${downstream.liarUrl}`);
  const { env, secret } = gatewayStackEnv(downstream.url, downstream.liarUrl);
  let stack: ChaosStack | undefined;
  let records: GatewayTrialRecord[] = [];
  try {
    stack = await startStack(supervisor, { log, keepRunDir: options.keep, extraEnv: env, providersYaml: gatewayProvidersYaml });
    options.onStack(stack);
    const ctx: GatewayContext = { stack, windows: [], log, ...(options.histories ? { historiesDir: options.histories } : {}), gateway: { downstream, secret, operations: operations.registry, effect: operations.effect } };
    const runs = options.trialNumbers.flatMap((trial) => Array.from({ length: options.repeat }, (_, k) => ({ trial, tag: k === 0 ? '' : `r${k}` })));
    const jobs = runs.map(({ trial, tag }) => {
      const plan = drawGatewayPlan(options.seed, trial, tag);
      return { alone: gatewayRunsAlone(plan), run: () => runGatewayTrial(ctx, plan, { settleMs: options.settleMs }) };
    });
    const stopAt = options.minutes === undefined ? Infinity : options.started + options.minutes * 60_000;
    records = await schedule(jobs, options.concurrency, (record) => log(gatewayTrialLine(record)), () => options.interrupted() || Date.now() >= stopAt);
    if (records.length < jobs.length && !options.interrupted()) log(`--minutes ${options.minutes}: ${records.length} of ${jobs.length} trials ran in the time given`);
  } finally {
    if (!options.interrupted()) await stack?.stop();
    await downstream.close();
  }
  if (options.interrupted()) return 130;
  records.sort((a, b) => a.plan.trial - b.plan.trial);
  if (options.json) writeFileSync(path.resolve(options.json), JSON.stringify({ seed: options.seed, round: 'gateway', records }, null, 1));
  console.log('');
  console.log(renderReport({ seed: options.seed, concurrency: options.concurrency, durationMs: Date.now() - options.started, records, columns: Object.keys(GATEWAY_VIOLATION_KINDS), round: 'gateway' }));
  if (options.keep && stack) log(`logs kept in ${stack.runDir}`);
  return records.some((r) => r.violations.length > 0 || r.error) ? 1 : 0;
}
