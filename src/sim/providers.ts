import { createOpenAiCompatibleProvider } from '../providers/openai-compatible';
import { SIM_PRICES, type ModelPrice, type PriceTable } from '../providers/config';
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

/** The simulators' prices, as the built-in providers file declares them. */
export const SIM_PRICE_TABLE: PriceTable = new Map<string, ReadonlyMap<string, ModelPrice>>([
  [SIM_PROVIDER_NAMES.primary, new Map([['sim-small', SIM_PRICES.small]])],
  [SIM_PROVIDER_NAMES.backup, new Map([['sim-large', SIM_PRICES.large]])],
]);
