import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { KEYS, readJob, startTestStack, submitReply, waitForJob, withoutEffectVerifications, type TestStack } from '../harness/stack';
import { launchBrowser, screenshotPath } from '../harness/browser';

/**
 * The console in a real Chromium: an operator signs in, finds what waits
 * for a person, settles it with a reason, and watches the job go on.
 */
describe('the console in a browser', () => {
  let stack: TestStack;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    stack = await startTestStack();
    await stack.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await stack.close();
  });

  /** A fresh browser profile (no cookies) with one page. */
  async function freshPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    return { context, page: await context.newPage() };
  }

  async function signInAs(page: Page, key: string): Promise<void> {
    await page.goto(`${base}/console/sign-in`);
    await page.fill('#key', key);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  }

  /** Submits a support reply as alice and waits until the API shows `until`. */
  async function jobUntil(message: string, until: (job: any) => boolean): Promise<any> {
    const submitted = await submitReply(stack, { message });
    expect(submitted.statusCode).toBe(202);
    return waitForJob(stack, submitted.json().id, until, 30_000);
  }

  it('refuses a tenant key: no session cookie, and no page opens', async () => {
    // Arrange
    const { context, page } = await freshPage();
    const sessions = async () => Number((await stack.db.pool.query('SELECT count(*) FROM console_sessions')).rows[0].count);
    const before = await sessions();

    // Act
    await signInAs(page, KEYS.alice);
    const refusal = await page.textContent('[role=alert]');
    const cookies = await context.cookies();
    await page.goto(`${base}/console/attention`);

    // Assert
    expect(refusal).toContain('This is a tenant key');
    expect(await sessions()).toBe(before);
    expect(cookies.map((cookie) => cookie.name)).not.toContain('onceflow_console');
    expect(page.url()).toBe(`${base}/console/sign-in?next=%2Fconsole%2Fattention`);
    expect(await page.textContent('h1')).toBe('Sign in');
    await context.close();
  });

  it('signs in, finds a job stuck in awaiting_resolution, resolves it with a reason, and watches it fail over and succeed', async () => {
    // Arrange
    const stuck = await jobUntil('Where is my parcel? @sim(sim-primary:hang)', (job) => job.status === 'awaiting_resolution');
    const { context, page } = await freshPage();

    // Act 1: sign in; the job is on the Needs attention page with why it waits.
    await signInAs(page, KEYS.operator);
    const session = (await context.cookies()).find((cookie) => cookie.name === 'onceflow_console');
    const row = page.locator(`#awaiting tr[data-job="${stuck.id}"]`);
    await page.screenshot({ path: screenshotPath('console-attention'), fullPage: true });

    // Assert 1
    expect(page.url()).toBe(`${base}/console/attention`);
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
    await expect(row.textContent()).resolves.toContain('alice');
    await expect(row.textContent()).resolves.toContain('support.reply');
    await expect(row.textContent()).resolves.toContain('sim-primary');

    // Act 2: open its story and resolve the unknown attempt with a reason.
    await Promise.all([page.waitForNavigation(), row.locator('a').first().click()]);
    await page.screenshot({ path: screenshotPath('console-job-awaiting'), fullPage: true });
    await page.fill('form.resolve textarea[name=reason]', 'sim-primary shows the request hanging; it will not answer');
    await Promise.all([page.waitForNavigation(), page.click('form.resolve button[type=submit]')]);
    // The page refreshes itself while the job is not terminal.
    await page.waitForSelector('h1 .status.succeeded', { timeout: 30_000 });
    await page.screenshot({ path: screenshotPath('console-job-story'), fullPage: true });
    await page.screenshot({ path: screenshotPath('console-job-story-top') });

    // Assert 2: the timeline, the audit trail, and the API agree.
    const attempts = page.locator('ol.timeline > li');
    await expect(attempts.count()).resolves.toBe(2);
    await expect(attempts.nth(0).textContent()).resolves.toMatch(/#1 sim-primary[\s\S]*failed[\s\S]*Resolved failed by operator:[0-9a-f]{8}/);
    await expect(attempts.nth(1).textContent()).resolves.toMatch(/#2 sim-backup[\s\S]*succeeded/);
    await expect(page.locator('table.audit').textContent()).resolves.toContain('sim-primary shows the request hanging; it will not answer');
    await expect(page.locator('a[target=_blank]').getAttribute('href')).resolves.toContain(`/workflows/${encodeURIComponent(stuck.workflowId)}`);
    const job = await readJob(stack, stuck.id);
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((attempt: any) => [attempt.provider, attempt.status])).toEqual([['sim-primary', 'failed'], ['sim-backup', 'succeeded']]);
    expect(job.attempts[0].resolution).toMatchObject({ outcome: 'failed', reason: 'sim-primary shows the request hanging; it will not answer', by: expect.stringMatching(/^operator:/) });
    await context.close();
  }, 90_000);

  it('settles an effect in review with the receipt found downstream, and the job succeeds with it', async () => {
    // Arrange: the downstream answers 500 and records nothing; its lookup is not verified, so recovery may rely on nothing.
    const verifyAgain = await withoutEffectVerifications(stack);
    const inReview = await jobUntil('Please send it @sink(status=500)', (job) => job.effects[0]?.status === 'needs_review');
    await verifyAgain();
    const { context, page } = await freshPage();
    await signInAs(page, KEYS.operator);

    // Act
    const row = page.locator(`#in-review tr[data-job="${inReview.id}"]`);
    await expect(row.textContent()).resolves.toContain('message.send');
    await Promise.all([page.waitForNavigation(), row.locator('a').first().click()]);
    await page.fill('form.resolve input[name=receipt]', '{"messageId": "m-found-by-hand"}');
    await page.fill('form.resolve textarea[name=reason]', 'found the message in the outbox');
    await Promise.all([page.waitForNavigation(), page.click('form.resolve button[type=submit]')]);
    await page.waitForSelector('h1 .status.succeeded', { timeout: 30_000 });
    await page.screenshot({ path: screenshotPath('console-effect-settled'), fullPage: true });

    // Assert
    await expect(page.locator('[data-effect="message.send"]').textContent()).resolves.toMatch(/Settled succeeded by operator:[0-9a-f]{8}[\s\S]*found the message in the outbox/);
    const job = await readJob(stack, inReview.id);
    expect(job.status).toBe('succeeded');
    expect(job.result).toMatchObject({ messageId: 'm-found-by-hand' });
    expect(job.effects[0]).toMatchObject({ status: 'succeeded', resolution: { reason: 'found the message in the outbox' } });
    await context.close();
  }, 90_000);

  it('refuses a POST from the signed-in browser without the CSRF token or with a wrong one', async () => {
    // Arrange
    const stuck = await jobUntil('Still there? @sim(sim-primary:hang)', (job) => job.status === 'awaiting_resolution');
    const { context, page } = await freshPage();
    await signInAs(page, KEYS.operator);
    const url = `/console/jobs/${stuck.id}/attempts/${stuck.attempts[0].id}/resolution`;

    // Act: same-origin requests from the page, with the session cookie, but without the page's token.
    const post = (fields: Record<string, string>) =>
      page.evaluate(
        async ({ url, body }) => {
          const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, redirect: 'manual' });
          return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
        },
        { url, body: new URLSearchParams(fields).toString() },
      );
    const missing = await post({ outcome: 'failed', reason: 'no token' });
    const wrong = await post({ outcome: 'failed', reason: 'wrong token', _csrf: 'not-the-token' });

    // Assert
    expect(missing.status).toBe(403);
    expect(missing.type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(missing.body).type).toMatch(/\/csrf-token-missing$/);
    expect(wrong.status).toBe(403);
    expect(JSON.parse(wrong.body).type).toMatch(/\/csrf-token-invalid$/);
    expect((await readJob(stack, stuck.id)).attempts[0].status).toBe('unknown');
    await context.close();
  }, 60_000);

  it('shows the overview, providers and routes, and search; and signs out', async () => {
    // Arrange
    const { context, page } = await freshPage();
    await signInAs(page, KEYS.operator);

    // Act + Assert: each page renders its parts.
    await page.goto(`${base}/console/overview`);
    await expect(page.locator('#chart-jobs svg rect').count()).resolves.toBeGreaterThan(0);
    await expect(page.locator('#chart-attempts svg').count()).resolves.toBe(1);
    await page.screenshot({ path: screenshotPath('console-overview'), fullPage: true });

    await page.goto(`${base}/console/providers`);
    await expect(page.locator('[data-provider="sim-backup"]').textContent()).resolves.toMatch(/eligible[\s\S]*passed/);
    await page.screenshot({ path: screenshotPath('console-providers'), fullPage: true });

    await page.goto(`${base}/console/search?principal=alice&operation=support.reply`);
    await expect(page.locator('#hits tbody tr').count()).resolves.toBeGreaterThan(0);
    await page.screenshot({ path: screenshotPath('console-search'), fullPage: true });

    await Promise.all([page.waitForNavigation(), page.click('header form[action="/console/sign-out"] button')]);
    expect(page.url()).toBe(`${base}/console/sign-in`);
    await page.goto(`${base}/console/attention`);
    expect(page.url()).toBe(`${base}/console/sign-in?next=%2Fconsole%2Fattention`);
    await context.close();
  }, 60_000);
});
