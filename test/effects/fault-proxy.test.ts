import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFaultProxy, type FaultProxy } from '../../src/effects/verify/fault-proxy';

/** What the recording server saw of one request. */
interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An answer the recording server gives; `bodyAfterMs` holds the body back after the head is sent. */
interface Answer {
  status: number;
  headers?: Record<string, string | string[]>;
  body?: string;
  bodyAfterMs?: number;
}

/** A local downstream that records every request in full and answers what the test tells it to. */
async function startRecordingServer() {
  const seen: Seen[] = [];
  const answered: Seen[] = [];
  let answer: Answer = { status: 200, body: 'ok' };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(request);
      const { status, headers = {}, body = '', bodyAfterMs } = answer;
      res.writeHead(status, headers);
      const finish = () => res.end(body, () => answered.push(request));
      if (bodyAfterMs === undefined) finish();
      else {
        res.flushHeaders();
        setTimeout(finish, bodyAfterMs);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    /** The requests whose answer the server finished writing. */
    answered,
    answerWith: (next: Answer) => void (answer = next),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The low-level code of a fetch that failed at the connection, or a thrown error if it got an answer. */
async function connectionFailure(request: Promise<Response>): Promise<string | undefined> {
  const outcome = await request.then(
    (response) => ({ response }),
    (error: unknown) => ({ error }),
  );
  if ('response' in outcome) throw new Error(`expected a connection failure, got HTTP ${outcome.response.status}`);
  // fetch's own TypeError, from undici's realm rather than jest's: matched by name.
  expect(outcome.error).toMatchObject({ name: 'TypeError', message: 'fetch failed' });
  return ((outcome.error as { cause?: { code?: string } }).cause ?? {}).code;
}

describe('fault proxy', () => {
  let target: Awaited<ReturnType<typeof startRecordingServer>>;
  let proxy: FaultProxy;

  beforeEach(async () => {
    target = await startRecordingServer();
    proxy = await startFaultProxy({ target: target.url });
  });

  afterEach(async () => {
    await proxy.close();
    await target.close();
  });

  it('forwards the method, path, query, headers and body, with the Host of the target', async () => {
    // Arrange
    const body = JSON.stringify({ ticketId: 'T-1', text: 'héllo' });

    // Act
    await fetch(`${proxy.url}/v1/tickets/a%2Fb/comments?x=1&y=two%20words`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'onceflow-verify-K1', authorization: 'Bearer s3cret', 'x-many': 'one' },
      body,
    });

    // Assert
    expect(target.seen).toHaveLength(1);
    const [request] = target.seen;
    expect(request).toMatchObject({ method: 'PUT', url: '/v1/tickets/a%2Fb/comments?x=1&y=two%20words', body });
    expect(request!.headers).toMatchObject({
      host: `127.0.0.1:${target.port}`,
      'content-type': 'application/json',
      'idempotency-key': 'onceflow-verify-K1',
      authorization: 'Bearer s3cret',
      'x-many': 'one',
      'content-length': String(Buffer.byteLength(body)),
    });
  });

  it("returns the target's status, headers and body", async () => {
    // Arrange
    target.answerWith({ status: 418, headers: { 'content-type': 'text/plain', 'x-answer': 'teapot', 'set-cookie': ['a=1', 'b=2'] }, body: 'short and stout' });

    // Act
    const response = await fetch(`${proxy.url}/brew`, { method: 'POST', body: 'coffee' });

    // Assert
    expect(response.status).toBe(418);
    expect(response.headers.get('x-answer')).toBe('teapot');
    expect(response.headers.get('content-type')).toBe('text/plain');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.text()).toBe('short and stout');
  });

  it('forwards a GET without a body as one', async () => {
    // Act
    await fetch(`${proxy.url}/v1/messages/by-key/K1`);

    // Assert
    expect(target.seen[0]).toMatchObject({ method: 'GET', url: '/v1/messages/by-key/K1', body: '' });
    expect(target.seen[0]!.headers['content-length']).toBeUndefined();
    expect(target.seen[0]!.headers['transfer-encoding']).toBeUndefined();
  });

  it.each([303, 307])('answers a %i as it is, never following it', async (status) => {
    // Arrange: a redirect back to the target itself, so a follow would show as a second request.
    target.answerWith({ status, headers: { location: `${target.url}/elsewhere` } });

    // Act
    const response = await fetch(`${proxy.url}/v1/charges`, { method: 'POST', body: '{}', redirect: 'manual' });

    // Assert
    expect(response.status).toBe(status);
    expect(response.headers.get('location')).toBe(`${target.url}/elsewhere`);
    expect(target.seen.map((r) => r.url)).toEqual(['/v1/charges']);
  });

  it('with dropNextAnswer, forwards the request once and resets the connection instead of answering', async () => {
    // Arrange
    target.answerWith({ status: 201, body: '{"messageId":"msg_1"}' });
    proxy.dropNextAnswer();

    // Act
    const code = await connectionFailure(fetch(`${proxy.url}/v1/messages`, { method: 'POST', body: '{"text":"K3"}' }));

    // Assert
    expect(code).toBe('ECONNRESET');
    expect(target.seen.map((r) => r.body)).toEqual(['{"text":"K3"}']);
    expect(proxy.requests()).toEqual([{ method: 'POST', path: '/v1/messages', targetStatus: 201, dropped: true }]);
  });

  it("drops an answer only after the target's whole answer came, so the target did act", async () => {
    // Arrange: the head at once, the body later; the target finishes only once the body is out.
    target.answerWith({ status: 201, body: '{"messageId":"msg_1"}', bodyAfterMs: 200 });
    proxy.dropNextAnswer();

    // Act
    const code = await connectionFailure(fetch(`${proxy.url}/v1/messages`, { method: 'POST', body: '{}' }));

    // Assert
    expect(code).toBe('ECONNRESET');
    expect(target.answered).toHaveLength(1);
  });

  it('forwards the request after a dropped one normally, and drops one answer per call', async () => {
    // Arrange
    proxy.dropNextAnswer();
    proxy.dropNextAnswer();

    // Act
    const first = await connectionFailure(fetch(`${proxy.url}/one`));
    const second = await connectionFailure(fetch(`${proxy.url}/two`));
    const third = await fetch(`${proxy.url}/three?q=1`);

    // Assert
    expect([first, second]).toEqual(['ECONNRESET', 'ECONNRESET']);
    expect(third.status).toBe(200);
    expect(await third.text()).toBe('ok');
    expect(target.seen.map((r) => r.url)).toEqual(['/one', '/two', '/three?q=1']);
    expect(proxy.requests()).toEqual([
      { method: 'GET', path: '/one', targetStatus: 200, dropped: true },
      { method: 'GET', path: '/two', targetStatus: 200, dropped: true },
      { method: 'GET', path: '/three?q=1', status: 200, targetStatus: 200, dropped: false },
    ]);
  });

  it('resets the connection when the target cannot be reached, recording no status and why', async () => {
    // Arrange
    await target.close();

    // Act
    const code = await connectionFailure(fetch(`${proxy.url}/v1/messages`, { method: 'POST', body: '{}' }));

    // Assert
    expect(code).toBe('ECONNRESET');
    expect(proxy.requests()).toEqual([{ method: 'POST', path: '/v1/messages', dropped: false, error: expect.stringContaining('ECONNREFUSED') }]);
  });

  it('stops answering once closed', async () => {
    // Act
    await proxy.close();

    // Assert
    await expect(fetch(`${proxy.url}/`)).rejects.toThrow();
  });
});

describe('startFaultProxy', () => {
  it.each(['not a url', 'ftp://127.0.0.1:21', 'http://127.0.0.1:1/v1'])('refuses the target %s', async (target) => {
    // Act
    const failure = await startFaultProxy({ target }).catch((error: unknown) => error);

    // Assert
    expect(failure).toBeInstanceOf(TypeError);
  });
});
