import type { AddressInfo } from 'node:net';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';
import { RawConnection } from './raw-http';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for the connection to close, failing the test after timeoutMs (a hang, not a slowness measure). */
async function closedWithin(connection: RawConnection, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`connection still open after ${timeoutMs} ms; received ${JSON.stringify(connection.text)}`)), timeoutMs);
  });
  try {
    await Promise.race([connection.closed, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A slow client cannot hold the API: headers, and then the whole request with
 * its body, must arrive in time (here shortened to 0.5 s and 1.5 s), or the
 * connection is answered 408 problem+json and closed; meanwhile everyone else
 * is served.
 */
describe('slow clients', () => {
  let stack: TestStack;
  let port: number;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_API_HEADERS_TIMEOUT_MS: '500', ONCEFLOW_API_REQUEST_TIMEOUT_MS: '1500' } });
    await stack.app.listen({ host: '127.0.0.1', port: 0 });
    port = (stack.app.server.address() as AddressInfo).port;
  });
  afterAll(() => stack.close());

  const submitHead = (contentLength: number) =>
    `POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${KEYS.alice}\r\nIdempotency-Key: slow-${Math.random()}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`;

  it('answers a body that stalls after its headers with 408 problem+json and closes the connection', async () => {
    // Arrange
    const connection = await new RawConnection(port).connected();

    // Act
    connection.write(submitHead(200));
    connection.write('{"operation":');
    const response = await connection.response(10_000);
    await closedWithin(connection, 10_000);

    // Assert
    expect(response.status).toBe(408);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json().type).toMatch(/\/request-timeout$/);
  });

  it('cuts off a body that drips one byte at a time before it is complete', async () => {
    // Arrange
    const connection = await new RawConnection(port).connected();
    const body = JSON.stringify({ operation: 'support.reply', input: { ticketId: 'T-1', customerMessage: 'x'.repeat(200), channel: 'chat' } });
    connection.write(submitHead(Buffer.byteLength(body)));

    // Act: a byte every 100 ms would take over 25 s.
    let sent = 0;
    const drip = (async () => {
      while (sent < body.length && !connection.socket.destroyed) {
        connection.write(body[sent++]!);
        await sleep(100);
      }
    })();
    await closedWithin(connection, 15_000);
    await drip;

    // Assert
    expect(sent).toBeLessThan(body.length);
    expect(connection.text).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('answers headers that never finish with 408 problem+json and closes the connection', async () => {
    // Arrange
    const connection = await new RawConnection(port).connected();

    // Act
    connection.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    await closedWithin(connection, 10_000);

    // Assert
    expect(connection.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(connection.text).toContain('application/problem+json');
  });

  it('closes a connection that never sends a byte', async () => {
    // Arrange
    const connection = await new RawConnection(port).connected();

    // Act
    await closedWithin(connection, 10_000);

    // Assert
    expect(connection.socket.destroyed).toBe(true);
  });

  it('does not cut off an answer that takes longer than the request timeout once the request has arrived (Prefer: wait)', async () => {
    // Act: no worker runs, so the job stays accepted and the server waits the full 3 s, twice the request timeout.
    const response = await fetch(`http://127.0.0.1:${port}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.alice}`, 'idempotency-key': `wait-${Math.random()}`, 'content-type': 'application/json', prefer: 'wait=3' },
      body: JSON.stringify({ operation: 'support.reply', input: { ticketId: 'T-1', customerMessage: 'Hello', channel: 'chat' } }),
    });

    // Assert
    expect(response.status).toBe(202);
    expect(response.headers.get('preference-applied')).toBe('wait=3');
  });

  it('serves other clients while slow ones hold their connections', async () => {
    // Arrange
    const slow = await Promise.all(Array.from({ length: 5 }, async () => (await new RawConnection(port).connected())));
    slow.forEach((connection) => connection.write(submitHead(500)));

    // Act
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);

    // Assert
    expect(response.status).toBe(200);
    expect(slow.every((connection) => !connection.socket.destroyed)).toBe(true);
    slow.forEach((connection) => connection.close());
  });
});

describe('the connection cap', () => {
  let stack: TestStack;
  let port: number;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_API_MAX_CONNECTIONS: '2', ONCEFLOW_API_HEADERS_TIMEOUT_MS: '500', ONCEFLOW_API_REQUEST_TIMEOUT_MS: '1000' } });
    await stack.app.listen({ host: '127.0.0.1', port: 0 });
    port = (stack.app.server.address() as AddressInfo).port;
  });
  afterAll(() => stack.close());

  it('closes connections over the cap at once, and serves again once slow ones are cut off', async () => {
    // Arrange: two connections that send nothing fill the cap.
    const holders = await Promise.all([new RawConnection(port).connected(), new RawConnection(port).connected()]);
    await sleep(50);

    // Act
    const over = await new RawConnection(port).connected();
    over.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await closedWithin(over, 5_000);
    await Promise.all(holders.map((holder) => closedWithin(holder, 10_000)));
    const after = await fetch(`http://127.0.0.1:${port}/healthz`);

    // Assert
    expect(over.text).toBe('');
    expect(after.status).toBe(200);
  });
});
