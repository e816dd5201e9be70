/**
 * The provider configuration: which AI providers exist and, per operation, the
 * route of providers and models to try in failover order. Parsed and checked
 * once at boot; a mistake stops the boot with a one-line message naming the
 * file and the key.
 *
 * The file is YAML (JSON is valid YAML too):
 *
 * ```yaml
 * providers:                         # at least one; names: letters, digits, . _ -
 *   sim-primary:
 *     kind: openai-compatible        # or: anthropic
 *     baseUrl: http://127.0.0.1:7301/v1   # required for openai-compatible (with the /v1);
 *                                    # optional for anthropic (default https://api.anthropic.com)
 *     apiKeyEnv: SIM_API_KEY         # optional: the NAME of the environment variable holding
 *                                    # the key; the key itself never goes in this file
 *     lookup: true                   # optional, openai-compatible only: the server answers
 *                                    # GET {baseUrl}/requests/{requestId} (the simulator does)
 *     defaultModel: sim-small        # optional: the model used when an operation has no
 *                                    # route here and falls back to its built-in provider list
 *     maxTokens: 1024                # optional, anthropic only: default max_tokens
 *     prices:                        # per model, per million tokens, as decimal strings;
 *       sim-small: { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: USD }
 *                                    # every model a route uses needs one; one currency per file
 * routes:                            # optional; per operation, in failover order
 *   support.reply:
 *     - { provider: sim-primary, model: sim-small }
 *     - { provider: sim-backup, model: sim-large }
 * ```
 *
 * Unknown keys are errors (a typo must not silently drop a setting). A provider
 * whose `apiKeyEnv` variable is unset fails `createProviders`, even if no route
 * uses it: comment out what you do not use.
 */
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import { createAnthropicProvider } from './anthropic';
import { createOpenAiCompatibleProvider } from './openai-compatible';
import type { ProviderAdapter } from './types';

/** The provider kinds an adapter exists for. */
export const PROVIDER_KINDS = {
  openaiCompatible: 'openai-compatible',
  anthropic: 'anthropic',
} as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[keyof typeof PROVIDER_KINDS];

/** One declared provider, validated. */
export interface ProviderSettings {
  readonly name: string;
  readonly kind: ProviderKind;
  readonly baseUrl?: string;
  readonly apiKeyEnv?: string;
  readonly lookup: boolean;
  readonly defaultModel?: string;
  readonly maxTokens?: number;
  /** Per model: what a million tokens cost. */
  readonly prices: ReadonlyMap<string, ModelPrice>;
}

/**
 * A model's price per million tokens. Amounts stay decimal strings from the
 * file to the database, where cost is computed as numeric: money is never a float.
 */
export interface ModelPrice {
  readonly inputPerMillion: string;
  readonly outputPerMillion: string;
  /** ISO 4217, e.g. USD. */
  readonly currency: string;
}

/** Prices by provider, then model. */
export type PriceTable = ReadonlyMap<string, ReadonlyMap<string, ModelPrice>>;

/** One step of a route: which provider, with which model. */
export interface RouteEntry {
  readonly provider: string;
  readonly model: string;
}

/** The whole file, validated. Maps keep operation names like `constructor` harmless. */
export interface ProvidersConfig {
  /** Where it came from, for error messages. */
  readonly source: string;
  readonly providers: ReadonlyMap<string, ProviderSettings>;
  readonly routes: ReadonlyMap<string, readonly RouteEntry[]>;
}

/** A provider configuration that cannot be used; the message names the file and, where there is one, the key. */
export class ProvidersConfigError extends Error {
  override readonly name = 'ProvidersConfigError';

  constructor(
    readonly source: string,
    readonly key: string | undefined,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(key === undefined ? `${source}: ${problem}` : `${source}: ${key}: ${problem}`, options);
  }
}

/** Where the two simulated providers answer: base URLs ending in `/v1`. */
export interface SimulatorUrls {
  readonly primaryUrl: string;
  readonly backupUrl: string;
}

/**
 * The dev stack's providers: the two simulators, wherever they listen
 * (`npm start` passes the ports it started them on; SIM_PRIMARY_PORT and
 * SIM_BACKUP_PORT move them), and the demo operation's route across them. The
 * real providers are commented out so that no key is ever needed to start.
 */
export function builtInProvidersYaml(simulators: SimulatorUrls): string {
  return `# Onceflow providers. See the top of src/providers/config.ts for the format.
providers:
  sim-primary:
    kind: openai-compatible
    baseUrl: ${simulators.primaryUrl}
    lookup: true
    defaultModel: sim-small
    prices:
      sim-small: { inputPerMillion: "${SIM_PRICES.small.inputPerMillion}", outputPerMillion: "${SIM_PRICES.small.outputPerMillion}", currency: ${SIM_PRICES.small.currency} }
  sim-backup:
    kind: openai-compatible
    baseUrl: ${simulators.backupUrl}
    lookup: true
    defaultModel: sim-large
    prices:
      sim-large: { inputPerMillion: "${SIM_PRICES.large.inputPerMillion}", outputPerMillion: "${SIM_PRICES.large.outputPerMillion}", currency: ${SIM_PRICES.large.currency} }

  # OpenAI (export OPENAI_API_KEY=...):
  # openai:
  #   kind: openai-compatible
  #   baseUrl: https://api.openai.com/v1
  #   apiKeyEnv: OPENAI_API_KEY
  #   defaultModel: gpt-4o-mini
  #   prices:
  #     gpt-4o-mini: { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: USD }

  # A local OpenAI-compatible server, no key: vLLM (vllm serve ...) or Ollama.
  # local:
  #   kind: openai-compatible
  #   baseUrl: http://127.0.0.1:8000/v1      # Ollama: http://127.0.0.1:11434/v1
  #   defaultModel: Qwen/Qwen2.5-7B-Instruct  # Ollama: e.g. llama3.1

  # Anthropic (export ANTHROPIC_API_KEY=...):
  # anthropic:
  #   kind: anthropic
  #   apiKeyEnv: ANTHROPIC_API_KEY
  #   defaultModel: claude-sonnet-4-5
  #   maxTokens: 1024
  #   prices:
  #     claude-sonnet-4-5: { inputPerMillion: "3", outputPerMillion: "15", currency: USD }

routes:
  support.reply:
    - { provider: sim-primary, model: sim-small }
    - { provider: sim-backup, model: sim-large }
`;
}

/**
 * What the simulators charge: made-up prices, so that metering shows real
 * numbers on the dev stack. The backup model costs more, as fallbacks often do.
 */
export const SIM_PRICES = {
  small: { inputPerMillion: '0.15', outputPerMillion: '0.60', currency: 'USD' },
  large: { inputPerMillion: '2.50', outputPerMillion: '10.00', currency: 'USD' },
} as const satisfies Record<string, ModelPrice>;

/** The built-in providers with the simulators on their default ports (7301, 7302). */
export const DEFAULT_PROVIDERS_YAML = builtInProvidersYaml({ primaryUrl: 'http://127.0.0.1:7301/v1', backupUrl: 'http://127.0.0.1:7302/v1' });

const TOP_LEVEL_KEYS = ['providers', 'routes'] as const;
const PROVIDER_KEYS = ['kind', 'baseUrl', 'apiKeyEnv', 'lookup', 'defaultModel', 'maxTokens', 'prices'] as const;
const PRICE_KEYS = ['inputPerMillion', 'outputPerMillion', 'currency'] as const;
/** A non-negative decimal as a string: "0.15", "3", "10.00". */
const DECIMAL = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,12})?$/;
const CURRENCY = /^[A-Z]{3}$/;
const ROUTE_ENTRY_KEYS = ['provider', 'model'] as const;
const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parses and validates a provider configuration.
 * @throws ProvidersConfigError naming `source` and the offending key.
 */
export function parseProvidersConfig(text: string, source: string): ProvidersConfig {
  const fail = (key: string | undefined, problem: string, cause?: unknown): never => {
    throw new ProvidersConfigError(source, key, problem, cause === undefined ? undefined : { cause });
  };

  let document: unknown;
  try {
    document = YAML.parse(text, { uniqueKeys: true });
  } catch (error) {
    const where = error instanceof YAML.YAMLError && error.linePos ? `line ${error.linePos[0].line}, column ${error.linePos[0].col}` : undefined;
    const message = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
    return fail(where, `invalid YAML: ${message}`, error);
  }
  if (!isMapping(document)) return fail(undefined, "must be a mapping with 'providers' (and optionally 'routes')");
  rejectUnknownKeys(document, TOP_LEVEL_KEYS, undefined, fail);

  const providersNode = document.providers;
  if (providersNode === undefined || providersNode === null) return fail('providers', 'is required');
  if (!isMapping(providersNode)) return fail('providers', 'must be a mapping of provider names to settings');
  const providers = new Map<string, ProviderSettings>();
  for (const [name, node] of Object.entries(providersNode)) {
    providers.set(name, parseProvider(name, node, fail));
  }
  if (providers.size === 0) return fail('providers', 'declares no provider');
  checkOneCurrency(providers, fail);

  const routes = new Map<string, readonly RouteEntry[]>();
  const routesNode = document.routes;
  if (routesNode !== undefined && routesNode !== null) {
    if (!isMapping(routesNode)) return fail('routes', 'must be a mapping of operation names to lists of { provider, model }');
    for (const [operation, node] of Object.entries(routesNode)) {
      routes.set(operation, parseRoute(operation, node, providers, fail));
    }
  }
  return { source, providers, routes };
}

/**
 * Reads and parses a provider configuration file (YAML or JSON).
 * @throws ProvidersConfigError when the file cannot be read or is invalid.
 */
export async function loadProvidersConfig(file: string): Promise<ProvidersConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ProvidersConfigError(file, undefined, `cannot read the file (${code ?? String(error)})`, { cause: error });
  }
  return parseProvidersConfig(text, file);
}

/**
 * Builds one adapter per declared provider, reading API keys from `env` by the
 * names the configuration gives.
 * @throws ProvidersConfigError naming the environment variable when an `apiKeyEnv` is unset or empty.
 */
export function createProviders(
  config: ProvidersConfig,
  env: Readonly<Record<string, string | undefined>>,
): Map<string, ProviderAdapter> {
  const adapters = new Map<string, ProviderAdapter>();
  for (const settings of config.providers.values()) {
    let apiKey: string | undefined;
    if (settings.apiKeyEnv !== undefined) {
      apiKey = env[settings.apiKeyEnv];
      if (apiKey === undefined || apiKey === '') {
        throw new ProvidersConfigError(
          config.source,
          `providers.${settings.name}.apiKeyEnv`,
          `environment variable ${settings.apiKeyEnv} is not set`,
        );
      }
    }
    adapters.set(settings.name, createAdapter(settings, apiKey));
  }
  return adapters;
}

/**
 * The route of `operation`: the configured one, else `fallbackDefault` (the
 * operation's built-in provider names) each with its provider's `defaultModel`.
 * @throws ProvidersConfigError when a default provider is undeclared or has no
 * defaultModel, or when the operation ends up with no route at all.
 */
export function routeFor(config: ProvidersConfig, operation: string, fallbackDefault: readonly string[]): RouteEntry[] {
  const configured = config.routes.get(operation);
  if (configured !== undefined) return configured.map((entry) => ({ ...entry }));
  if (fallbackDefault.length === 0) {
    throw new ProvidersConfigError(config.source, `routes.${operation}`, 'no route configured and no default route');
  }
  return fallbackDefault.map((provider) => {
    const settings = config.providers.get(provider);
    if (settings === undefined) {
      throw new ProvidersConfigError(
        config.source,
        `routes.${operation}`,
        `no route configured, and the default provider '${provider}' is not declared`,
      );
    }
    if (settings.defaultModel === undefined) {
      throw new ProvidersConfigError(
        config.source,
        `providers.${provider}.defaultModel`,
        `is needed by the default route of ${operation} (or configure routes.${operation})`,
      );
    }
    return { provider, model: settings.defaultModel };
  });
}

/** Prices by provider and model, as the configuration declares them. */
export function priceTableOf(config: ProvidersConfig): PriceTable {
  return new Map([...config.providers.values()].map((settings) => [settings.name, settings.prices]));
}

/**
 * Every model a route uses has a price: a job must never run up a bill
 * nobody can compute.
 * @throws ProvidersConfigError naming the provider's prices and the model.
 */
export function checkRoutesPriced(config: ProvidersConfig, routes: ReadonlyMap<string, readonly RouteEntry[]>): void {
  for (const [operation, route] of routes) {
    for (const { provider, model } of route) {
      if (config.providers.get(provider)?.prices.has(model)) continue;
      throw new ProvidersConfigError(config.source, `providers.${provider}.prices`, `has no price for model ${model}, which the route of ${operation} uses`);
    }
  }
}

type Fail = (key: string | undefined, problem: string, cause?: unknown) => never;

/** One currency per file, so a settlement never adds two currencies together. */
function checkOneCurrency(providers: ReadonlyMap<string, ProviderSettings>, fail: Fail): void {
  let first: { currency: string; at: string } | undefined;
  for (const settings of providers.values()) {
    for (const [model, price] of settings.prices) {
      const at = `providers.${settings.name}.prices.${model}.currency`;
      if (!first) first = { currency: price.currency, at };
      else if (price.currency !== first.currency) fail(at, `is ${price.currency}, but ${first.at} is ${first.currency}: one providers file prices in one currency`);
    }
  }
}

function parsePrices(node: unknown, at: string, fail: Fail): Map<string, ModelPrice> {
  if (!isMapping(node)) return fail(at, 'must be a mapping of model names to { inputPerMillion, outputPerMillion, currency }');
  const prices = new Map<string, ModelPrice>();
  for (const [model, priceNode] of Object.entries(node)) {
    const priceAt = `${at}.${model}`;
    if (!isMapping(priceNode)) return fail(priceAt, 'must be a mapping { inputPerMillion, outputPerMillion, currency }');
    rejectUnknownKeys(priceNode, PRICE_KEYS, priceAt, fail);
    const amount = (key: 'inputPerMillion' | 'outputPerMillion'): string => {
      const value = priceNode[key];
      if (typeof value !== 'string' || !DECIMAL.test(value)) return fail(`${priceAt}.${key}`, 'must be a decimal in quotes, e.g. "0.15" (money is never read as a floating-point number)');
      return value;
    };
    const currency = priceNode.currency;
    if (typeof currency !== 'string' || !CURRENCY.test(currency)) return fail(`${priceAt}.currency`, 'must be an ISO 4217 code, e.g. USD');
    prices.set(model, { inputPerMillion: amount('inputPerMillion'), outputPerMillion: amount('outputPerMillion'), currency });
  }
  return prices;
}

function createAdapter(settings: ProviderSettings, apiKey: string | undefined): ProviderAdapter {
  switch (settings.kind) {
    case PROVIDER_KINDS.openaiCompatible:
      return createOpenAiCompatibleProvider({
        name: settings.name,
        // parseProvider requires it for this kind.
        baseUrl: settings.baseUrl ?? '',
        ...(apiKey === undefined ? {} : { apiKey }),
        lookup: settings.lookup,
      });
    case PROVIDER_KINDS.anthropic:
      return createAnthropicProvider({
        name: settings.name,
        ...(apiKey === undefined ? {} : { apiKey }),
        ...(settings.baseUrl === undefined ? {} : { baseUrl: settings.baseUrl }),
        ...(settings.maxTokens === undefined ? {} : { maxTokens: settings.maxTokens }),
      });
  }
}

function parseProvider(name: string, node: unknown, fail: Fail): ProviderSettings {
  const at = `providers.${name}`;
  if (!PROVIDER_NAME.test(name)) return fail(at, 'a provider name may hold only letters, digits, ".", "_" and "-"');
  if (!isMapping(node)) return fail(at, 'must be a mapping with at least kind');
  if ('apiKey' in node) {
    return fail(`${at}.apiKey`, 'keys never go in this file: put the key in an environment variable and name it in apiKeyEnv');
  }
  rejectUnknownKeys(node, PROVIDER_KEYS, at, fail);

  const kinds = Object.values(PROVIDER_KINDS);
  const kind = node.kind;
  if (kind === undefined) return fail(`${at}.kind`, `is required (one of ${kinds.join(', ')})`);
  if (!kinds.includes(kind as ProviderKind)) {
    return fail(`${at}.kind`, `must be one of ${kinds.join(', ')}, not ${JSON.stringify(kind)}`);
  }
  const settings: { -readonly [K in keyof ProviderSettings]: ProviderSettings[K] } = {
    name,
    kind: kind as ProviderKind,
    lookup: false,
    prices: node.prices === undefined ? new Map() : parsePrices(node.prices, `${at}.prices`, fail),
  };

  if (node.baseUrl === undefined) {
    if (kind === PROVIDER_KINDS.openaiCompatible) return fail(`${at}.baseUrl`, `is required for kind ${kind}`);
  } else {
    settings.baseUrl = httpUrl(node.baseUrl, `${at}.baseUrl`, fail);
  }
  if (node.apiKeyEnv !== undefined) {
    if (typeof node.apiKeyEnv !== 'string' || !ENV_VAR_NAME.test(node.apiKeyEnv)) {
      return fail(`${at}.apiKeyEnv`, 'must be the name of an environment variable, e.g. OPENAI_API_KEY');
    }
    settings.apiKeyEnv = node.apiKeyEnv;
  }
  if (node.lookup !== undefined) {
    if (typeof node.lookup !== 'boolean') return fail(`${at}.lookup`, 'must be true or false');
    if (node.lookup && kind !== PROVIDER_KINDS.openaiCompatible) {
      return fail(`${at}.lookup`, `is not supported for kind ${kind}`);
    }
    settings.lookup = node.lookup;
  }
  if (node.defaultModel !== undefined) settings.defaultModel = nonEmptyString(node.defaultModel, `${at}.defaultModel`, fail);
  if (node.maxTokens !== undefined) {
    if (kind !== PROVIDER_KINDS.anthropic) return fail(`${at}.maxTokens`, `is only used by kind ${PROVIDER_KINDS.anthropic}`);
    if (typeof node.maxTokens !== 'number' || !Number.isInteger(node.maxTokens) || node.maxTokens < 1) {
      return fail(`${at}.maxTokens`, 'must be a positive whole number');
    }
    settings.maxTokens = node.maxTokens;
  }
  return settings;
}

function parseRoute(
  operation: string,
  node: unknown,
  providers: ReadonlyMap<string, ProviderSettings>,
  fail: Fail,
): RouteEntry[] {
  const at = `routes.${operation}`;
  if (!Array.isArray(node) || node.length === 0) {
    return fail(at, 'must be a non-empty list of { provider, model }, in failover order');
  }
  const seen = new Set<string>();
  return node.map((entryNode: unknown, index) => {
    const entryAt = `${at}[${index}]`;
    if (!isMapping(entryNode)) return fail(entryAt, 'must be a mapping { provider, model }');
    rejectUnknownKeys(entryNode, ROUTE_ENTRY_KEYS, entryAt, fail);
    const provider = nonEmptyString(entryNode.provider, `${entryAt}.provider`, fail);
    if (!providers.has(provider)) {
      return fail(`${entryAt}.provider`, `names '${provider}', which is not declared under providers`);
    }
    const model = nonEmptyString(entryNode.model, `${entryAt}.model`, fail);
    const pair = JSON.stringify([provider, model]);
    if (seen.has(pair)) return fail(entryAt, `repeats ${provider} with ${model}`);
    seen.add(pair);
    return { provider, model };
  });
}

function rejectUnknownKeys(
  node: Record<string, unknown>,
  known: readonly string[],
  at: string | undefined,
  fail: Fail,
): void {
  for (const key of Object.keys(node)) {
    if (!known.includes(key)) {
      fail(at === undefined ? key : `${at}.${key}`, `is not a known key (known: ${known.join(', ')})`);
    }
  }
}

function nonEmptyString(value: unknown, key: string, fail: Fail): string {
  if (typeof value !== 'string' || value.trim() === '') return fail(key, 'must be a non-empty string');
  return value;
}

function httpUrl(value: unknown, key: string, fail: Fail): string {
  if (typeof value !== 'string') return fail(key, 'must be an http(s) URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail(key, `must be an http(s) URL, not ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return fail(key, `must be an http(s) URL, not ${JSON.stringify(value)}`);
  }
  return value;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
