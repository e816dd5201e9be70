import type { OnceflowConfig } from '../config';
import { OperationsFileError, type OperationProblem } from '../operations/problems';
import type { OperationRegistry } from '../operations/registry';
import { builtInProvidersYaml, checkRoutesPriced, createProviders, loadProvidersConfig, parseProvidersConfig, priceTableOf, routeFor } from './config';

/**
 * The providers and routes of ONCEFLOW_PROVIDERS_FILE, or the built-in file
 * that points at the simulators where config.simulators says they listen.
 * @throws OperationsFileError when an operation's route names a provider that
 * is not declared (and the providers file gives that operation no route of its own).
 * @throws ProvidersConfigError naming the file and the key that is wrong, or
 * the model a route uses that has no price.
 */
export async function loadProviders(config: OnceflowConfig, operations: OperationRegistry, env: NodeJS.ProcessEnv = process.env) {
  const providersConfig = config.providersFile ? await loadProvidersConfig(config.providersFile) : parseProvidersConfig(builtInProvidersYaml(config.simulators), 'built-in providers');
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

