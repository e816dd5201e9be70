import { randomUUID } from 'node:crypto';
import { validate } from '@readme/openapi-parser';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

type Json = Record<string, any>;

/** The document's regular expressions, matched as JSON Schema matches them (by code point, unanchored). */
const matches = (pattern: string, value: string): boolean => new RegExp(pattern, 'u').test(value);

/**
 * The OpenAPI document is the contract: it validates, and it says what the
 * server does, so a client generated from it (or a fuzzer) can use the API.
 */
describe('the OpenAPI document', () => {
  let stack: TestStack;
  let doc: Json;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    doc = (await stack.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  afterAll(() => stack.close());

  const operations = (): Array<{ path: string; method: string; operation: Json }> =>
    Object.entries<Json>(doc.paths).flatMap(([path, methods]) => Object.entries<Json>(methods).map(([method, operation]) => ({ path, method, operation })));
  const byId = (operationId: string): Json => {
    const found = operations().find((o) => o.operation.operationId === operationId);
    if (!found) throw new Error(`no operation ${operationId}`);
    return found.operation;
  };
  const resolve = (ref: string): Json => ref.replace('#/', '').split('/').reduce((node: Json, part) => node[part], doc);

  it('is a valid OpenAPI 3.1 document', async () => {
    // Act
    const result = await validate(structuredClone(doc) as Parameters<typeof validate>[0]);

    // Assert
    expect(result).toMatchObject({ valid: true });
    expect(doc.openapi).toBe('3.1.0');
  });

  it('lists every route the server answers, each with its own operationId', () => {
    // Act
    const documented = new Set(operations().map((o) => `${o.method.toUpperCase()} ${o.path}`));

    // Assert
    for (const expected of [
      'POST /v1/jobs',
      'GET /v1/jobs',
      'GET /v1/jobs/{id}',
      'POST /v1/jobs/{id}/cancel',
      'POST /v1/jobs/{id}/attempts/{attemptId}/resolution',
      'POST /v1/jobs/{id}/effects/{name}/resolution',
      'GET /v1/providers',
      'POST /v1/providers/verify',
      'GET /v1/routes',
      'POST /v1/routes/{operation}/canaries',
      'POST /v1/routes/{operation}/canaries/{version}/promote',
      'POST /v1/routes/{operation}/canaries/{version}/stop',
      'POST /v1/routes/{operation}/canaries/{version}/rollback',
      'GET /healthz',
      'GET /readyz',
      'GET /metrics',
      'GET /openapi.json',
      'GET /docs',
    ]) {
      expect(documented).toContain(expected);
    }
    expect(new Set(operations().map((o) => o.operation.operationId)).size).toBe(operations().length);
  });

  it("describes the submit body per operation, from each operation's own input schema, discriminated by operation", () => {
    // Act
    const body = byId('submitJob').requestBody.content['application/json'].schema;

    // Assert
    expect(body.discriminator).toEqual({
      propertyName: 'operation',
      mapping: {
        'support-chat': '#/components/schemas/SubmitJob.support-chat',
        'support.reply': '#/components/schemas/SubmitJob.support.reply',
        'ticket.summarize': '#/components/schemas/SubmitJob.ticket.summarize',
      },
    });
    expect(body.oneOf).toEqual([
      { $ref: '#/components/schemas/SubmitJob.support.reply' },
      { $ref: '#/components/schemas/SubmitJob.ticket.summarize' },
      { $ref: '#/components/schemas/SubmitJob.support-chat' },
    ]);
    const summarize = resolve(body.oneOf[1].$ref);
    expect(summarize.properties.operation).toEqual({ type: 'string', const: 'ticket.summarize' });
    expect(summarize.properties.input).toMatchObject({ additionalProperties: false, required: ['ticketId', 'text'] });
    const branch = resolve(body.oneOf[0].$ref);
    expect(branch.properties.operation).toEqual({ type: 'string', const: 'support.reply' });
    expect(branch.properties.input).toMatchObject({ additionalProperties: false, required: ['ticketId', 'customerMessage', 'channel'] });
    expect(branch.properties.input.properties.ticketId).toMatchObject({ type: 'string', minLength: 1, maxLength: 64 });
    expect(branch.examples[0]).toEqual({ operation: 'support.reply', input: expect.objectContaining({ ticketId: expect.any(String) }) });
  });

  it('accepts the example of every operation as a new job', async () => {
    // Arrange
    const branches = byId('submitJob').requestBody.content['application/json'].schema.oneOf.map((ref: { $ref: string }) => resolve(ref.$ref));

    // Act
    const responses = await Promise.all(
      branches.map((branch: any) => stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() }, payload: branch.examples[0] })),
    );

    // Assert
    expect(responses.map((response) => response.statusCode)).toEqual([202, 202, 202]);
  });

  it('documents every error as application/problem+json with the Problem schema, and 500 and 503 on every route', () => {
    for (const { path, method, operation } of operations()) {
      const statuses = Object.keys(operation.responses);
      expect({ route: `${method} ${path}`, has500and503: ['500', '503'].every((s) => statuses.includes(s)) }).toEqual({ route: `${method} ${path}`, has500and503: true });
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        expect({ route: `${method} ${path} ${status}`, content: operation.responses[status].content }).toEqual({
          route: `${method} ${path} ${status}`,
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        });
      }
    }
    expect(doc.components.schemas.Problem.required).toEqual(['type', 'title', 'status', 'detail']);
  });

  it.each([
    ['submitJob', ['200', '202', '400', '401', '403', '408', '409', '413', '415', '429']],
    ['getJob', ['200', '400', '401', '404', '414', '429']],
    ['findJob', ['200', '400', '401', '403', '404', '429']],
    ['cancelJob', ['200', '400', '401', '404', '409', '413', '414', '415', '429']],
    ['resolveAttempt', ['200', '400', '401', '403', '404', '409', '413', '415', '429']],
    ['resolveEffect', ['200', '400', '401', '403', '404', '409', '413', '415', '429']],
    ['listProviders', ['200', '401', '403', '429']],
    ['verifyProviders', ['200', '400', '401', '403', '404', '413', '415', '429']],
    ['listRoutes', ['200', '401', '403', '429']],
    ['startCanary', ['201', '400', '401', '403', '404', '409', '413', '415', '429']],
    ['promoteCanary', ['200', '400', '401', '403', '404', '409', '413', '415', '429']],
    ['stopCanary', ['200', '400', '401', '403', '404', '409', '413', '415', '429']],
    ['rollbackCanary', ['200', '400', '401', '403', '404', '409', '413', '415', '429']],
    ['ready', ['200', '503']],
  ])('lists the statuses %s can answer', (operationId, statuses) => {
    expect(Object.keys(byId(operationId).responses)).toEqual(expect.arrayContaining(statuses));
  });

  it('documents the response headers: Location, Idempotent-Replayed, Preference-Applied, Retry-After, WWW-Authenticate', () => {
    // Act
    const submit = byId('submitJob').responses;
    const read = byId('getJob').responses;

    // Assert
    expect(submit['202'].headers.Location).toMatchObject({ required: true, schema: { type: 'string' } });
    expect(submit['200'].headers.Location).toMatchObject({ required: true });
    expect(submit['200'].headers['Idempotent-Replayed']).toMatchObject({ schema: { enum: ['true'] } });
    expect(submit['202'].headers['Preference-Applied']).toBeDefined();
    expect(submit['429'].headers['Retry-After']).toMatchObject({ required: true });
    expect(read['401'].headers['WWW-Authenticate']).toMatchObject({ required: true, schema: { enum: ['Bearer'] } });
    expect(read['503'].headers['Retry-After']).toBeDefined();
  });

  it('requires Idempotency-Key on submit, with its length and characters', () => {
    const header = byId('submitJob').parameters.find((p: Json) => p.in === 'header' && p.name === 'Idempotency-Key');
    expect(header).toMatchObject({ required: true, schema: { type: 'string', minLength: 1, maxLength: 255, pattern: expect.any(String) } });
  });

  it('types ids as UUIDs, in paths and in the job', () => {
    const pathIds = operations().flatMap(({ operation }) => (operation.parameters ?? []).filter((p: Json) => p.in === 'path' && /id$/i.test(p.name)));
    expect(pathIds.length).toBeGreaterThanOrEqual(5);
    for (const parameter of pathIds) expect(parameter.schema.format).toBe('uuid');
    expect(doc.components.schemas.Job.properties.id.format).toBe('uuid');
  });

  it('marks the public routes as needing no authentication, and every other route as bearer', () => {
    for (const { path, operation } of operations()) {
      const isPublic = ['/healthz', '/readyz', '/metrics', '/docs', '/openapi.json'].includes(path);
      expect({ path, security: operation.security }).toEqual({ path, security: isPublic ? [] : undefined });
    }
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
  });

  it('links a submitted job to reading it by id and by key and to cancelling it', () => {
    for (const status of ['200', '202']) {
      const links = byId('submitJob').responses[status].links;
      expect(Object.values<Json>(links).map((link) => link.operationId).sort()).toEqual(['cancelJob', 'findJob', 'getJob']);
      for (const link of Object.values<Json>(links)) {
        const target = byId(link.operationId);
        const names = (target.parameters ?? []).map((p: Json) => p.name);
        expect(names).toEqual(expect.arrayContaining(Object.keys(link.parameters)));
      }
    }
  });

  it("documents the operators' list on GET /v1/jobs: its parameters, the page, the Link header and 403", () => {
    // Arrange
    const find = byId('findJob');
    const parameter = (name: string): Json => find.parameters.find((p: Json) => p.name === name && p.in === 'query');

    // Assert
    expect(parameter('status').schema.enum).toEqual(['accepted', 'running', 'awaiting_resolution', 'succeeded', 'failed', 'cancelled', 'needs_review']);
    for (const name of ['operation', 'idempotencyKey', 'status', 'principal', 'cursor', 'limit']) expect(parameter(name).required).toBeFalsy();
    expect(matches(parameter('limit').schema.pattern, '200')).toBe(true);
    expect(matches(parameter('limit').schema.pattern, '201')).toBe(false);
    expect(matches(parameter('limit').schema.pattern, '0')).toBe(false);
    const ok = find.responses['200'];
    expect(ok.headers.Link.schema.type).toBe('string');
    expect(ok.content['application/json'].schema.anyOf.map((branch: Json) => branch.$ref)).toEqual(['#/components/schemas/Job', '#/components/schemas/JobPage']);
    expect(doc.components.schemas.JobPage.required).toEqual(['jobs']);
    expect(Object.keys(find.responses)).toEqual(expect.arrayContaining(['400', '403', '404']));
  });

  it('gives examples for the submit body, its headers, problems and the job', () => {
    const headers = byId('submitJob').parameters;
    expect(headers.every((p: Json) => p.example !== undefined || p.examples !== undefined)).toBe(true);
    expect(doc.components.schemas.Job.examples).toHaveLength(1);
    expect(doc.components.schemas.Problem.examples).toHaveLength(1);
  });

  describe('patterns the server applies exactly', () => {
    const keyPattern = () => byId('submitJob').parameters.find((p: Json) => p.name === 'Idempotency-Key').schema;
    const badWait = () => byId('submitJob').parameters.find((p: Json) => p.name === 'Prefer').schema.not.pattern;
    const submitWith = (headers: Record<string, string>) =>
      stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID(), ...headers }, payload: { operation: 'no.such', input: {} } });

    /** Short strings from an alphabet that hits every branch of the Prefer grammar, from a fixed seed. */
    function* preferSamples(): Generator<string> {
      yield* ['wait=10', 'wait=60', 'wait=61', 'wait=abc', 'WAIT=5', 'respond-async', 'respond-async, wait=5', 'wait="10"', 'wait = 60', 'wait=060', 'wait=', 'wait="', 'waiting=5'];
      yield* ['xwait=abc', 'wait=1, wait=x', 'wait=5;foo=bar', 'return=minimal; wait=99', 'wait=0', 'wait=600', 'wait=\t7', 'wait=1e1', 'wait="10x"', 'wait="1"wait=x'];
      const alphabet = ['wait', 'Wait', '=', '"', ';', ',', ' ', '\t', '0', '1', '6', '5', 'x', 'wait='];
      let seed = 20240611;
      const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
      for (let i = 0; i < 400; i++) yield Array.from({ length: 1 + (next() % 7) }, () => alphabet[next() % alphabet.length]).join('');
    }

    it('refuses a Prefer header exactly when the document says a wait is not 0 to 60', async () => {
      const disagreements: string[] = [];
      for (const prefer of preferSamples()) {
        // Header values reach the server trimmed; compare what it sees.
        const value = prefer.trim();
        if (value === '') continue;
        const refused = (await submitWith({ prefer: value })).json().type.endsWith('/invalid-preference');
        if (refused !== matches(badWait(), value)) disagreements.push(`${JSON.stringify(value)}: server ${refused ? 'refused' : 'took'} it`);
      }
      expect(disagreements).toEqual([]);
    });

    it('takes an Idempotency-Key exactly when the document does', async () => {
      const samples = ['a', 'click-1', ' a', 'a ', 'a b', '~', 'k'.repeat(255), 'k'.repeat(256), 'clé', 'tab\there', '"quoted"', 'x'.repeat(254) + ' '];
      const disagreements: string[] = [];
      for (const key of samples) {
        const type: string = (await submitWith({ 'idempotency-key': key })).json().type;
        const taken = !/(invalid|missing)-idempotency-key$/.test(type);
        const schema = keyPattern();
        const documented = key.length >= schema.minLength && key.length <= schema.maxLength && matches(schema.pattern, key);
        if (taken !== documented) disagreements.push(`${JSON.stringify(key)}: server ${taken ? 'took' : 'refused'} it`);
      }
      expect(disagreements).toEqual([]);
    });
  });
});
