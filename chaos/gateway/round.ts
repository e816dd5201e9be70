/**
 * `npm run chaos -- --round gateway`: the stack with the round's operations,
 * providers, budget and recording downstream; its trials, scheduled as the
 * core's are (canary and budget trials alone); its report by fault kind.
 */
import { reportRound, runRoundTrials, type RoundOptions } from '../round';
import { startStack, type ChaosStack } from '../stack';
import type { Supervisor } from '../supervisor';
import { GATEWAY_VIOLATION_KINDS } from './checks';
import { startGatewayDownstream } from './downstream';
import { drawGatewayPlan, gatewayRunsAlone } from './draw';
import { gatewayOperations, gatewayProvidersYaml, gatewayStackEnv } from './stack-config';
import { runGatewayTrial, type GatewayContext, type GatewayTrialRecord } from './trial';
import { gatewayTrialLine } from './trial-line';

/** @returns the exit code: 1 on any violation or a trial the suite could not finish. */
export async function runGatewayRound(supervisor: Supervisor, options: RoundOptions): Promise<number> {
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
    records = await runRoundTrials(options, { draw: drawGatewayPlan, alone: gatewayRunsAlone, run: (plan) => runGatewayTrial(ctx, plan, { settleMs: options.settleMs }), line: gatewayTrialLine });
  } finally {
    if (!options.interrupted()) await stack?.stop();
    await downstream.close();
  }
  if (options.interrupted()) return 130;
  return reportRound(options, 'gateway', records, Object.keys(GATEWAY_VIOLATION_KINDS), stack);
}
