import { randomUUID } from 'node:crypto';
import { KeyRole } from '../../src/keys/api-key';
import { getAttempt, openAttempt } from '../../src/ledger/attempts';
import { createApiKey, revokeApiKey } from '../../src/ledger/api-keys';
import { KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';
import { csrfOf, FORM, form, HTML, postSignIn, setCookies, signIn } from './console-http';

/**
 * Who gets into the console and what a request must carry: operator keys
 * only, a session cookie the page's scripts cannot read and other sites
 * cannot send, and a CSRF token on every state-changing request.
 */
describe('the console: sign-in, sessions and CSRF', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Behind a proxy that says which requests came over TLS (X-Forwarded-Proto) and from where (X-Forwarded-For).
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_API_TRUST_PROXY: 'true', ONCEFLOW_AUTH_FAILURES_PER_WINDOW: '5' } });
  });
  afterAll(() => stack.close());

  const sessionCount = async (): Promise<number> => Number((await stack.db.pool.query('SELECT count(*) FROM console_sessions')).rows[0].count);

  /** A job of alice's with one unknown attempt, as a provider timeout leaves it. */
  async function jobWithUnknownAttempt(): Promise<{ jobId: string; attemptId: string }> {
    const jobId = (await submitReply(stack, { message: 'console', key: randomUUID() })).json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    await stack.db.pool.query(`UPDATE attempts SET status = 'unknown' WHERE id = $1`, [opened.attempt.id]);
    await stack.db.pool.query(`UPDATE jobs SET status = 'awaiting_resolution' WHERE id = $1`, [jobId]);
    return { jobId, attemptId: opened.attempt.id };
  }

  it('signs an operator key in with a session cookie that is HttpOnly, SameSite=Strict and scoped to /console (not Secure over plain HTTP)', async () => {
    // Act
    const response = await postSignIn(stack.app, KEYS.operator);

    // Assert
    expect(response.statusCode).toBe(303);
    expect(response.headers.location).toBe('/console/attention');
    const session = setCookies(response).get('onceflow_console');
    expect(session?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session?.attributes).toEqual(expect.arrayContaining(['Path=/console', 'HttpOnly', 'SameSite=Strict']));
    expect(session?.attributes).not.toContain('Secure');
    expect(response.body).not.toContain(KEYS.operator);
  });

  it('marks the session cookie Secure when the request came over TLS', async () => {
    // Act
    const response = await postSignIn(stack.app, KEYS.operator, { 'x-forwarded-proto': 'https' });

    // Assert
    expect(response.statusCode).toBe(303);
    expect(setCookies(response).get('onceflow_console')?.attributes).toEqual(expect.arrayContaining(['Secure', 'HttpOnly', 'SameSite=Strict']));
  });

  it.each([
    ['/console/sign-in', { _csrf: 1, key: KEYS.operator }],
    ['/console/sign-out', { _csrf: ['x'] }],
    ['/console/jobs/00000000-0000-4000-8000-000000000000/attempts/00000000-0000-4000-8000-000000000001/resolution', { _csrf: {}, outcome: 'failed', reason: 1 }],
    ['/console/jobs/00000000-0000-4000-8000-000000000000/effects/message.send/resolution', { _csrf: null, outcome: 'failed', reason: true }],
  ])('takes forms only: a JSON body to %s is a 415, never a 5xx, and changes nothing', async (url, body) => {
    // Arrange: the cookies a browser would send (the sign-in token, or a session)
    const signInPage = await stack.app.inject({ method: 'GET', url: '/console/sign-in', headers: HTML });
    const cookie = url === '/console/sign-in' ? `onceflow_console_sign_in=${setCookies(signInPage).get('onceflow_console_sign_in')!.value}` : (await signIn(stack.app, KEYS.operator)).cookie;
    const before = await sessionCount();

    // Act
    const response = await stack.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', accept: 'application/json', cookie }, payload: JSON.stringify(body) });

    // Assert
    expect(response.statusCode).toBe(415);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await sessionCount()).toBe(before);
  });

  it('refuses a tenant key at sign-in: 403, no session, no cookie', async () => {
    // Arrange
    const before = await sessionCount();

    // Act
    const asPage = await postSignIn(stack.app, KEYS.alice);
    const asApi = await postSignIn(stack.app, KEYS.alice, { accept: 'application/json' });

    // Assert
    expect(asPage.statusCode).toBe(403);
    expect(asPage.body).toContain('This is a tenant key');
    expect(setCookies(asPage).has('onceflow_console')).toBe(false);
    expect(asApi.statusCode).toBe(403);
    expect(asApi.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(asApi.json().type).toMatch(/\/forbidden$/);
    expect(await sessionCount()).toBe(before);
  });

  it('refuses a wrong key at sign-in: 401 and no session', async () => {
    // Act
    const response = await postSignIn(stack.app, 'not-a-key', { accept: 'application/json' });

    // Assert
    expect(response.statusCode).toBe(401);
    expect(response.json().type).toMatch(/\/unauthorized$/);
    expect(setCookies(response).has('onceflow_console')).toBe(false);
  });

  it('refuses an address that sent too many wrong keys, even with the right key, until its window ends; other addresses sign in', async () => {
    // Arrange: five wrong keys (the window's limit here) from one address.
    const from = (address: string) => ({ 'x-forwarded-for': address, accept: 'application/json' });
    for (let i = 0; i < 5; i++) expect((await postSignIn(stack.app, `wrong-${i}`, from('10.9.9.9'))).statusCode).toBe(401);

    // Act
    const throttled = await postSignIn(stack.app, KEYS.operator, from('10.9.9.9'));
    const elsewhere = await postSignIn(stack.app, KEYS.operator, from('10.9.9.10'));

    // Assert
    expect(throttled.statusCode).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
    expect(setCookies(throttled).has('onceflow_console')).toBe(false);
    expect(elsewhere.statusCode).toBe(303);
  });

  it('goes back after sign-in to the console page that asked for it, and never to another site', async () => {
    // Arrange
    const signInWith = async (next: string) => {
      const signInPage = await stack.app.inject({ method: 'GET', url: `/console/sign-in?${new URLSearchParams({ next })}`, headers: HTML });
      const token = setCookies(signInPage).get('onceflow_console_sign_in')!.value;
      return {
        page: signInPage.body,
        answer: await stack.app.inject({ method: 'POST', url: '/console/sign-in', headers: { ...HTML, ...FORM, cookie: `onceflow_console_sign_in=${token}` }, payload: form({ _csrf: token, key: KEYS.operator, next }) }),
      };
    };

    // Act
    const search = await signInWith('/console/search?principal=alice&status=failed');
    const elsewhere = await Promise.all(['https://evil.example/console/', '//evil.example/x', '/console//evil.example', '/console/\\evil.example', '/v1/jobs'].map(signInWith));

    // Assert
    expect(search.page).toContain('name="next" value="/console/search?principal=alice&amp;status=failed"');
    expect(search.answer.headers.location).toBe('/console/search?principal=alice&status=failed');
    for (const { page, answer } of elsewhere) {
      expect(page).not.toContain('name="next"');
      expect(answer.headers.location).toBe('/console/attention');
    }
  });

  it('refuses a sign-in without its token, or with a token that is not its cookie', async () => {
    // Arrange
    const signInPage = await stack.app.inject({ method: 'GET', url: '/console/sign-in', headers: HTML });
    const token = setCookies(signInPage).get('onceflow_console_sign_in')!.value;
    const post = (cookie: string | undefined, fields: Record<string, string>) =>
      stack.app.inject({ method: 'POST', url: '/console/sign-in', headers: { ...FORM, ...(cookie ? { cookie } : {}) }, payload: form(fields) });

    // Act
    const noCookie = await post(undefined, { _csrf: token, key: KEYS.operator });
    const noField = await post(`onceflow_console_sign_in=${token}`, { key: KEYS.operator });
    const otherToken = await post(`onceflow_console_sign_in=${token}`, { _csrf: `${token}x`, key: KEYS.operator });

    // Assert
    expect([noCookie.statusCode, noField.statusCode, otherToken.statusCode]).toEqual([403, 403, 403]);
    expect(noCookie.json().type).toMatch(/\/csrf-token-missing$/);
    expect(noField.json().type).toMatch(/\/csrf-token-missing$/);
    expect(otherToken.json().type).toMatch(/\/csrf-token-invalid$/);
    for (const response of [noCookie, noField, otherToken]) expect(setCookies(response).has('onceflow_console')).toBe(false);
  });

  it('serves no page without a session: a browser is sent to sign-in, anything else gets 401 problem+json', async () => {
    // Arrange
    const { jobId } = await jobWithUnknownAttempt();
    const pages = ['/console', '/console/attention', `/console/jobs/${jobId}`, '/console/providers', '/console/overview', '/console/search?principal=alice'];

    for (const url of pages) {
      // Act
      const navigation = await stack.app.inject({ method: 'GET', url, headers: HTML });
      const forged = await stack.app.inject({ method: 'GET', url, headers: { ...HTML, cookie: 'onceflow_console=forged-session-token' } });
      const api = await stack.app.inject({ method: 'GET', url });

      // Assert
      const signInAt = url === '/console' ? '/console/sign-in' : `/console/sign-in?next=${encodeURIComponent(url)}`;
      expect([url, navigation.statusCode, navigation.headers.location]).toEqual([url, 303, signInAt]);
      expect([url, forged.statusCode]).toEqual([url, 303]);
      expect([url, api.statusCode]).toEqual([url, 401]);
      expect(api.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(navigation.body).not.toContain(jobId);
    }
  });

  it('refuses a POST without the CSRF token or with a wrong one (403), and the attempt stays unknown; with it, resolves the attempt as the signed-in operator', async () => {
    // Arrange
    const { jobId, attemptId } = await jobWithUnknownAttempt();
    const { cookie, csrf } = await signIn(stack.app, KEYS.operator);
    const resolve = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      stack.app.inject({ method: 'POST', url: `/console/jobs/${jobId}/attempts/${attemptId}/resolution`, headers: { ...FORM, cookie, ...headers }, payload: form(fields) });

    // Act
    const missing = await resolve({ outcome: 'failed', reason: 'checked the provider' });
    const wrong = await resolve({ outcome: 'failed', reason: 'checked the provider', _csrf: 'x'.repeat(43) });
    const wrongAsPage = await resolve({ outcome: 'failed', reason: 'checked the provider', _csrf: 'x'.repeat(43) }, HTML);
    const stillUnknown = (await getAttempt(stack.db.pool, attemptId))!.status;
    const accepted = await resolve({ outcome: 'failed', reason: 'checked the provider', _csrf: csrf });

    // Assert
    expect(missing.statusCode).toBe(403);
    expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(missing.json().type).toMatch(/\/csrf-token-missing$/);
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().type).toMatch(/\/csrf-token-invalid$/);
    expect(wrongAsPage.statusCode).toBe(403);
    expect(wrongAsPage.headers['content-type']).toMatch(/^text\/html/);
    expect(wrongAsPage.body).toContain('CSRF token invalid');
    expect(stillUnknown).toBe('unknown');
    expect(accepted.statusCode).toBe(303);
    expect(accepted.headers.location).toBe(`/console/jobs/${jobId}?notice=attempt`);
    const resolved = (await getAttempt(stack.db.pool, attemptId))!;
    expect(resolved.status).toBe('failed');
    expect(resolved.resolution).toMatchObject({ outcome: 'failed', reason: 'checked the provider', by: expect.stringMatching(/^operator:[0-9a-f]{8}$/) });
    // The API's own operator command ran: its counter moved, as for POST /v1/jobs/{id}/attempts/{attemptId}/resolution.
    const counted = (await stack.metrics.attemptsResolved.get()).values.find((value) => value.labels.via === 'operator' && value.labels.outcome === 'failed');
    expect(counted?.value).toBeGreaterThanOrEqual(1);
  });

  it('accepts the CSRF token in the X-CSRF-Token header, and refuses a resolution without a reason', async () => {
    // Arrange
    const { jobId, attemptId } = await jobWithUnknownAttempt();
    const { cookie, csrf } = await signIn(stack.app, KEYS.operator);

    // Act
    const noReason = await stack.app.inject({
      method: 'POST',
      url: `/console/jobs/${jobId}/attempts/${attemptId}/resolution`,
      headers: { ...FORM, cookie, 'x-csrf-token': csrf },
      payload: form({ outcome: 'failed', reason: '  ' }),
    });

    // Assert
    expect(noReason.statusCode).toBe(400);
    expect(noReason.json().errors).toEqual([{ pointer: '/reason', detail: 'is required' }]);
    expect((await getAttempt(stack.db.pool, attemptId))!.status).toBe('unknown');
  });

  it('ends the session at sign-out (itself a POST with the token): the cookie opens nothing afterwards', async () => {
    // Arrange
    const { cookie, csrf } = await signIn(stack.app, KEYS.operator);
    const before = await stack.app.inject({ method: 'GET', url: '/console/attention', headers: { ...HTML, cookie } });

    // Act
    const withoutToken = await stack.app.inject({ method: 'POST', url: '/console/sign-out', headers: { ...FORM, cookie }, payload: '' });
    const signOut = await stack.app.inject({ method: 'POST', url: '/console/sign-out', headers: { ...FORM, cookie }, payload: form({ _csrf: csrf }) });
    const after = await stack.app.inject({ method: 'GET', url: '/console/attention', headers: { ...HTML, cookie } });

    // Assert
    expect(before.statusCode).toBe(200);
    expect(withoutToken.statusCode).toBe(403);
    expect(signOut.statusCode).toBe(303);
    expect(setCookies(signOut).get('onceflow_console')?.attributes).toContain('Max-Age=0');
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/console/sign-in?next=%2Fconsole%2Fattention');
  });

  it("ends a database operator key's sessions when the key is revoked", async () => {
    // Arrange
    const { key, record } = await createApiKey(stack.db.pool, { principal: 'olga', role: KeyRole.operator });
    const { cookie } = await signIn(stack.app, key);
    const before = await stack.app.inject({ method: 'GET', url: '/console/attention', headers: { ...HTML, cookie } });

    // Act
    await revokeApiKey(stack.db.pool, record.id);
    const after = await stack.app.inject({ method: 'GET', url: '/console/attention', headers: { ...HTML, cookie } });

    // Assert
    expect(before.statusCode).toBe(200);
    expect(before.body).toContain(`operator:olga/${record.id}`);
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/console/sign-in?next=%2Fconsole%2Fattention');
  });

  it('sends every page with a Content-Security-Policy that allows only its own scripts and styles, and no framing', async () => {
    // Arrange
    const { cookie } = await signIn(stack.app, KEYS.operator);

    // Act
    const page = await stack.app.inject({ method: 'GET', url: '/console/overview', headers: { ...HTML, cookie } });

    // Assert
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).not.toMatch(/<script>|style="/);
    expect(csrfOf(page.body)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('escapes what tenants wrote: an idempotency key with markup is shown as text', async () => {
    // Arrange
    const key = `<img src=x onerror=alert(1)>-${randomUUID()}`;
    await submitReply(stack, { message: 'markup', key });
    const { cookie } = await signIn(stack.app, KEYS.operator);

    // Act
    const page = await stack.app.inject({ method: 'GET', url: `/console/search?q=${encodeURIComponent(key)}`, headers: { ...HTML, cookie } });

    // Assert
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page.body).not.toContain('<img src=x');
  });
});
