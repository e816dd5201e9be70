import { createOpenAiCompatibleProvider } from '../providers/openai-compatible';
import type { ProviderAdapter } from '../providers/types';
import { SIM_PROVIDER_NAMES } from './stack';

/** Provider adapters for the two simulators (OpenAI-compatible, with the lookup). */
export function createSimProviders(urls: { primary: string; backup: string }): Map<string, ProviderAdapter> {
  return new Map([
    [SIM_PROVIDER_NAMES.primary, createOpenAiCompatibleProvider({ name: SIM_PROVIDER_NAMES.primary, baseUrl: urls.primary, lookup: true })],
    [SIM_PROVIDER_NAMES.backup, createOpenAiCompatibleProvider({ name: SIM_PROVIDER_NAMES.backup, baseUrl: urls.backup, lookup: true })],
  ]);
}

/** The simulators' route: primary first, then backup. */
export const SIM_ROUTE = [
  { provider: SIM_PROVIDER_NAMES.primary, model: 'sim-small' },
  { provider: SIM_PROVIDER_NAMES.backup, model: 'sim-large' },
];
