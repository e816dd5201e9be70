import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';
import { RawConnection, rawRequest, type RawResponse } from './raw-http';

/**
 * What reaches the API as raw HTTP, before or beside any route: every answer
 * is problem+json, whoever raised the error (Node's parser, Fastify's router,
 * a route), and a known path answers an unsupported method with 405 and Allow.
 */
describe('the HTTP edge', () => {
  let stack: TestStack;
  let port: number;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    await stack.app.listen({ host: '127.0.0.1', port: 0 });
    port = (stack.app.server.address() as AddressInfo).port;
  });
  afterAll(() => stack.close());

  const request = (head: string, body = '') =>
    rawRequest(port, `${head}\r\nHost: localhost\r\n${body ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`);
  const jobBody = JSON.stringify({ operation: 'support.reply', input: { ticketId: 'T-1', customerMessage: 'Hello', channel: 'chat' } });

  const expectProblem = (response: RawResponse, status: number, type: RegExp) => {
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = response.json();
    expect(problem).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
    expect(problem.type).toMatch(type);
    expect(response.body).not.toMatch(/FST_ERR|"statusCode"/);
  };

  it('answers a path parameter over the length limit with 414 problem+json', async () => {
    expectProblem(await request(`GET /v1/jobs/${'a'.repeat(500)} HTTP/1.1\r\nAuthorization: Bearer ${KEYS.alice}`), 414, /\/uri-too-long$/);
  });

  it('answers a path that is not valid percent-encoding with 400 problem+json', async () => {
    expectProblem(await request(`GET /v1/jobs/%ZZ HTTP/1.1\r\nAuthorization: Bearer ${KEYS.alice}`), 400, /\/bad-url$/);
  });

  it('answers headers over the size limit with 431 problem+json', async () => {
    expectProblem(await request(`GET /healthz HTTP/1.1\r\nX-Filler: ${'a'.repeat(20_000)}`), 431, /\/headers-too-large$/);
  });

  it('answers a header holding NUL, which Node refuses, with 400 problem+json', async () => {
    expectProblem(await request('GET /healthz HTTP/1.1\r\nX-Odd: a\u0000b'), 400, /\/bad-request$/);
  });

  it('answers a method HTTP does not know with 501 problem+json', async () => {
    expectProblem(await request('FROB /v1/jobs HTTP/1.1'), 501, /\/not-implemented$/);
  });

  it('answers TRACE on a path that does not exist with 404 problem+json', async () => {
    expectProblem(await request('TRACE /nowhere HTTP/1.1'), 404, /\/not-found$/);
  });

  it.each(['TRACE', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'])('answers %s on /v1/jobs with 405 and Allow listing its methods', async (method) => {
    // Act
    const response = await request(`${method} /v1/jobs HTTP/1.1`);

    // Assert
    expectProblem(response, 405, /\/method-not-allowed$/);
    expect(response.headers.allow?.split(/,\s*/).sort()).toEqual(['GET', 'HEAD', 'POST']);
  });

  it('answers an unsupported method on a known path with 405 even when its body cannot be parsed', async () => {
    // Act: QUERY carries a body, and this one has no Content-Type.
    const response = await rawRequest(port, 'QUERY /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}');

    // Assert
    expectProblem(response, 405, /\/method-not-allowed$/);
    expect(response.headers.allow).toBe('GET, HEAD');
  });

  it('answers GET on a command route with 405 and Allow: POST', async () => {
    // Act
    const response = await request(`GET /v1/jobs/${randomUUID()}/cancel HTTP/1.1`);

    // Assert
    expectProblem(response, 405, /\/method-not-allowed$/);
    expect(response.headers.allow).toBe('POST');
  });

  it('refuses two Idempotency-Key headers (which Node would join into one key) and records nothing', async () => {
    // Arrange
    const keys = [randomUUID(), randomUUID()];

    // Act
    const response = await request(`POST /v1/jobs HTTP/1.1\r\nAuthorization: Bearer ${KEYS.alice}\r\nIdempotency-Key: ${keys[0]}\r\nIdempotency-Key: ${keys[1]}`, jobBody);

    // Assert
    expectProblem(response, 400, /\/duplicate-header$/);
    expect(response.json().detail).toMatch(/Idempotency-Key/);
    const rows = await stack.db.pool.query('SELECT 1 FROM jobs WHERE idempotency_key LIKE $1 OR idempotency_key LIKE $2', [`%${keys[0]}%`, `%${keys[1]}%`]);
    expect(rows.rowCount).toBe(0);
  });

  it('refuses two Request-Deadline headers (which Node would join into one value)', async () => {
    const response = await request(
      `POST /v1/jobs HTTP/1.1\r\nAuthorization: Bearer ${KEYS.alice}\r\nIdempotency-Key: ${randomUUID()}\r\nRequest-Deadline: 2099-01-01T00:00:00Z\r\nRequest-Deadline: 2099-01-02T00:00:00Z`,
      jobBody,
    );
    expectProblem(response, 400, /\/duplicate-header$/);
    expect(response.json().detail).toMatch(/Request-Deadline/);
  });

  it('refuses two Authorization headers (of which Node would keep the first)', async () => {
    // Act
    const response = await request(`GET /v1/jobs/${randomUUID()} HTTP/1.1\r\nAuthorization: Bearer ${KEYS.alice}\r\nAuthorization: Bearer ${KEYS.bob}`);

    // Assert
    expectProblem(response, 400, /\/duplicate-header$/);
    expect(response.json().detail).toMatch(/Authorization/);
  });

  it('still takes one Idempotency-Key and one Authorization header', async () => {
    const response = await request(`POST /v1/jobs HTTP/1.1\r\nAuthorization: Bearer ${KEYS.alice}\r\nIdempotency-Key: ${randomUUID()}`, jobBody);
    expect(response.status).toBe(202);
  });
});

describe('a draining API', () => {
  it('answers a request that arrives while it closes with 503 problem+json, Retry-After and Connection: close', async () => {
    // Arrange: a request whose headers are half sent when the API starts to close.
    const stack = await startTestStack({ worker: false });
    try {
      await stack.app.listen({ host: '127.0.0.1', port: 0 });
      const connection = await new RawConnection((stack.app.server.address() as AddressInfo).port).connected();
      connection.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
      await new Promise((resolve) => setTimeout(resolve, 100));

      // Act
      const closing = stack.app.close();
      connection.write('\r\n');
      const response = await connection.response();
      await closing;

      // Assert
      expect(response.status).toBe(503);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json().type).toMatch(/\/service-unavailable$/);
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      expect(response.headers.connection).toBe('close');
    } finally {
      await stack.close();
    }
  });
});
