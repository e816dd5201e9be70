import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpEffectDeclaration } from '../../src/effects/http-declaration';
import { createHttpEffect, HttpEffectDeclarationError } from '../../src/effects/http-effect';
import type { EffectContext } from '../../src/effects/types';

/**
 * A declared HTTP downstream against a real HTTP server on loopback: what each
 * answer means for the effect (done, rejected, not performed, ambiguous), the
 * idempotency key on every try, the receipt, the lookup, and secrets that stay
 * out of every error.
 */

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** How the server answers one request; `reset` reads the request, then resets the connection. */
type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | 'reset' | 'hang';

describe('a declared HTTP effect', () => {
  let server: Server;
  let baseUrl = '';
  const received: Received[] = [];
  let answer: (request: Received) => Answer = () => ({ status: 201, body: { id: 'c-1' } });

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: text === '' ? undefined : JSON.parse(text) };
        received.push(request);
        respond(res, answer(request));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    received.length = 0;
  });

  function respond(res: ServerResponse, what: Answer): void {
    if (what === 'hang') return;
    if (what === 'reset') {
      res.socket?.resetAndDestroy();
      return;
    }
    res.writeHead(what.status, { 'content-type': 'application/json', ...what.headers });
    res.end(what.body === undefined ? '' : JSON.stringify(what.body));
  }

  const context = (overrides: Partial<EffectContext> = {}): EffectContext => ({
    jobId: 'job-1',
    operation: 'support.reply',
    input: { ticketId: 'T-7', priority: 2, tags: ['vip'] },
    output: { reply: 'We are on it.', escalate: false },
    key: 'onceflow-job-1-ticket.comment',
    ...overrides,
  });

  const declared = (overrides: Partial<HttpEffectDeclaration> = {}): HttpEffectDeclaration => ({
    name: 'ticket.comment',
    url: `${baseUrl}/tickets`,
    body: { ticket: '{{input.ticketId}}', text: '{{output.reply}}' },
    receipt: { commentId: '/id' },
    deduplicates: false,
    timeoutMs: 2_000,
    ...overrides,
  });

  async function freePortUrl(): Promise<string> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    return `http://127.0.0.1:${port}`;
  }

  describe('performing', () => {
    it('fills placeholders in the URL from the job, URL-encoded', async () => {
      // Arrange
      answer = () => ({ status: 201, body: { id: 'c-9' } });
      const effect = createHttpEffect(declared({ url: `${baseUrl}/tickets/{{input.ticketId}}/comments?job={{job.id}}` }), {});

      // Act
      const result = await effect.perform!(context({ input: { ticketId: 'T 7/ä' } }));

      // Assert
      expect(result).toEqual({ kind: 'done', receipt: { commentId: 'c-9' } });
      expect(received[0]!.url).toBe('/tickets/T%207%2F%C3%A4/comments?job=job-1');
    });

    it('refuses a URL placeholder that names nothing it knows, and rejects a job without the value, sending nothing', async () => {
      // Arrange
      const effect = createHttpEffect(declared({ url: `${baseUrl}/tickets/{{input.ticketId}}` }), {});

      // Act
      const result = await effect.perform!(context({ input: {} }));

      // Assert
      expect(() => createHttpEffect(declared({ url: `${baseUrl}/tickets/{{ticket}}` }), {})).toThrow(/the URL names \{\{ticket\}\}/);
      expect(result).toMatchObject({ kind: 'rejected', class: 'url_template' });
      expect(received).toHaveLength(0);
    });

    it.each([
      ['the host', 'https://{{input.region}}/v1/x'],
      ['part of the host', 'https://api.{{input.region}}.example.com/v1/x'],
      ['the port', 'http://127.0.0.1:{{input.port}}/v1/x'],
      ['the user', 'https://{{input.user}}@api.example.com/v1/x'],
      ['a query name', 'https://api.example.com/v1/x?{{input.name}}=1'],
      ['the fragment', 'https://api.example.com/v1/x#{{input.part}}'],
    ])('refuses at creation a placeholder in %s: only path segments and query values may vary', (_where, url) => {
      // Act
      const error = catchError(() => createHttpEffect(declared({ url }), {}));
      const lookupError = catchError(() => createHttpEffect(declared({ lookup: { url } }), {}));

      // Assert
      expect(error).toBeInstanceOf(HttpEffectDeclarationError);
      expect(error.message).toMatch(/ticket\.comment: the URL .*path segments and query values/);
      expect(lookupError.message).toMatch(/ticket\.comment: the lookup URL .*path segments and query values/);
    });

    it.each([
      ['..', '/v1/tickets/../admin'],
      ['.', '/v1/tickets/./admin'],
      ['', '/v1/tickets//admin'],
    ])('sends nothing when a path segment renders as "%s", and rejects the try', async (value) => {
      // Arrange
      const effect = createHttpEffect(declared({ url: `${baseUrl}/v1/tickets/{{input.ticketId}}/admin`, lookup: { url: `${baseUrl}/v1/tickets/{{input.ticketId}}/{{key}}` } }), {});
      const values = context({ input: { ticketId: value } });

      // Act
      const result = await effect.perform!(values);
      const lookedUp = effect.lookup!('k-1', values).catch((err: Error) => err);

      // Assert
      expect(result).toMatchObject({ kind: 'rejected', class: 'url_template', detail: expect.stringContaining('{{input.ticketId}}') });
      expect(await lookedUp).toBeInstanceOf(Error);
      expect(received).toHaveLength(0);
    });

    it.each([
      ['a placeholder that would span parts', 'https://api.example.com/v1/{{input.p/x}}', /placeholder \{\{input\.p\/x\}\} names a path with/],
      ['a backslash, which URLs read as a slash', 'https://api.example.com/v1/{{input.x}}\\admin', /backslash/],
      ['a fixed dot segment', 'https://api.example.com/v1/../{{input.x}}', /\. or \.\. path segment/],
    ])('refuses at creation %s', (_what, url, message) => {
      // Act
      const error = catchError(() => createHttpEffect(declared({ url }), {}));

      // Assert
      expect(error).toBeInstanceOf(HttpEffectDeclarationError);
      expect(error.message).toMatch(message);
    });

    it('takes a URL without a path, and one with only a query', async () => {
      // Arrange
      answer = () => ({ status: 201, body: { id: 'c-1' } });

      // Act
      const bare = await createHttpEffect(declared({ url: baseUrl }), {}).perform!(context());
      const query = await createHttpEffect(declared({ url: `${baseUrl}?ticket={{input.ticketId}}` }), {}).perform!(context());

      // Assert
      expect([bare.kind, query.kind]).toEqual(['done', 'done']);
      expect(received.map((r) => r.url)).toEqual(['/', '/?ticket=T-7']);
    });

    it('sends nothing when a value and the fixed text beside it make a dot segment', async () => {
      // Arrange: `.` beside a fixed `%2e` is `..` to a URL parser
      const effect = createHttpEffect(declared({ url: `${baseUrl}/v1/tickets/{{input.ticketId}}%2e/admin` }), {});

      // Act
      const result = await effect.perform!(context({ input: { ticketId: '.' } }));

      // Assert
      expect(result).toMatchObject({ kind: 'rejected', class: 'url_template' });
      expect(received).toHaveLength(0);
    });

    it('keeps a value that only looks like a path step inside its segment and the query', async () => {
      // Arrange
      answer = () => ({ status: 201, body: { id: 'c-1' } });
      const effect = createHttpEffect(declared({ url: `${baseUrl}/v1/tickets/{{input.ticketId}}?next={{input.next}}` }), {});

      // Act
      const result = await effect.perform!(context({ input: { ticketId: '../%2e%2e/x', next: '../../a&b=c' } }));

      // Assert
      expect(result.kind).toBe('done');
      expect(received[0]!.url).toBe('/v1/tickets/..%2F%252e%252e%2Fx?next=..%2F..%2Fa%26b%3Dc');
    });

    it('rejects a value that cannot be put in a URL (a lone surrogate from a model), sending nothing', async () => {
      // Arrange
      const effect = createHttpEffect(declared({ url: `${baseUrl}/v1/tickets/{{output.ticket}}` }), {});

      // Act
      const result = await effect.perform!(context({ output: { ticket: 'a\uD800b' } }));

      // Assert
      expect(result).toMatchObject({ kind: 'rejected', class: 'url_template' });
      expect(received).toHaveLength(0);
    });

    it('is done on a 2xx, with the receipt taken from the answer by JSON pointer', async () => {
      // Arrange
      answer = () => ({ status: 201, body: { id: 'c-42', meta: { seq: 7, 'a/b': true } } });
      const effect = createHttpEffect(declared({ receipt: { commentId: '/id', seq: '/meta/seq', slashed: '/meta/a~1b' } }), {});

      // Act
      const result = await effect.perform!(context());

      // Assert
      expect(result).toEqual({ kind: 'done', receipt: { commentId: 'c-42', seq: 7, slashed: true } });
      expect(received).toHaveLength(1);
      expect(received[0]).toMatchObject({ method: 'POST', url: '/tickets', body: { ticket: 'T-7', text: 'We are on it.' } });
      expect(received[0]!.headers['content-type']).toBe('application/json');
    });

    it('renders the body as JSON values: a lone placeholder keeps its type, text around one makes a string', async () => {
      // Arrange
      const effect = createHttpEffect(
        declared({
          method: 'PUT',
          body: {
            priority: '{{input.priority}}',
            tags: '{{input.tags}}',
            escalate: '{{output.escalate}}',
            whole: '{{output}}',
            subject: 'Ticket {{input.ticketId}} ({{job.operation}}, job {{job.id}})',
            key: '{{key}}',
            list: ['{{input.ticketId}}', 3, null],
          },
        }),
        {},
      );

      // Act
      await effect.perform!(context());

      // Assert
      expect(received[0]!.method).toBe('PUT');
      expect(received[0]!.body).toEqual({
        priority: 2,
        tags: ['vip'],
        escalate: false,
        whole: { reply: 'We are on it.', escalate: false },
        subject: 'Ticket T-7 (support.reply, job job-1)',
        key: 'onceflow-job-1-ticket.comment',
        list: ['T-7', 3, null],
      });
    });

    it('sends nothing and is rejected when the body names a value the job does not have', async () => {
      // Arrange
      const effect = createHttpEffect(declared({ body: { assignee: '{{output.assignee}}' } }), {});

      // Act
      const result = await effect.perform!(context());

      // Assert
      expect(result).toMatchObject({ kind: 'rejected', class: 'body_template' });
      expect((result as { detail: string }).detail).toContain('output.assignee');
      expect(received).toHaveLength(0);
    });

    it('refuses at creation a placeholder outside input, output, job.id, job.operation and key', () => {
      // Act / Assert
      expect(() => createHttpEffect(declared({ body: { x: '{{inptu.ticketId}}' } }), {})).toThrow(/ticket\.comment.*inptu\.ticketId/);
      expect(() => createHttpEffect(declared({ body: { x: '{{job.secret}}' } }), {})).toThrow(HttpEffectDeclarationError);
    });

    it('is rejected on another 4xx', async () => {
      // Arrange
      answer = () => ({ status: 422, body: { error: 'bad ticket' } });

      // Act
      const result = await createHttpEffect(declared(), {}).perform!(context());

      // Assert
      expect(result).toMatchObject({ kind: 'rejected', class: 'rejected', detail: expect.stringContaining('422') });
    });

    it('is not performed on a 429, and honours its Retry-After', async () => {
      // Arrange
      answer = () => ({ status: 429, headers: { 'retry-after': '7' } });

      // Act
      const result = await createHttpEffect(declared(), {}).perform!(context());

      // Assert
      expect(result).toMatchObject({ kind: 'not_performed', class: 'rate_limited', retryAfterMs: 7_000 });
    });

    it('reads a Retry-After given as an HTTP date', async () => {
      // Arrange
      answer = () => ({ status: 429, headers: { 'retry-after': new Date(Date.now() + 10_000).toUTCString() } });

      // Act
      const result = await createHttpEffect(declared(), {}).perform!(context());

      // Assert
      expect(result.kind).toBe('not_performed');
      expect((result as { retryAfterMs?: number }).retryAfterMs).toBeGreaterThan(8_000);
      expect((result as { retryAfterMs?: number }).retryAfterMs).toBeLessThanOrEqual(10_000);
    });

    it.each([500, 502, 504])('is ambiguous on a %i', async (status) => {
      // Arrange
      answer = () => ({ status });

      // Act
      const result = await createHttpEffect(declared(), {}).perform!(context());

      // Assert
      expect(result).toMatchObject({ kind: 'ambiguous', class: 'server_error' });
    });

    it('is ambiguous when the connection is reset after the request was read', async () => {
      // Arrange
      answer = () => 'reset';

      // Act
      const result = await createHttpEffect(declared(), {}).perform!(context());

      // Assert
      expect(received).toHaveLength(1);
      expect(result).toMatchObject({ kind: 'ambiguous', class: 'connection_lost' });
    });

    it('is ambiguous when no answer comes within the timeout', async () => {
      // Arrange
      answer = () => 'hang';

      // Act
      const result = await createHttpEffect(declared({ timeoutMs: 150 }), {}).perform!(context());

      // Assert
      expect(result).toMatchObject({ kind: 'ambiguous', class: 'timeout' });
    });

    it('is not performed when the connection is refused', async () => {
      // Arrange
      const closed = await freePortUrl();

      // Act
      const result = await createHttpEffect(declared({ url: `${closed}/tickets` }), {}).perform!(context());

      // Assert
      expect(result).toMatchObject({ kind: 'not_performed', class: 'refused' });
    });

    it('sends the same key on every try, in the header the declaration names', async () => {
      // Arrange
      answer = (request) => (received.length === 1 ? { status: 503 } : { status: 200, body: { id: `c-${request.headers['x-request-key'] as string}` } });
      const effect = createHttpEffect(declared({ idempotencyHeader: 'X-Request-Key' }), {});

      // Act
      const first = await effect.perform!(context());
      const second = await effect.perform!(context());

      // Assert
      expect(first.kind).toBe('ambiguous');
      expect(second).toEqual({ kind: 'done', receipt: { commentId: 'c-onceflow-job-1-ticket.comment' } });
      expect(received.map((r) => r.headers['x-request-key'])).toEqual(['onceflow-job-1-ticket.comment', 'onceflow-job-1-ticket.comment']);
      expect(received[0]!.headers['idempotency-key']).toBeUndefined();
    });

    it('sends the key as Idempotency-Key by default', async () => {
      // Act
      await createHttpEffect(declared(), {}).perform!(context());

      // Assert
      expect(received[0]!.headers['idempotency-key']).toBe('onceflow-job-1-ticket.comment');
    });

    it('follows the declared status lists: 409 on a repeated key is done, 503 is not performed', async () => {
      // Arrange
      const effect = createHttpEffect(declared({ statuses: { done: ['2xx', '409'], notPerformed: ['429', '503'] } }), {});

      // Act
      answer = () => ({ status: 409, body: { id: 'c-first' } });
      const repeated = await effect.perform!(context());
      answer = () => ({ status: 503, headers: { 'retry-after': '2' } });
      const unavailable = await effect.perform!(context());

      // Assert
      expect(repeated).toEqual({ kind: 'done', receipt: { commentId: 'c-first' } });
      expect(unavailable).toMatchObject({ kind: 'not_performed', retryAfterMs: 2_000 });
    });

    it('takes a 3xx as ambiguous (it proves nothing), unless the declaration classifies it', async () => {
      // Arrange: a downstream that answers a create (or a repeated key) with 303 See Other
      answer = () => ({ status: 303, headers: { location: '/tickets/c-1' } });
      const byDefault = createHttpEffect(declared(), {});
      const declaredDone = createHttpEffect(declared({ statuses: { done: ['2xx', '303'] }, receipt: undefined }), {});
      const declaredRejected = createHttpEffect(declared({ statuses: { rejected: ['3xx'] } }), {});

      // Act
      const results = [await byDefault.perform!(context()), await declaredDone.perform!(context()), await declaredRejected.perform!(context())];

      // Assert
      expect(results[0]).toMatchObject({ kind: 'ambiguous', class: 'redirect', detail: expect.stringContaining('303') });
      expect(results[1]).toEqual({ kind: 'done', receipt: { status: 303 } });
      expect(results[2]).toMatchObject({ kind: 'rejected' });
    });

    it('lets an exact code in one list win over a range in another', async () => {
      // Arrange
      answer = () => ({ status: 404 });
      const effect = createHttpEffect(declared({ statuses: { rejected: ['4xx'], ambiguous: ['404'] } }), {});

      // Act
      const result = await effect.perform!(context());

      // Assert
      expect(result.kind).toBe('ambiguous');
    });

    it('refuses at creation a status in two lists, or one that is not a code or range', () => {
      // Act / Assert
      expect(() => createHttpEffect(declared({ statuses: { done: ['409'], rejected: ['409'] } }), {})).toThrow(/409/);
      expect(() => createHttpEffect(declared({ statuses: { done: ['2xx'], ambiguous: ['2XX'] } }), {})).toThrow(/2xx/i);
      expect(() => createHttpEffect(declared({ statuses: { done: ['20'] } }), {})).toThrow(/"20"/);
    });

    it('does not settle on a 2xx whose answer lacks a receipt field: it is ambiguous, naming the field', async () => {
      // Arrange
      answer = () => ({ status: 201, body: { other: 'x', nested: { id: 5 } } });

      // Act
      const missing = await createHttpEffect(declared(), {}).perform!(context());
      const notScalar = await createHttpEffect(declared({ receipt: { commentId: '/nested' } }), {}).perform!(context());

      // Assert
      expect(missing).toMatchObject({ kind: 'ambiguous', class: 'bad_receipt', detail: expect.stringContaining('commentId') });
      expect(notScalar).toMatchObject({ kind: 'ambiguous', class: 'bad_receipt', detail: expect.stringContaining('/nested') });
    });

    it('takes a 2xx as done with its status as the receipt when no receipt is declared', async () => {
      // Arrange
      answer = () => ({ status: 204 });

      // Act
      const result = await createHttpEffect(declared({ receipt: undefined }), {}).perform!(context());

      // Assert
      expect(result).toEqual({ kind: 'done', receipt: { status: 204 } });
    });

    it('posts jobId, operation and output when no body is declared', async () => {
      // Act
      await createHttpEffect(declared({ body: undefined }), {}).perform!(context());

      // Assert
      expect(received[0]!.body).toEqual({ jobId: 'job-1', operation: 'support.reply', output: { reply: 'We are on it.', escalate: false } });
    });
  });

  describe('the environment', () => {
    const SECRET = 'xoxb-very-secret-token-123';
    const HOOK = 'T000/B000/hook-secret-path';

    it('resolves ${ENV} in the URL and the headers at creation', async () => {
      // Arrange
      const effect = createHttpEffect(declared({ url: '${TICKETS_URL}/tickets/${HOOK_PATH}', headers: { Authorization: 'Bearer ${TICKETS_TOKEN}' } }), {
        TICKETS_URL: baseUrl,
        HOOK_PATH: 'h1',
        TICKETS_TOKEN: SECRET,
      });

      // Act
      await effect.perform!(context());

      // Assert
      expect(received[0]!.url).toBe('/tickets/h1');
      expect(received[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    });

    it('refuses an unset variable, naming the effect and the variable', () => {
      // Act / Assert
      expect(() => createHttpEffect(declared({ headers: { Authorization: 'Bearer ${TICKETS_TOKEN}' } }), {})).toThrow(
        new HttpEffectDeclarationError('ticket.comment', 'the environment variable TICKETS_TOKEN is not set'),
      );
      expect(() => createHttpEffect(declared({ lookup: { url: '${LOOKUP_URL}/{{key}}' } }), {})).toThrow(/ticket\.comment.*LOOKUP_URL/);
    });

    it('keeps the secrets out of errors and results', async () => {
      // Arrange
      const closed = await freePortUrl();
      const env = { BASE: closed, HOOK_PATH: HOOK, TOKEN: SECRET, BAD: `${SECRET}\nInjected: 1` };

      // Act
      const refused = await createHttpEffect(declared({ url: '${BASE}/hooks/${HOOK_PATH}', headers: { Authorization: 'Bearer ${TOKEN}' } }), env).perform!(context());
      const badHeader = catchError(() => createHttpEffect(declared({ headers: { Authorization: 'Bearer ${BAD}' } }), env));
      const badUrl = catchError(() => createHttpEffect(declared({ url: 'not a url/${HOOK_PATH}' }), env));
      answer = () => 'hang';
      const timedOut = await createHttpEffect(declared({ url: `${baseUrl}/hooks/\${HOOK_PATH}`, timeoutMs: 100 }), env).perform!(context());

      // Assert
      expect(refused.kind).toBe('not_performed');
      expect(timedOut.kind).toBe('ambiguous');
      for (const text of [JSON.stringify(refused), JSON.stringify(timedOut), badHeader.message, badUrl.message]) {
        expect(text).not.toContain(SECRET);
        expect(text).not.toContain(HOOK);
      }
      expect(badHeader.message).toMatch(/ticket\.comment.*Authorization/);
      expect(badUrl.message).toMatch(/ticket\.comment.*URL/);
    });
  });

  describe('looking a receipt up', () => {
    const withLookup = (lookup: HttpEffectDeclaration['lookup']) => createHttpEffect(declared({ lookup }), {});

    it('finds the receipt by key, URL-encoded, with the lookup receipt pointers', async () => {
      // Arrange
      answer = () => ({ status: 200, body: { comment: { id: 'c-9' } } });
      const effect = withLookup({ url: `${baseUrl}/comments/by-key/{{key}}`, receipt: { commentId: '/comment/id' } });

      // Act
      const result = await effect.lookup!('k/1 ?', context({ key: 'k/1 ?' }));

      // Assert
      expect(result).toEqual({ found: true, receipt: { commentId: 'c-9' } });
      expect(received[0]).toMatchObject({ method: 'GET', url: '/comments/by-key/k%2F1%20%3F' });
      expect(received[0]!.headers['idempotency-key']).toBeUndefined();
    });

    it('uses the declaration headers and the perform receipt pointers when the lookup declares none', async () => {
      // Arrange
      answer = () => ({ status: 200, body: { id: 'c-10' } });
      const effect = createHttpEffect(declared({ headers: { Authorization: 'Bearer ${T}' }, lookup: { url: `${baseUrl}/c?key={{key}}`, method: 'POST' } }), { T: 'tok' });

      // Act
      const result = await effect.lookup!('k-1', context({ key: 'k-1' }));

      // Assert
      expect(result).toEqual({ found: true, receipt: { commentId: 'c-10' } });
      expect(received[0]).toMatchObject({ method: 'POST', url: '/c?key=k-1' });
      expect(received[0]!.headers.authorization).toBe('Bearer tok');
    });

    it('says not found on a 404, or on the declared notFound statuses', async () => {
      // Arrange
      const byDefault = withLookup({ url: `${baseUrl}/c/{{key}}` });
      const declaredNotFound = withLookup({ url: `${baseUrl}/c/{{key}}`, found: ['200'], notFound: ['404', '410'] });

      // Act
      answer = () => ({ status: 404 });
      const missing = await byDefault.lookup!('k', context());
      answer = () => ({ status: 410 });
      const gone = await declaredNotFound.lookup!('k', context());

      // Assert
      expect(missing).toEqual({ found: false });
      expect(gone).toEqual({ found: false });
    });

    it('throws on any other status, so nothing is concluded', async () => {
      // Arrange
      answer = () => ({ status: 500 });
      const effect = withLookup({ url: `${baseUrl}/c/{{key}}` });

      // Act / Assert
      await expect(effect.lookup!('k', context())).rejects.toThrow(/ticket\.comment.*500/);
    });

    it('throws when a found answer lacks a receipt field', async () => {
      // Arrange
      answer = () => ({ status: 200, body: {} });
      const effect = withLookup({ url: `${baseUrl}/c/{{key}}` });

      // Act / Assert
      await expect(effect.lookup!('k', context())).rejects.toThrow(/commentId/);
    });

    it('throws when the downstream cannot be reached, without its URL in the message', async () => {
      // Arrange
      const closed = await freePortUrl();
      const effect = createHttpEffect(declared({ lookup: { url: '${BASE}/hooks/${HOOK}/{{key}}' } }), { BASE: closed, HOOK: 'lookup-secret-path' });

      // Act
      const error = await effect.lookup!('k', context()).catch((err: Error) => err);

      // Assert
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/ticket\.comment/);
      expect((error as Error).message).not.toContain('lookup-secret-path');
    });

    it('has no lookup when none is declared, and is repeat-safe exactly when the downstream deduplicates', () => {
      // Act
      const plain = createHttpEffect(declared(), {});
      const deduplicating = createHttpEffect(declared({ deduplicates: true }), {});

      // Assert
      expect(plain.lookup).toBeUndefined();
      expect(plain.repeatSafe).toBe(false);
      expect(deduplicating.repeatSafe).toBe(true);
      expect(deduplicating.name).toBe('ticket.comment');
    });
  });
});

function catchError(run: () => unknown): Error {
  try {
    run();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}
