import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpEffect } from '../../src/effects/http-effect';
import { createMessageSend } from '../../src/effects/message-send';
import type { EffectAdapter, EffectContext } from '../../src/effects/types';
import { createWebhook } from '../../src/effects/webhook';

/**
 * Invariant 14: no effect call follows a redirect. A 301/302/303 followed
 * turns the POST into a body-less GET whose 2xx would settle an effect the
 * downstream never received; a 307/308 followed re-posts the body and the
 * headers to another origin. A redirect proves nothing about what the
 * downstream did: the effect is ambiguous (recovery asks its lookup, or it
 * goes to review), never done, never rejected; a lookup answered with one
 * concludes nothing.
 */

interface Recorder {
  server: Server;
  url: string;
  requests: Array<{ method: string; path: string; headers: Record<string, unknown> }>;
}

async function recorder(answer: (path: string) => { status: number; headers?: Record<string, string>; body?: unknown }): Promise<Recorder> {
  const requests: Recorder['requests'] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
      const what = answer(req.url ?? '');
      res.writeHead(what.status, { 'content-type': 'application/json', ...what.headers });
      res.end(what.body === undefined ? '' : JSON.stringify(what.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

describe('an effect answered with a redirect', () => {
  let elsewhere: Recorder;
  let redirecting: Recorder;
  let status = 302;

  beforeAll(async () => {
    // Any request that reached this origin was a redirect followed.
    elsewhere = await recorder(() => ({ status: 200, body: { messageId: 'm-elsewhere', id: 'c-elsewhere' } }));
    redirecting = await recorder((path) => ({ status, headers: { location: `${elsewhere.url}${path}` } }));
  });
  afterAll(async () => {
    for (const { server } of [elsewhere, redirecting]) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
  beforeEach(() => {
    elsewhere.requests.length = 0;
    redirecting.requests.length = 0;
  });

  const context: EffectContext = { jobId: 'job-1', operation: 'support.reply', input: { ticketId: 'T-1', channel: 'email' }, output: { reply: 'hi' }, key: 'k-1' };
  const adapters: Array<[string, () => EffectAdapter]> = [
    ['message.send', () => createMessageSend({ baseUrl: redirecting.url, deduplicates: false, timeoutMs: 2_000 })],
    ['webhook.notify', () => createWebhook({ name: 'webhook.notify', url: `${redirecting.url}/hook`, receiverDeduplicates: false, timeoutMs: 2_000, headers: { authorization: 'Bearer s3cret' } })],
    [
      'a declared effect',
      () =>
        createHttpEffect(
          { name: 'ticket.comment', url: `${redirecting.url}/comments`, headers: { Authorization: 'Bearer ${TOKEN}' }, receipt: { id: '/id' }, lookup: { url: `${redirecting.url}/comments/{{key}}` }, deduplicates: false, timeoutMs: 2_000 },
          { TOKEN: 's3cret' },
        ),
    ],
  ];

  describe.each(adapters)('%s', (_name, make) => {
    it.each([301, 302, 303, 307, 308])('is ambiguous on a %i, and nothing reaches the other origin', async (code) => {
      // Arrange
      status = code;

      // Act
      const result = await make().perform!(context);

      // Assert
      expect(result).toMatchObject({ kind: 'ambiguous', class: 'redirect' });
      expect(redirecting.requests).toHaveLength(1);
      expect(redirecting.requests[0]!.method).toBe('POST');
      expect(elsewhere.requests).toHaveLength(0);
    });

  });

  it.each(adapters.filter(([name]) => name !== 'webhook.notify'))('%s: a lookup answered with a redirect concludes nothing, and is not followed', async (_name, make) => {
    // Arrange
    status = 302;

    // Act
    const looked = make().lookup!('k-1', context);

    // Assert
    await expect(looked).rejects.toThrow(/302/);
    expect(redirecting.requests).toHaveLength(1);
    expect(elsewhere.requests).toHaveLength(0);
  });
});
