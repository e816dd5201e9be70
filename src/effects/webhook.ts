import { downstreamFetch } from './downstream-fetch';
import { classifyDownstreamStatus, classifyTransportFailure } from './http-outcome';
import type { EffectAdapter, EffectContext, PerformResult } from './types';

export interface WebhookOptions {
  /** Effect name, e.g. `webhook.notify`. */
  name: string;
  url: string;
  /** The receiver honours Idempotency-Key (a repeat is harmless). Without it, a stale webhook goes to review. */
  receiverDeduplicates: boolean;
  timeoutMs: number;
  headers?: Record<string, string>;
}

/**
 * An HTTP webhook: POST {jobId, operation, output} with Idempotency-Key. There
 * is no receipt lookup, so recovery may repeat it only when the receiver
 * deduplicates; otherwise a stale one goes to review.
 */
export function createWebhook(options: WebhookOptions): EffectAdapter {
  return {
    name: options.name,
    repeatSafe: options.receiverDeduplicates,
    async perform(context: EffectContext): Promise<PerformResult> {
      let response: Response;
      try {
        response = await downstreamFetch(options.url, {
          method: 'POST',
          headers: { ...options.headers, 'content-type': 'application/json', 'idempotency-key': context.key },
          body: JSON.stringify({ jobId: context.jobId, operation: context.operation, output: context.output }),
          signal: AbortSignal.any([AbortSignal.timeout(options.timeoutMs), ...(context.signal ? [context.signal] : [])]),
        });
      } catch (err) {
        return classifyTransportFailure(err);
      }
      await response.body?.cancel();
      if (response.status >= 200 && response.status < 300) return { kind: 'done', receipt: { status: response.status, at: new Date().toISOString() } };
      return classifyDownstreamStatus(response.status, response.headers.get('retry-after'));
    },
  };
}
