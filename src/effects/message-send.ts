import { downstreamFetch } from './downstream-fetch';
import { classifyDownstreamStatus, classifyTransportFailure } from './http-outcome';
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { EffectAdapter, EffectContext, EffectProbe, LookupResult, PerformResult, VerifiableEffect } from './types';

export interface MessageSendOptions {
  /** Base URL of the messaging service, e.g. http://127.0.0.1:7310 */
  baseUrl: string;
  /** The service deduplicates by Idempotency-Key, so a repeat is harmless. */
  deduplicates: boolean;
  timeoutMs: number;
}

/** What the drills send the messaging service: a message anyone reading the channel knows for a check. */
const MESSAGE_PROBE: EffectProbe = {
  name: 'a verification message',
  input: { ticketId: 'onceflow-verify', channel: 'email' },
  output: { reply: 'Onceflow is checking this service (a drill): please ignore.' },
};

/**
 * `message.send`: the reply of support.reply, sent on the ticket's channel.
 * Receipt: the service's messageId. Lookup: GET /v1/messages/by-key/{key}.
 */
export function createMessageSend(options: MessageSendOptions): EffectAdapter {
  const base = options.baseUrl.replace(/\/$/, '');
  const verifiable: VerifiableEffect = {
    declarationDigest: createHash('sha256').update(canonicalize({ name: 'message.send', baseUrl: base, deduplicates: options.deduplicates }) ?? '').digest('hex'),
    host: new URL(base).host,
    drillOrigin: new URL(base).origin,
    probes: [MESSAGE_PROBE],
    via: (origin) => createMessageSend({ ...options, baseUrl: `${origin}${new URL(base).pathname.replace(/\/$/, '')}` }),
  };
  return {
    name: 'message.send',
    repeatSafe: options.deduplicates,
    verifiable,

    async perform(context: EffectContext): Promise<PerformResult> {
      const body = JSON.stringify({
        ticketId: String(context.input.ticketId),
        channel: String(context.input.channel),
        text: String(context.output.reply),
      });
      let response: Response;
      try {
        response = await downstreamFetch(`${base}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': context.key },
          body,
          signal: AbortSignal.any([AbortSignal.timeout(options.timeoutMs), ...(context.signal ? [context.signal] : [])]),
        });
      } catch (err) {
        return classifyTransportFailure(err);
      }
      // Any 2xx says it was taken; the receipt is what tells which message it became.
      if (response.status < 200 || response.status > 299) {
        await response.body?.cancel();
        return classifyDownstreamStatus(response.status, response.headers.get('retry-after'));
      }
      let receipt: { messageId?: unknown };
      try {
        receipt = (await response.json()) as { messageId?: unknown };
      } catch (err) {
        // It said yes, but the answer broke off: it happened, the receipt must be looked up.
        return { kind: 'ambiguous', class: 'connection_lost', detail: `the answer was cut: ${(err as Error).message}` };
      }
      if (typeof receipt.messageId !== 'string') return { kind: 'ambiguous', class: 'bad_receipt', detail: 'the answer carried no messageId' };
      return { kind: 'done', receipt: { messageId: receipt.messageId } };
    },

    async lookup(key: string): Promise<LookupResult> {
      const response = await downstreamFetch(`${base}/v1/messages/by-key/${encodeURIComponent(key)}`, { signal: AbortSignal.timeout(options.timeoutMs) });
      if (response.status === 404) {
        await response.body?.cancel();
        return { found: false };
      }
      if (!response.ok) throw new Error(`receipt lookup answered ${response.status}`);
      const receipt = (await response.json()) as { messageId?: unknown };
      if (typeof receipt.messageId !== 'string') throw new Error('receipt lookup carried no messageId');
      return { found: true, receipt: { messageId: receipt.messageId } };
    },
  };
}
