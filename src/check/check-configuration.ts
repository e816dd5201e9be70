/**
 * `onceflow check`, and what `npm start`, `npm run api` and `npm run worker`
 * run before they open anything: every problem of the operations file, the
 * providers file and the environment they are used with, found at once, each
 * `file:line:column: pointer: what is wrong`.
 */
import { ConfigError } from '../config-error';
import { loadConfig, type OnceflowConfig } from '../config';
import type { Queryable } from '../ledger/queryable';
import { DEMO_OPERATIONS_FILE, readOperations, type LoadedOperations, type OperationsInspection } from '../operations/load';
import { ENVIRONMENT, sortProblems, type OperationProblem } from '../operations/problems';
import { DEMO_PROVIDERS_FILE, locatedProblem, readProvidersConfig, resolveRoute, unpricedRouteSteps, unsetApiKeys, type ProvidersConfig, type RouteEntry } from '../providers/config';
import { BUILT_IN_PROVIDERS, providersEnv } from '../providers/load';
import { checkEffects } from './effects';
import { changedInputSchemas } from './operation-versions';

export interface CheckOptions {
  /** The environment the parts would run with: the files (ONCEFLOW_OPERATIONS_FILE, ONCEFLOW_PROVIDERS_FILE), every `${NAME}`, the keys. */
  env: NodeJS.ProcessEnv;
  /** Load TypeScript modules through tsx (npm start, onceflow check), or refuse them (npm run api, npm run worker). */
  typeScriptModules: boolean;
  /** The operations file, instead of the environment's. */
  operationsFile?: string;
  /** The providers file, instead of the environment's (or the built-in one). */
  providersFile?: string;
  /** A database to compare the input schemas with: a version that has jobs keeps its schema. Read only. */
  db?: Queryable;
}

export interface ConfigurationCheck {
  /** Every problem, in reading order: the operations file's, the providers file's, the environment's. */
  problems: OperationProblem[];
  /** One line: what was checked when nothing is wrong, else how many problems. */
  summary: string;
  /** The operations, ready to start with, when there is no problem. */
  operations?: LoadedOperations;
}

/**
 * Checks what the parts would start with, without starting or connecting to
 * anything (the database only when `db` is given, and only read): both files
 * against their schemas and for what a schema cannot say, the modules,
 * prompts and placeholders, every `${NAME}` and key variable, the effects
 * each operation names, the receipt fields its result takes, each route's
 * providers and prices.
 * @throws Error when `db` cannot be read.
 */
export async function checkConfiguration(options: CheckOptions): Promise<ConfigurationCheck> {
  const { env } = options;
  const problems: OperationProblem[] = [];
  let config: OnceflowConfig;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push({ file: ENVIRONMENT, pointer: '', problem: error.message });
    config = loadConfig({ ONCEFLOW_OPERATIONS_FILE: env.ONCEFLOW_OPERATIONS_FILE, ONCEFLOW_PROVIDERS_FILE: env.ONCEFLOW_PROVIDERS_FILE });
  }

  const operations = readOperations(options.operationsFile ?? config.operationsFile ?? DEMO_OPERATIONS_FILE, { typeScriptModules: options.typeScriptModules });
  problems.push(...operations.problems);
  const effects = checkEffects(operations, config.effects, env);
  problems.push(...effects.problems);

  const providersFile = options.providersFile ?? config.providersFile;
  const providers = await readProvidersConfig(providersFile ?? DEMO_PROVIDERS_FILE, providersEnv(config, env));
  problems.push(...providers.problems);
  if (providers.config) problems.push(...routeProblems(operations, providers.config, providersFile ?? BUILT_IN_PROVIDERS, env));

  if (options.db && operations.registry.size > 0) {
    for (const problem of await changedInputSchemas(options.db, operations.registry)) problems.push(located(operations, problem));
  }

  const sorted = sortProblems(problems);
  if (sorted.length > 0) return { problems: sorted, summary: `${sorted.length} problem${sorted.length === 1 ? '' : 's'}` };
  const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;
  const variables = new Set([...effects.variables, ...providers.variables]);
  const summary = [
    `ok: ${operations.file} (${[...operations.registry.keys()].join(', ')}; ${plural(operations.httpEffects.length, 'HTTP effect')})`,
    `, ${providersFile ?? BUILT_IN_PROVIDERS} (${[...providers.config!.providers.keys()].join(', ')}; every route model priced)`,
    `, ${plural(variables.size, 'environment variable')}`,
    `; input schemas ${options.db ? 'match the versions jobs were made with' : 'not compared with a database'}`,
  ].join('');
  return { problems: [], summary, operations: { file: operations.file, registry: operations.registry, httpEffects: operations.httpEffects } };
}

/**
 * What loadProviders finds at start, every time: each operation's providers
 * declared (unless the file routes it), a defaultModel for each step of a
 * default route, a price for every route model, and each key variable set.
 */
function routeProblems(operations: OperationsInspection, providers: ProvidersConfig, source: string, env: NodeJS.ProcessEnv): OperationProblem[] {
  const problems: OperationProblem[] = [];
  const routes = new Map<string, readonly RouteEntry[]>();
  for (const operation of operations.declared) {
    if (!providers.routes.has(operation.name)) {
      operation.defaultRoute.forEach((provider, index) => {
        if (providers.providers.has(provider)) return;
        const origin = operation.origin;
        problems.push(located(operations, { file: origin.file, pointer: `${origin.pointer}/route/${index}`, problem: `provider ${JSON.stringify(provider)} is not declared in ${source} (declared: ${[...providers.providers.keys()].join(', ')})` }));
      });
    }
    const resolved = resolveRoute(providers, operation.name, operation.defaultRoute);
    // An undeclared default provider is named above, at the operation's route.
    for (const problem of resolved.problems) if (problem.key.startsWith('providers.')) problems.push(locatedProblem(providers, problem));
    routes.set(operation.name, resolved.route);
  }
  for (const problem of unpricedRouteSteps(providers, routes)) problems.push(locatedProblem(providers, problem));
  for (const problem of unsetApiKeys(providers, env)) problems.push(locatedProblem(providers, problem));
  return problems;
}

/** The problem at its line and column, when it is in the operations file. */
function located(operations: OperationsInspection, problem: OperationProblem): OperationProblem {
  const position = problem.file === operations.file ? operations.locate(problem.pointer) : undefined;
  return position ? { ...problem, line: position.line, column: position.column } : problem;
}
