import type { OnceflowConfig } from '../config';
import type { OperationRegistry } from '../operations/registry';
import { builtInProvidersYaml, createProviders, loadProvidersConfig, parseProvidersConfig, routeFor } from './config';

/**
 * The providers and routes of ONCEFLOW_PROVIDERS_FILE, or the built-in file
 * that points at the simulators where config.simulators says they listen.
 * @throws ProvidersConfigError naming the file and the key that is wrong.
 */
export async function loadProviders(config: OnceflowConfig, operations: OperationRegistry, env: NodeJS.ProcessEnv = process.env) {
  const providersConfig = config.providersFile ? await loadProvidersConfig(config.providersFile) : parseProvidersConfig(builtInProvidersYaml(config.simulators), 'built-in providers');
  const providers = createProviders(providersConfig, env);
  // Resolved once at boot, so a bad route fails the start, not a job.
  const routes = new Map([...operations.values()].map((operation) => [operation.name, routeFor(providersConfig, operation.name, operation.defaultRoute)]));
  return { providers, routeFor: (operation: string) => routes.get(operation) ?? [] };
}

