/**
 * The provider configuration: which AI providers exist and, per operation, the
 * route of providers and models to try in failover order. Parsed and checked
 * once at boot against schemas/providers.schema.json and then for what a
 * schema cannot say; every problem names the file, line:column and the JSON
 * pointer, all at once.
 *
 * The file is YAML (JSON is valid YAML too):
 *
 * ```yaml
 * # yaml-language-server: $schema=../schemas/providers.schema.json
 * providers:                         # at least one; names: letters, digits, . _ -
 *   sim-primary:
 *     kind: openai-compatible        # or: anthropic
 *     baseUrl: ${ONCEFLOW_SIM_PRIMARY_URL}   # required for openai-compatible (with the /v1);
 *                                    # optional for anthropic (default https://api.anthropic.com);
 *                                    # ${NAME} parts are read from the environment at start
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
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Ajv from 'ajv';
import YAML, { LineCounter } from 'yaml';
import { resolveEnv } from '../effects/http-env';
import { escapeToken } from '../operations/declared';
import { formatProblem, sortProblems, yamlLocator, type Locator, type OperationProblem } from '../operations/problems';
import { addProblemKeyword, schemaProblems } from '../operations/schema-problems';
import { operationsDir, schemasDir } from '../paths';
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
  /** Where a pointer is in the file it came from. */
  readonly locate?: Locator;
}

/**
 * A provider configuration that cannot be used. A file's problems are each
 * `file:line:column: pointer: what is wrong`, all of them; a problem found
 * later (an unset key variable, a route without a price) names the file and
 * the key, `file: providers.NAME.KEY: what is wrong`.
 */
export class ProvidersConfigError extends Error {
  override readonly name = 'ProvidersConfigError';
  /** Every problem, each with its JSON pointer (and line:column when known). */
  readonly problems: readonly OperationProblem[];

  /** `problem`: one problem at `key`, or the problems of the file, one a line. */
  constructor(
    readonly source: string,
    readonly key: string | undefined,
    problem: string | readonly OperationProblem[],
    options?: { cause?: unknown; pointer?: string },
  ) {
    super(typeof problem !== 'string' ? problem.map(formatProblem).join('\n') : key === undefined ? `${source}: ${problem}` : `${source}: ${key}: ${problem}`, options);
    this.problems = typeof problem !== 'string' ? problem : [{ file: source, pointer: options?.pointer ?? '', problem }];
  }
}

/**
 * A problem of a providers configuration found after it was read: its place
 * as a JSON pointer (`text`: where inside the value), and as the dotted key
 * the thrown error names.
 */
export interface ProviderProblem {
  pointer: string;
  key: string;
  problem: string;
  text?: string;
}

/** This problem in the file, at its line and column when the configuration knows them. */
export function locatedProblem(config: ProvidersConfig, problem: ProviderProblem): OperationProblem {
  const position = config.locate?.(problem.pointer, problem.text);
  return { file: config.source, pointer: problem.pointer, problem: problem.problem, ...(position ? { line: position.line, column: position.column } : {}) };
}

const thrown = (config: ProvidersConfig, problem: ProviderProblem): ProvidersConfigError => new ProvidersConfigError(config.source, problem.key, problem.problem, { pointer: problem.pointer });

/** The JSON Schema every providers file is checked against. */
export const PROVIDERS_SCHEMA_FILE = path.join(schemasDir, 'providers.schema.json');

/**
 * The environment variables a providers file finds the simulators by:
 * `baseUrl: ${ONCEFLOW_SIM_PRIMARY_URL}`. Unset, each is where SIM_*_PORT
 * puts its simulator (config.simulators); `npm start` sets them to where it
 * started them.
 */
export const SIM_URL_ENV = { primary: 'ONCEFLOW_SIM_PRIMARY_URL', backup: 'ONCEFLOW_SIM_BACKUP_URL' } as const;

/** The simulators' URLs as the variables of SIM_URL_ENV, for an environment to set. */
export function simulatorUrlEnv(simulators: SimulatorUrls): Record<string, string> {
  return { [SIM_URL_ENV.primary]: simulators.primaryUrl, [SIM_URL_ENV.backup]: simulators.backupUrl };
}

/** The demo providers file: the two simulators, by SIM_URL_ENV. */
export const DEMO_PROVIDERS_FILE = path.join(operationsDir, 'demo-providers.yaml');

/** Where the two simulated providers answer: base URLs ending in `/v1`. */
export interface SimulatorUrls {
  readonly primaryUrl: string;
  readonly backupUrl: string;
}

/**
 * The dev stack's providers (operations/demo-providers.yaml): the two
 * simulators, wherever they listen (`npm start` passes the ports it started
 * them on; SIM_PRIMARY_PORT and SIM_BACKUP_PORT move them), and the demo
 * operation's route across them. The real providers are commented out so that
 * no key is ever needed to start.
 */
export function builtInProvidersYaml(simulators: SimulatorUrls): string {
  const urls = simulatorUrlEnv(simulators);
  return readFileSync(DEMO_PROVIDERS_FILE, 'utf8').replace(/^( +baseUrl: )\$\{(ONCEFLOW_SIM_[A-Z]+_URL)\}$/gm, (whole, key: string, name: string) => (urls[name] === undefined ? whole : `${key}${urls[name]}`));
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

const providersSchema = JSON.parse(readFileSync(PROVIDERS_SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
// allowUnionTypes: an empty `routes:` is null. strictRequired off: a kind's then-branch requires baseUrl, declared one level up. verbose: a problem reads its schema's x-problem.
const schemaAjv = new Ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true, verbose: true });
addProblemKeyword(schemaAjv);
const validateFile = schemaAjv.compile(providersSchema);

/** What reading a providers file found: every problem, and the configuration when the file fits its schema. */
export interface ProvidersInspection {
  /** Set when the file fits the schema, also when it has other problems (so that one run finds those of the routes too). */
  config?: ProvidersConfig;
  problems: OperationProblem[];
  /** The environment variables the file reads: its baseUrls' `${NAME}`s and its apiKeyEnv names. */
  variables: string[];
}

/** The file as the schema has it. */
interface ProvidersDocument {
  providers: Record<string, { kind: ProviderKind; baseUrl?: string; apiKeyEnv?: string; lookup?: boolean; defaultModel?: string; maxTokens?: number; prices?: Record<string, ModelPrice> }>;
  routes?: Record<string, RouteEntry[]> | null;
}

/**
 * Parses and validates a provider configuration. `${NAME}` parts of a
 * baseUrl are read from `env`.
 * @throws ProvidersConfigError naming every problem, with `source`, its line and column and the JSON pointer.
 */
export function parseProvidersConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env): ProvidersConfig {
  const { config, problems } = inspectProvidersConfig(text, source, env);
  if (!config || problems.length > 0) throw new ProvidersConfigError(source, undefined, sortProblems(problems));
  return config;
}

/** Checks a provider configuration as parseProvidersConfig does, returning its problems instead of throwing them. */
export function inspectProvidersConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env): ProvidersInspection {
  const problems: OperationProblem[] = [];
  const lines = new LineCounter();
  const document = YAML.parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const position = lines.linePos(error.pos[0]);
      problems.push({ file: source, pointer: '', problem: `invalid YAML: ${error.message.split('\n')[0]}`, line: position.line, column: position.col });
    }
    return { problems, variables: [] };
  }
  const locate = yamlLocator(document, lines, text);
  const report = (pointer: string, problem: string, within?: string): void => {
    const position = locate(pointer, within);
    problems.push({ file: source, pointer, problem, ...(position ? { line: position.line, column: position.column } : {}) });
  };
  const data: unknown = document.toJS();
  if (!validateFile(data)) {
    for (const error of schemaProblems(validateFile.errors ?? [])) report(error.pointer, error.problem);
    return { problems, variables: [] };
  }
  const file = data as ProvidersDocument;
  const variables = new Set<string>();

  const providers = new Map<string, ProviderSettings>();
  for (const [name, node] of Object.entries(file.providers)) {
    const at = `/providers/${escapeToken(name)}`;
    const settings: { -readonly [K in keyof ProviderSettings]: ProviderSettings[K] } = {
      name,
      kind: node.kind,
      lookup: node.lookup ?? false,
      prices: new Map(Object.entries(node.prices ?? {}).map(([model, price]) => [model, { inputPerMillion: price.inputPerMillion, outputPerMillion: price.outputPerMillion, currency: price.currency }])),
    };
    if (node.baseUrl !== undefined) {
      for (const name of unsetEnvReferences(node.baseUrl, {})) variables.add(name);
      settings.baseUrl = baseUrlOf(node.baseUrl, env, (problem, within) => report(`${at}/baseUrl`, problem, within));
    }
    if (node.apiKeyEnv !== undefined) {
      variables.add(node.apiKeyEnv);
      settings.apiKeyEnv = node.apiKeyEnv;
    }
    if (node.defaultModel !== undefined) settings.defaultModel = node.defaultModel;
    if (node.maxTokens !== undefined) settings.maxTokens = node.maxTokens;
    providers.set(name, settings);
  }
  // One currency per file, so a settlement never adds two currencies together.
  let first: { currency: string; at: string } | undefined;
  for (const settings of providers.values()) {
    for (const [model, price] of settings.prices) {
      const at = `/providers/${escapeToken(settings.name)}/prices/${escapeToken(model)}/currency`;
      if (!first) first = { currency: price.currency, at };
      else if (price.currency !== first.currency) report(at, `is ${price.currency}, but ${first.at} is ${first.currency}: one providers file prices in one currency`);
    }
  }

  const routes = new Map<string, readonly RouteEntry[]>();
  for (const [operation, entries] of Object.entries(file.routes ?? {})) {
    const at = `/routes/${escapeToken(operation)}`;
    const seen = new Set<string>();
    entries.forEach(({ provider, model }, index) => {
      if (!providers.has(provider)) report(`${at}/${index}/provider`, `names '${provider}', which is not declared under providers`);
      const pair = JSON.stringify([provider, model]);
      if (seen.has(pair)) report(`${at}/${index}`, `repeats ${provider} with ${model}`);
      seen.add(pair);
    });
    routes.set(operation, entries.map(({ provider, model }) => ({ provider, model })));
  }
  return { config: { source, providers, routes, locate }, problems, variables: [...variables] };
}

/**
 * A baseUrl with its `${NAME}` parts read from `env` (each unset one reported
 * where it stands), checked as an http(s) URL. A message shows the file's
 * text, never a value from the environment.
 */
function baseUrlOf(template: string, env: NodeJS.ProcessEnv, report: (problem: string, within?: string) => void): string {
  const unset = unsetEnvReferences(template, env);
  for (const name of unset) report(`environment variable ${name} is not set`, `\${${name}}`);
  if (unset.length > 0) return template;
  const value = resolveEnv(template, env, (name) => new Error(`${name} is not set`)).text;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    report(value === template ? `must be an http(s) URL, not ${JSON.stringify(template)}` : `must be an http(s) URL: ${JSON.stringify(template)} is not one with its variables set`);
  }
  return value;
}

/**
 * The `${NAME}`s of `text` that `env` leaves unset or empty, in order: read
 * by resolveEnv itself, so that what is checked is what start resolves (the
 * same grammar as declared effects' URLs and headers).
 */
export function unsetEnvReferences(text: string, env: NodeJS.ProcessEnv): string[] {
  const unset: string[] = [];
  const recording = new Proxy(env, {
    get(target, name) {
      const value = target[name as string];
      if (value !== undefined && value !== '') return value;
      unset.push(String(name));
      return 'unset';
    },
  });
  resolveEnv(text, recording, (name) => new Error(`${name} is not set`));
  return unset;
}

/** What a providers file (YAML or JSON) holds, or why it cannot be read. */
export async function readProvidersConfig(file: string, env: NodeJS.ProcessEnv = process.env): Promise<ProvidersInspection> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { problems: [{ file, pointer: '', problem: `cannot read the file (${code ?? String(error)})` }], variables: [] };
  }
  return inspectProvidersConfig(text, file, env);
}

/**
 * Reads and parses a provider configuration file (YAML or JSON).
 * @throws ProvidersConfigError when the file cannot be read or is invalid.
 */
export async function loadProvidersConfig(file: string, env: NodeJS.ProcessEnv = process.env): Promise<ProvidersConfig> {
  const { config, problems } = await readProvidersConfig(file, env);
  if (!config || problems.length > 0) throw new ProvidersConfigError(file, undefined, sortProblems(problems));
  return config;
}

/** Each provider whose `apiKeyEnv` variable `env` leaves unset or empty. */
export function unsetApiKeys(config: ProvidersConfig, env: Readonly<Record<string, string | undefined>>): ProviderProblem[] {
  return [...config.providers.values()]
    .filter((settings) => settings.apiKeyEnv !== undefined && (env[settings.apiKeyEnv] ?? '') === '')
    .map((settings) => ({
      pointer: `/providers/${escapeToken(settings.name)}/apiKeyEnv`,
      key: `providers.${settings.name}.apiKeyEnv`,
      problem: `environment variable ${settings.apiKeyEnv} is not set`,
      text: settings.apiKeyEnv,
    }));
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
  const [unset] = unsetApiKeys(config, env);
  if (unset) throw thrown(config, unset);
  return new Map([...config.providers.values()].map((settings) => [settings.name, createAdapter(settings, settings.apiKeyEnv === undefined ? undefined : env[settings.apiKeyEnv])]));
}

/**
 * The route of `operation` as routeFor resolves it, or every reason it has none:
 * the configured one, else `fallbackDefault` each with its provider's defaultModel.
 */
export function resolveRoute(config: ProvidersConfig, operation: string, fallbackDefault: readonly string[]): { route: RouteEntry[]; problems: ProviderProblem[] } {
  const configured = config.routes.get(operation);
  if (configured !== undefined) return { route: configured.map((entry) => ({ ...entry })), problems: [] };
  const key = `routes.${operation}`;
  const pointer = `/routes/${escapeToken(operation)}`;
  if (fallbackDefault.length === 0) return { route: [], problems: [{ pointer, key, problem: 'no route configured and no default route' }] };
  const route: RouteEntry[] = [];
  const problems: ProviderProblem[] = [];
  for (const provider of fallbackDefault) {
    const settings = config.providers.get(provider);
    if (settings === undefined) {
      problems.push({ pointer, key, problem: `no route configured, and the default provider '${provider}' is not declared` });
    } else if (settings.defaultModel === undefined) {
      problems.push({ pointer: `/providers/${escapeToken(provider)}/defaultModel`, key: `providers.${provider}.defaultModel`, problem: `is needed by the default route of ${operation} (or configure routes.${operation})` });
    } else {
      route.push({ provider, model: settings.defaultModel });
    }
  }
  return { route, problems };
}

/**
 * The route of `operation`: the configured one, else `fallbackDefault` (the
 * operation's built-in provider names) each with its provider's `defaultModel`.
 * @throws ProvidersConfigError when a default provider is undeclared or has no
 * defaultModel, or when the operation ends up with no route at all.
 */
export function routeFor(config: ProvidersConfig, operation: string, fallbackDefault: readonly string[]): RouteEntry[] {
  const { route, problems } = resolveRoute(config, operation, fallbackDefault);
  if (problems[0]) throw thrown(config, problems[0]);
  return route;
}

/** Prices by provider and model, as the configuration declares them. */
export function priceTableOf(config: ProvidersConfig): PriceTable {
  return new Map([...config.providers.values()].map((settings) => [settings.name, settings.prices]));
}

/** Each step of these routes whose model its provider has no price for. */
export function unpricedRouteSteps(config: ProvidersConfig, routes: ReadonlyMap<string, readonly RouteEntry[]>): ProviderProblem[] {
  const problems: ProviderProblem[] = [];
  for (const [operation, route] of routes) {
    for (const { provider, model } of route) {
      if (config.providers.get(provider)?.prices.has(model)) continue;
      problems.push({ pointer: `/providers/${escapeToken(provider)}/prices`, key: `providers.${provider}.prices`, problem: `has no price for model ${model}, which the route of ${operation} uses` });
    }
  }
  return problems;
}

/**
 * Every model a route uses has a price: a job must never run up a bill
 * nobody can compute.
 * @throws ProvidersConfigError naming the provider's prices and the model.
 */
export function checkRoutesPriced(config: ProvidersConfig, routes: ReadonlyMap<string, readonly RouteEntry[]>): void {
  const [unpriced] = unpricedRouteSteps(config, routes);
  if (unpriced) throw thrown(config, unpriced);
}

function createAdapter(settings: ProviderSettings, apiKey: string | undefined): ProviderAdapter {
  switch (settings.kind) {
    case PROVIDER_KINDS.openaiCompatible:
      return createOpenAiCompatibleProvider({
        name: settings.name,
        // The schema requires it for this kind.
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
