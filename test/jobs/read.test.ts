import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { createRegistry } from '../../src/operations/registry';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

// The demo file's support.reply (operations/demo.yaml).
const supportReply = createRegistry().get('support.reply')!;

// A second operation, to show that one key under two operations is two jobs.
const supportTag = {
  ...supportReply,
  name: 'support.tag',
  description: 'Tag a ticket',
  input: Type.Object({ ticketId: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  // One version: this input, not support.reply's.
  versions: undefined,
  example: { ticketId: 'T-1' },
};

describe('reading jobs', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ operations: createRegistry([supportReply, supportTag as never]) });
  });
  afterAll(() => stack.close());

  const submit = (key: string, apiKey: string = KEYS.alice, body: object = { operation: 'support.reply', input: { ticketId: 'T-7', customerMessage: 'Hi', channel: 'chat' } }) =>
    stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(apiKey), 'idempotency-key': key }, payload: body });
  const get = (url: string, apiKey: string) => stack.app.inject({ method: 'GET', url, headers: auth(apiKey) });

  it('shows a job to its principal by id and by scope', async () => {
    // Arrange
    const key = `mine-${randomUUID()}`;
    const created = (await submit(key)).json();

    // Act
    const byId = await get(`/v1/jobs/${created.id}`, KEYS.alice);
    const byScope = await get(`/v1/jobs?operation=support.reply&idempotencyKey=${encodeURIComponent(key)}`, KEYS.alice);

    // Assert
    expect(byId.statusCode).toBe(200);
    expect(byId.json().id).toBe(created.id);
    expect(byScope.statusCode).toBe(200);
    expect(byScope.json().id).toBe(created.id);
    expect(byId.json().links).toEqual({
      self: `/v1/jobs/${created.id}`,
      temporalUi: expect.stringContaining(`/namespaces/${stack.temporal.namespace}/workflows/${encodeURIComponent(created.workflowId)}`),
    });
  });

  it('answers 404, not 403, when another principal asks by id or by scope', async () => {
    // Arrange
    const key = `walled-${randomUUID()}`;
    const created = (await submit(key)).json();

    // Act
    const byId = await get(`/v1/jobs/${created.id}`, KEYS.bob);
    const byScope = await get(`/v1/jobs?operation=support.reply&idempotencyKey=${encodeURIComponent(key)}`, KEYS.bob);
    const missing = await get(`/v1/jobs/${randomUUID()}`, KEYS.bob);

    // Assert: bob cannot tell alice's job from a job that does not exist.
    expect(byId.statusCode).toBe(404);
    expect(byScope.statusCode).toBe(404);
    expect(byId.json()).toEqual(missing.json());
  });

  it('lets an operator read any job', async () => {
    const created = (await submit(`op-${randomUUID()}`)).json();
    const response = await get(`/v1/jobs/${created.id}`, KEYS.operator);
    expect(response.statusCode).toBe(200);
    expect(response.json().id).toBe(created.id);
  });

  it('answers 400 naming the id for an id that is not a UUID, as the document says (format: uuid)', async () => {
    const response = await get('/v1/jobs/not-a-uuid', KEYS.alice);
    expect(response.statusCode).toBe(400);
    expect(response.json().errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/id']);
  });

  it('answers 400 for a scope lookup without its parameters', async () => {
    const response = await get('/v1/jobs?operation=support.reply', KEYS.alice);
    expect(response.statusCode).toBe(400);
    expect(response.json().errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/idempotencyKey']);
  });

  it('treats one key under two operations as two jobs', async () => {
    // Arrange
    const key = `two-ops-${randomUUID()}`;

    // Act
    const reply = await submit(key);
    const tag = await submit(key, KEYS.alice, { operation: 'support.tag', input: { ticketId: 'T-7' } });

    // Assert
    expect(reply.statusCode).toBe(202);
    expect(tag.statusCode).toBe(202);
    expect(tag.json().id).not.toBe(reply.json().id);
  });

  it('waits with Prefer: wait=N and answers a job that became terminal with 200', async () => {
    // Act
    const response = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': `wait-${randomUUID()}`, prefer: 'wait=20' },
      payload: { operation: 'support.reply', input: { ticketId: 'T-8', customerMessage: 'Hi', channel: 'chat' } },
    });

    // Assert
    expect(response.statusCode).toBe(200);
    expect(response.headers['preference-applied']).toBe('wait=20');
    expect(response.json().status).toBe('succeeded');
  });

  it('serves an OpenAPI document that lists the job routes and their problem responses', async () => {
    const doc = (await stack.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/jobs', '/v1/jobs/{id}']));
    expect(Object.keys(doc.paths['/v1/jobs'].post.responses)).toEqual(expect.arrayContaining(['200', '202', '400', '409', '413', '415', '429']));
    expect((await stack.app.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(200);
  });

  it('reports readiness of Postgres and Temporal', async () => {
    const response = await stack.app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(response.json().checks).toEqual({ postgres: 'ok', temporal: 'ok' });
  });
});
