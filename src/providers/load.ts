import type { OnceflowConfig } from '../config';
import { OperationsFileError, type OperationProblem } from '../operations/problems';
import type { OperationRegistry } from '../operations/registry';
import { checkRoutesPriced, createProviders, DEMO_PROVIDERS_FILE, loadProvidersConfig, priceTableOf, routeFor, simulatorUrlEnv } from './config';

/** What a providers file's `${NAME}`s are read from: `env`, and where config.simulators says the simulators listen for SIM_URL_ENV's names it leaves unset. */
export function providersEnv(config: Pick<OnceflowConfig, 'simulators'>, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const simulators = Object.entries(simulatorUrlEnv(config.simulators)).filter(([name]) => !env[name]);
  return { ...env, ...Object.fromEntries(simulators) };
}

/** The source the built-in providers' problems name (a problem there is Onceflow's, not the deployment's file). */
export const BUILT_IN_PROVIDERS = 'built-in providers';

/**
 * The providers and routes of ONCEFLOW_PROVIDERS_FILE, or the built-in file
 * (operations/demo-providers.yaml) that points at the simulators where
 * config.simulators says they listen. `${NAME}` parts of a baseUrl and the
 * apiKeyEnv variables are read from `env`.
 * @throws OperationsFileError when an operation's route names a provider that
 * is not declared (and the providers file gives that operation no route of its own).
 * @throws ProvidersConfigError naming the file and the key that is wrong, or
 * the model a route uses that has no price.
 */
export async function loadProviders(config: OnceflowConfig, operations: OperationRegistry, env: NodeJS.ProcessEnv = process.env) {
  const providersConfig = config.providersFile ? await loadProvidersConfig(config.providersFile, providersEnv(config, env)) : { ...(await loadProvidersConfig(DEMO_PROVIDERS_FILE, providersEnv(config, env))), source: BUILT_IN_PROVIDERS };
  const unknown: OperationProblem[] = [];
  for (const operation of operations.values()) {
    if (providersConfig.routes.has(operation.name)) continue;
    operation.defaultRoute.forEach((provider, index) => {
      if (providersConfig.providers.has(provider)) return;
      const origin = operation.origin ?? { file: `operation ${operation.name}`, pointer: '' };
      unknown.push({ file: origin.file, pointer: `${origin.pointer}/route/${index}`, problem: `provider ${JSON.stringify(provider)} is not declared in ${providersConfig.source} (declared: ${[...providersConfig.providers.keys()].join(', ')})` });
    });
  }
  if (unknown.length > 0) throw new OperationsFileError(unknown);
  const providers = createProviders(providersConfig, env);
  // Resolved once at boot, so a bad route fails the start, not a job.
  const routes = new Map([...operations.values()].map((operation) => [operation.name, routeFor(providersConfig, operation.name, operation.defaultRoute)]));
  checkRoutesPriced(providersConfig, routes);
  return { providers, prices: priceTableOf(providersConfig), routeFor: (operation: string) => routes.get(operation) ?? [] };
}

