import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { mountDemo } from '../../src/demo/mount';
import { launchBrowser, screenshotPath } from '../harness/browser';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';

/** The demo page in a real Chromium, against the whole product, mounted as `npm start` mounts it. */
describe('the demo page', () => {
  let stack: TestStack;
  let baseUrl: string;
  let browser: Browser;
  beforeAll(async () => {
    stack = await startTestStack();
    mountDemo(stack.app, { apiKey: KEYS.alice, messagesUrl: stack.sims.downstream.url });
    baseUrl = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  // A context per test: a tab of its own, with its own session storage.
  let context: BrowserContext;
  let page: Page;
  let submissions: Request[];
  beforeEach(async () => {
    context = await browser.newContext();
    page = await context.newPage();
    submissions = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/v1/jobs') submissions.push(request);
    });
  });
  afterEach(() => context.close());

  const newTicket = (): string => `T-${Math.random().toString(36).slice(2, 10)}`;
  const jobsOf = async (ticketId: string): Promise<string[]> =>
    (await stack.db.pool.query("SELECT id FROM jobs WHERE input->>'ticketId' = $1 ORDER BY created_at", [ticketId])).rows.map((row) => row.id as string);
  const messagesOf = (ticketId: string) => stack.sims.downstream.deliveries().filter((delivery) => delivery.ticketId === ticketId);
  const keysSent = (): string[] => submissions.map((request) => request.headers()['idempotency-key'] ?? '');

  async function fillForm(ticketId: string, message: string, faults: Array<'fault-hang' | 'fault-late' | 'fault-reset'> = []): Promise<void> {
    await page.fill('#ticket', ticketId);
    await page.fill('#message', message);
    for (const fault of ['fault-hang', 'fault-late', 'fault-reset'] as const) await page.setChecked(`#${fault}`, faults.includes(fault));
  }

  async function untilJobs(ticketId: string, count: number): Promise<string[]> {
    const deadline = Date.now() + 10_000;
    for (let jobs = await jobsOf(ticketId); ; jobs = await jobsOf(ticketId)) {
      if (jobs.length >= count) return jobs;
      if (Date.now() > deadline) throw new Error(`${count} job(s) for ${ticketId} expected, ${jobs.length} found`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const shownStatus = (status: string) => page.locator('#job-status').filter({ hasText: new RegExp(`^${status}$`) }).waitFor();

  it('serves the page and the client modules itself, and leaves them out of the OpenAPI document', async () => {
    // Act
    const page = await stack.app.inject({ method: 'GET', url: '/demo' });
    const clientModule = await stack.app.inject({ method: 'GET', url: '/demo/client/intent-client.js' });
    const unknownModule = await stack.app.inject({ method: 'GET', url: '/demo/client/nothing.js' });
    const document = (await stack.app.inject({ method: 'GET', url: '/openapi.json' })).json();

    // Assert
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(clientModule.headers['content-type']).toMatch(/^text\/javascript/);
    expect(clientModule.body).toContain('export class IntentClient');
    expect(unknownModule.statusCode).toBe(404);
    expect(Object.keys(document.paths).filter((route) => route.startsWith('/demo'))).toEqual([]);
  });

  it('makes a double click one job and one message', async () => {
    // Arrange
    const ticket = newTicket();
    await page.goto(`${baseUrl}/demo`);
    await fillForm(ticket, 'My parcel is late. Where is it?');

    // Act
    await page.dblclick('#send');
    await shownStatus('succeeded');
    await page.locator('#messages li').first().waitFor();

    // Assert
    const jobId = await page.textContent('#job-id');
    expect(submissions).toHaveLength(2);
    expect(new Set(keysSent()).size).toBe(1);
    expect(await jobsOf(ticket)).toEqual([jobId]);
    expect(messagesOf(ticket)).toHaveLength(1);
    expect(await page.locator('#messages li').count()).toBe(1);
    await page.screenshot({ path: screenshotPath('demo-page'), fullPage: true });
  });

  it('attaches to the same job when the page is reloaded while the request hangs and the form is sent again', async () => {
    // Arrange: the attempt hangs, and the server holds the request (Prefer: wait) meanwhile.
    const ticket = newTicket();
    await page.goto(`${baseUrl}/demo`);
    await fillForm(ticket, 'Is anyone there?', ['fault-hang']);
    await page.click('#send');
    const [firstJob] = await untilJobs(ticket, 1);

    // Act
    await page.reload();
    await fillForm(ticket, 'Is anyone there?', ['fault-hang']);
    await page.click('#send');
    await page.locator('#job-id').filter({ hasText: /./ }).waitFor();

    // Assert
    expect(submissions).toHaveLength(2);
    expect(submissions[0]!.failure()).not.toBeNull();
    expect(keysSent()[1]).toBe(keysSent()[0]);
    expect(await page.textContent('#job-id')).toBe(firstJob);
    expect(await page.textContent('#job-status')).toBe('awaiting_resolution');
    expect(await jobsOf(ticket)).toEqual([firstJob]);
  });

  it('makes a new job when the text is changed, while the first is still running', async () => {
    // Arrange
    const ticket = newTicket();
    await page.goto(`${baseUrl}/demo`);
    await fillForm(ticket, 'Please cancel my order.', ['fault-hang']);
    await page.click('#send');
    const [firstJob] = await untilJobs(ticket, 1);

    // Act
    await fillForm(ticket, 'Please cancel my order, and refund it.');
    await page.click('#send');
    await shownStatus('succeeded');

    // Assert
    const secondJob = await page.textContent('#job-id');
    expect(secondJob).not.toBe(firstJob);
    expect(new Set(keysSent()).size).toBe(2);
    expect(await jobsOf(ticket)).toEqual([firstJob, secondJob]);
    expect(messagesOf(ticket)).toHaveLength(1);
    expect(await page.textContent('#job-outcome')).toContain(messagesOf(ticket)[0]!.messageId);
  });

  it('retries a submission whose connection was cut after the server got it, on the same key: one job, one message', async () => {
    // Arrange: the first submission reaches the server; the page sees the connection reset.
    const ticket = newTicket();
    let cut = false;
    await page.route('**/v1/jobs', async (route) => {
      if (route.request().method() !== 'POST' || cut) return route.continue();
      cut = true;
      await route.fetch();
      return route.abort('connectionreset');
    });
    await page.goto(`${baseUrl}/demo`);
    await fillForm(ticket, 'Did my refund go through?');

    // Act
    await page.click('#send');
    await shownStatus('succeeded');

    // Assert
    const jobId = await page.textContent('#job-id');
    expect(submissions).toHaveLength(2);
    expect(submissions[0]!.failure()?.errorText).toMatch(/CONNECTION_RESET/);
    expect(keysSent()[1]).toBe(keysSent()[0]);
    expect((await submissions[1]!.response())?.headers()['idempotent-replayed']).toBe('true');
    expect(await jobsOf(ticket)).toEqual([jobId]);
    expect(messagesOf(ticket)).toHaveLength(1);
  });

  it('shows the attempts live: a late answer is unknown first, then reconciled, and the job sends one message', async () => {
    // Arrange: no server wait, so the page reads the job while it runs.
    const ticket = newTicket();
    await page.goto(`${baseUrl}/demo?wait=0`);
    await fillForm(ticket, 'Can I change the delivery address?', ['fault-late']);

    // Act
    await page.click('#send');
    await page.locator('#attempts td', { hasText: /^unknown$/ }).waitFor();
    await shownStatus('succeeded');

    // Assert
    expect(await page.locator('#attempts tr').allTextContents()).toEqual(['1sim-primarysucceeded']);
    await page.locator('#messages li').first().waitFor();
    expect(messagesOf(ticket)).toHaveLength(1);
  });

  it('adds the reset-after-send fault to the message, and the recovered send is still one message', async () => {
    // Arrange
    const ticket = newTicket();
    await page.goto(`${baseUrl}/demo`);
    await fillForm(ticket, 'Please confirm my refund.', ['fault-reset']);

    // Act
    await page.click('#send');
    await shownStatus('succeeded');
    await page.locator('#messages li').first().waitFor();

    // Assert
    expect(submissions[0]!.postDataJSON().input.customerMessage).toBe('Please confirm my refund. @sink(reset)');
    expect(messagesOf(ticket)).toHaveLength(1);
    expect(messagesOf(ticket)[0]!.text).toContain('@sink(reset)');
    expect(await page.locator('#messages li').count()).toBe(1);
  });
});
