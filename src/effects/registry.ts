import type { Pool } from 'pg';
import type { OnceflowConfig } from '../config';
import type { HttpEffectDeclaration } from './http-declaration';
import { createHttpEffect, HttpEffectDeclarationError } from './http-effect';
import { createMessageSend } from './message-send';
import { createRecordWrite } from './record-write';
import type { EffectAdapter } from './types';
import { createWebhook } from './webhook';

/** The effects Onceflow ships: their names are taken, whether or not this deployment configures them. */
export const BUILT_IN_EFFECTS = ['message.send', 'record.write', 'webhook.notify'] as const;

export interface EffectRegistryParts {
  config: OnceflowConfig['effects'];
  db: Pool;
  /** Downstreams declared in the operations file (its `effects:` section). */
  declared?: readonly HttpEffectDeclaration[];
  /** Where declared `${ENV}` parts are read from; process.env by default. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The effect adapters this deployment has, by effect name: the built-ins and
 * the declared HTTP downstreams. A declared effect without its own timeoutMs
 * gets the deployment's call budget (ONCEFLOW_EFFECT_CALL_TIMEOUT_MS).
 * @throws HttpEffectDeclarationError when a declared effect is unusable, takes
 * a built-in's name or another declared one's, or would outlast the effect
 * lease with its timeout.
 */
export function createEffectRegistry(parts: EffectRegistryParts): Map<string, EffectAdapter> {
  const { config, db } = parts;
  const adapters = new Map<string, EffectAdapter>();
  const builtIns: EffectAdapter[] = [
    createMessageSend({ baseUrl: config.messagesUrl, deduplicates: config.messagesDeduplicate, timeoutMs: config.callTimeoutMs }),
    createRecordWrite(db),
    ...(config.webhookUrl
      ? [createWebhook({ name: 'webhook.notify', url: config.webhookUrl, receiverDeduplicates: config.webhookDeduplicates, timeoutMs: config.callTimeoutMs })]
      : []),
  ];
  for (const adapter of builtIns) adapters.set(adapter.name, adapter);
  const declaredNames = new Set<string>();
  for (const declaration of parts.declared ?? []) {
    const name = declaration.name;
    if ((BUILT_IN_EFFECTS as readonly string[]).includes(name)) throw new HttpEffectDeclarationError(name, 'the name is a built-in effect; choose another');
    if (declaredNames.has(name)) throw new HttpEffectDeclarationError(name, 'the name is declared twice');
    // A try that outlasts the lease could still be in flight when recovery takes the effect over.
    if (declaration.timeoutMs !== undefined && declaration.timeoutMs >= config.leaseMs) {
      throw new HttpEffectDeclarationError(name, `timeoutMs must be shorter than the effect lease (ONCEFLOW_EFFECT_LEASE_MS, ${config.leaseMs})`);
    }
    declaredNames.add(name);
    adapters.set(name, createHttpEffect({ ...declaration, timeoutMs: declaration.timeoutMs ?? config.callTimeoutMs }, parts.env ?? process.env));
  }
  return adapters;
}

/** The built-in effect adapters alone, by effect name. */
export function createEffectAdapters(config: OnceflowConfig['effects'], db: Pool): Map<string, EffectAdapter> {
  return createEffectRegistry({ config, db });
}
