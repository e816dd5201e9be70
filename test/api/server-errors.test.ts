import { randomUUID } from 'node:crypto';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

/**
 * A 5xx tells the client whether trying again can help: 503 with Retry-After
 * when a dependency is unreachable, 500 for a failure that may well happen
 * again the same way, never presented as retryable.
 */
describe('server errors', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());
  afterEach(() => jest.restoreAllMocks());

  const readJob = () => stack.app.inject({ method: 'GET', url: `/v1/jobs/${randomUUID()}`, headers: auth(KEYS.alice) });

  it('answers an unexpected failure with 500 problem+json that does not promise a retry will help', async () => {
    // Arrange
    jest.spyOn(stack.db.pool, 'query').mockImplementationOnce(() => Promise.reject(new TypeError('cannot read properties of undefined')));

    // Act
    const response = await readJob();

    // Assert
    expect(response.statusCode).toBe(500);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json().type).toMatch(/\/internal$/);
    expect(response.json().detail).not.toMatch(/retry|safe/i);
    expect(response.headers['retry-after']).toBeUndefined();
    expect(response.body).not.toContain('cannot read properties');
  });

  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['a database shutting down (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['a connection exception (08006)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['too many connections (53300)', Object.assign(new Error('sorry, too many clients already'), { code: '53300' })],
    ['a connection lost mid-query', new Error('Connection terminated unexpectedly')],
    ['a pool that cannot connect in time', new Error('timeout exceeded when trying to connect')],
  ])('answers %s with 503, Retry-After and the promise that the same key is safe to retry', async (_name, error) => {
    // Arrange
    jest.spyOn(stack.db.pool, 'query').mockImplementationOnce(() => Promise.reject(error));

    // Act
    const response = await readJob();

    // Assert
    expect(response.statusCode).toBe(503);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json().type).toMatch(/\/service-unavailable$/);
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    expect(response.json().detail).toMatch(/retry/i);
    expect(response.body).not.toContain('5432');
  });
});
