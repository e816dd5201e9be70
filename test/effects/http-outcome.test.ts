import { classifyTransportFailure } from '../../src/effects/http-outcome';
import { createWebhook } from '../../src/effects/webhook';

/**
 * What a failure to reach a downstream means: only what happened before
 * anything left may be called "not performed" or "rejected"; anything later
 * may have been performed.
 */
describe('a transport failure', () => {
  it('is a definite no when the URL could not even be parsed: nothing left', async () => {
    // Arrange: a webhook URL fetch cannot parse, as an operator could configure it
    const webhook = createWebhook({ name: 'webhook.notify', url: 'http://exa mple.com/hook', receiverDeduplicates: false, timeoutMs: 1_000 });

    // Act
    const result = await webhook.perform!({ jobId: 'j', operation: 'o', input: {}, output: {}, key: 'k' });

    // Assert
    expect(result).toMatchObject({ kind: 'rejected', class: 'invalid_url' });
  });

  it('is not performed when the connection was refused, and ambiguous when it was lost later', () => {
    // Act
    const refused = classifyTransportFailure(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }));
    const reset = classifyTransportFailure(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } }));

    // Assert
    expect(refused).toMatchObject({ kind: 'not_performed', class: 'refused' });
    expect(reset).toMatchObject({ kind: 'ambiguous', class: 'connection_lost' });
  });
});
