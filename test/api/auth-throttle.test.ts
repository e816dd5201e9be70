import { randomUUID } from 'node:crypto';
import { AuthThrottle } from '../../src/api/auth-throttle';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';

/**
 * Wrong keys are throttled per client address. While an address is refused,
 * valid keys from it are refused too: otherwise the one answer that is not a
 * 429 would tell a guesser its guess was right.
 */
describe('throttling failed authentication per client address', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_AUTH_FAILURES_PER_WINDOW: '3', ONCEFLOW_AUTH_FAILURE_WINDOW_MS: '60000' } });
  });
  afterAll(() => stack.close());

  const read = (remoteAddress: string, authorization?: string) =>
    stack.app.inject({ method: 'GET', url: `/v1/jobs/${randomUUID()}`, remoteAddress, headers: authorization === undefined ? {} : { authorization } });

  it('answers 429 with Retry-After once an address has sent too many wrong or missing keys', async () => {
    // Arrange
    const address = '127.0.0.2';
    const failures = [await read(address, 'Bearer wrong-1'), await read(address), await read(address, 'Bearer wrong-3')];

    // Act
    const next = await read(address, 'Bearer wrong-4');

    // Assert
    expect(failures.map((r) => r.statusCode)).toEqual([401, 401, 401]);
    expect(next.statusCode).toBe(429);
    expect(next.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(next.json().type).toMatch(/\/rate-limited$/);
    expect(Number(next.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(next.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('refuses a valid key from a refused address too, so a right guess looks like a wrong one', async () => {
    // Arrange
    const address = '127.0.0.3';
    for (let i = 0; i < 3; i++) await read(address, `Bearer guess-${i}`);

    // Act
    const valid = await read(address, `Bearer ${KEYS.alice}`);

    // Assert
    expect(valid.statusCode).toBe(429);
  });

  it('keeps serving valid keys from other addresses', async () => {
    // Arrange
    const address = '127.0.0.4';
    for (let i = 0; i < 4; i++) await read(address, `Bearer guess-${i}`);

    // Act
    const elsewhere = await read('127.0.0.5', `Bearer ${KEYS.alice}`);

    // Assert
    expect(elsewhere.statusCode).toBe(404);
  });

  it('does not forget failures when a valid key succeeds in between: one valid key buys no more guesses', async () => {
    // Arrange
    const address = '127.0.0.7';
    await read(address, 'Bearer guess-1');
    await read(address, 'Bearer guess-2');
    await read(address, `Bearer ${KEYS.alice}`);
    await read(address, 'Bearer guess-3');

    // Act
    const response = await read(address, `Bearer ${KEYS.alice}`);

    // Assert
    expect(response.statusCode).toBe(429);
  });

  it('does not count valid keys as failures', async () => {
    // Arrange
    const address = '127.0.0.6';
    for (let i = 0; i < 10; i++) await read(address, `Bearer ${KEYS.bob}`);

    // Act
    const response = await read(address, `Bearer ${KEYS.alice}`);

    // Assert
    expect(response.statusCode).toBe(404);
  });
});

describe('the authentication throttle window', () => {
  it('refuses until the window ends, then lets the address try again', () => {
    // Arrange
    let nowMs = 1_000;
    const throttle = new AuthThrottle({ maxFailures: 2, windowMs: 10_000 }, () => nowMs);
    throttle.fail('a');
    throttle.fail('a');

    // Act
    const during = throttle.refusedForMs('a');
    nowMs += 10_000;
    const after = throttle.refusedForMs('a');

    // Assert
    expect(during).toBe(10_000);
    expect(after).toBe(0);
  });

  it('keeps at most maxAddresses windows, dropping the oldest', () => {
    // Arrange
    const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 10_000, maxAddresses: 2 }, () => 0);

    // Act
    throttle.fail('a');
    throttle.fail('b');
    throttle.fail('c');

    // Assert
    expect(['a', 'b', 'c'].map((address) => throttle.refusedForMs(address) > 0)).toEqual([false, true, true]);
  });
});

describe('throttling behind a trusted proxy', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_AUTH_FAILURES_PER_WINDOW: '2', ONCEFLOW_API_TRUST_PROXY: '127.0.0.1' } });
  });
  afterAll(() => stack.close());

  const read = (forwardedFor: string, authorization: string) =>
    stack.app.inject({ method: 'GET', url: `/v1/jobs/${randomUUID()}`, remoteAddress: '127.0.0.1', headers: { authorization, 'x-forwarded-for': forwardedFor } });

  it('counts failures per client address the proxy reports, not per proxy', async () => {
    // Arrange: one client behind the proxy guesses until it is refused.
    for (let i = 0; i < 3; i++) await read('127.0.1.1', `Bearer guess-${i}`);

    // Act
    const guesser = await read('127.0.1.1', `Bearer ${KEYS.alice}`);
    const neighbour = await read('127.0.1.2', `Bearer ${KEYS.alice}`);

    // Assert
    expect(guesser.statusCode).toBe(429);
    expect(neighbour.statusCode).toBe(404);
  });
});
