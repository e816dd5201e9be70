import type { Pool } from 'pg';
import type { OnceflowConfig } from '../config';
import { createMessageSend } from './message-send';
import { createRecordWrite } from './record-write';
import type { EffectAdapter } from './types';
import { createWebhook } from './webhook';

/** The effect adapters this deployment has, by effect name. */
export function createEffectAdapters(config: OnceflowConfig['effects'], db: Pool): Map<string, EffectAdapter> {
  const adapters: EffectAdapter[] = [
    createMessageSend({ baseUrl: config.messagesUrl, deduplicates: config.messagesDeduplicate, timeoutMs: config.callTimeoutMs }),
    createRecordWrite(db),
    ...(config.webhookUrl
      ? [createWebhook({ name: 'webhook.notify', url: config.webhookUrl, receiverDeduplicates: config.webhookDeduplicates, timeoutMs: config.callTimeoutMs })]
      : []),
  ];
  return new Map(adapters.map((adapter) => [adapter.name, adapter]));
}
