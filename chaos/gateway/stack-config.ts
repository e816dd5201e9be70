/**
 * What the gateway round changes in the chaos stack: its operations file,
 * routes and prices for those operations (and for the canaries' steps), the
 * recording downstream's origin and a secret for the declared effect, a
 * daily token budget, and route changes that reach the next job at once.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { loadOperations } from '../../src/operations/load';
import type { RegisteredOperation } from '../../src/operations/operation';
import type { HttpEffectDeclaration } from '../../src/effects/http-declaration';
import { projectRoot } from '../../src/paths';
import { SIM_PRICES } from '../../src/providers/config';

export const GATEWAY_OPERATIONS_FILE = path.join(projectRoot, 'chaos', 'gateway', 'operations.yaml');

/** The round's operations; the canary ones are used by canary trials only. */
export const GW = {
  ticket: 'gw.ticket',
  lookup: 'gw.lookup',
  canaryTicket: 'gw.canary-ticket',
  canaryLookup: 'gw.canary-lookup',
  liarTwice: 'gw.liar-twice',
  liarUnfound: 'gw.liar-unfound',
  liarAnything: 'gw.liar-anything',
} as const;
export type GatewayOperation = (typeof GW)[keyof typeof GW];

export const GW_EFFECT = 'gw.comment';

/** Each liar's operation and its effect, by the lie (chaos/gateway/downstream.ts). */
export const GW_LIARS = {
  twice: { operation: GW.liarTwice, effect: 'gw.note-twice' },
  unfound: { operation: GW.liarUnfound, effect: 'gw.note-unfound' },
  anything: { operation: GW.liarAnything, effect: 'gw.note-anything' },
} as const;

/** The liars' effects: the ones whose every claim a drill found false. */
export const GW_LIAR_EFFECTS: readonly string[] = Object.values(GW_LIARS).map((liar) => liar.effect);

/**
 * Input plus output tokens a principal may use per UTC day. Every trial has
 * a principal of its own; only budget trials come near it (their messages
 * are long), a canary trial uses a fifth of it at most.
 */
export const GW_BUDGET_TOKENS = 20_000;

/** The operations and the declared effect as the product reads them (hedge policy, deadlines, method): one source for the suite and the stack. */
export function gatewayOperations(): { registry: ReadonlyMap<string, RegisteredOperation>; effect: HttpEffectDeclaration } {
  const loaded = loadOperations(GATEWAY_OPERATIONS_FILE);
  const effect = loaded.httpEffects.find((e) => e.name === GW_EFFECT);
  if (!effect) throw new Error(`${GATEWAY_OPERATIONS_FILE} declares no effect ${GW_EFFECT}`);
  return { registry: loaded.registry, effect };
}

const price = (p: { inputPerMillion: string; outputPerMillion: string; currency: string }): string =>
  `{ inputPerMillion: "${p.inputPerMillion}", outputPerMillion: "${p.outputPerMillion}", currency: ${p.currency} }`;

/**
 * The providers file: both simulators with a price for each model either may
 * serve (a canary may pair a provider with the other's model), and every
 * operation routed primary first, as the built-in route does.
 */
export function gatewayProvidersYaml(simulators: { primaryUrl: string; backupUrl: string }): string {
  const route = ['    - { provider: sim-primary, model: sim-small }', '    - { provider: sim-backup, model: sim-large }'].join('\n');
  const prices = `      sim-small: ${price(SIM_PRICES.small)}\n      sim-large: ${price(SIM_PRICES.large)}`;
  return `# The chaos gateway round's providers (chaos/gateway/stack-config.ts).
providers:
  sim-primary:
    kind: openai-compatible
    baseUrl: ${simulators.primaryUrl}
    lookup: true
    defaultModel: sim-small
    prices:
${prices}
  sim-backup:
    kind: openai-compatible
    baseUrl: ${simulators.backupUrl}
    lookup: true
    defaultModel: sim-large
    prices:
${prices}
routes:
${Object.values(GW).map((operation) => `  ${operation}:\n${route}`).join('\n')}
`;
}

export interface GatewayStackEnv {
  env: Record<string, string>;
  /** The value of the declared effect's secret header (Authorization: Bearer …). */
  secret: string;
}

/** The environment of the API, workers and verification for this round. */
export function gatewayStackEnv(downstreamUrl: string, liarUrl: string): GatewayStackEnv {
  const secret = `gw_secret_${randomBytes(12).toString('hex')}`;
  return {
    secret,
    env: {
      ONCEFLOW_OPERATIONS_FILE: GATEWAY_OPERATIONS_FILE,
      CHAOS_GW_DOWNSTREAM: downstreamUrl,
      CHAOS_GW_LIAR: liarUrl,
      CHAOS_GW_TOKEN: secret,
      ONCEFLOW_BUDGET_TOKENS_PER_DAY: String(GW_BUDGET_TOKENS),
      // An operator's change (and a canary's own stop) reaches the very next job: the checks can then be exact.
      ONCEFLOW_ROUTES_CACHE_MS: '0',
    },
  };
}
