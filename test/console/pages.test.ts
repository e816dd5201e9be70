import { randomUUID } from 'node:crypto';
import { openAttempt } from '../../src/ledger/attempts';
import { claimEffect } from '../../src/ledger/effects';
import { jobWithWinner } from '../harness/effect-jobs';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';
import { aliasDigest, ENTRY_CLIENTS } from '../../src/api/entries/verify';
import { recordEntryVerification } from '../../src/ledger/entry-verifications';
import { demoRegistry } from '../../src/operations/registry';
import { ONCEFLOW_VERSION } from '../../src/version';
import { form, FORM, HTML, signIn } from './console-http';

/** What each console page shows, read from the ledger the API writes. */
describe('the console pages', () => {
  let stack: TestStack;
  let cookie: string;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    ({ cookie } = await signIn(stack.app, KEYS.operator));
  });
  afterAll(() => stack.close());

  const get = (url: string) => stack.app.inject({ method: 'GET', url, headers: { ...HTML, cookie } });
  const submit = async (apiKey: string = KEYS.alice, key: string = randomUUID()): Promise<string> => (await submitReply(stack, { message: 'pages', key, apiKey })).json().id;

  /** A job whose one attempt timed out: unknown, with what the lookup found. */
  async function awaitingJob(evidence: Record<string, unknown>): Promise<string> {
    const jobId = await submit();
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    await stack.db.pool.query(`UPDATE attempts SET status = 'unknown', error_class = 'timeout', error_detail = 'no answer within 2000 ms', evidence = $2 WHERE id = $1`, [opened.attempt.id, evidence]);
    await stack.db.pool.query(`UPDATE jobs SET status = 'awaiting_resolution' WHERE id = $1`, [jobId]);
    return jobId;
  }

  it('lists jobs awaiting resolution oldest first with why and the evidence, and effects in review with what the downstream said', async () => {
    // Arrange
    const older = await awaitingJob({ lastLookup: { status: 'executing' } });
    const newer = await awaitingJob({ lastLookup: { status: 'not-found-yet' } });
    const { jobId: reviewed } = await jobWithWinner(stack.db.pool, 'hello');
    await claimEffect(stack.db.pool, { jobId: reviewed, name: 'message.send', owner: 'test', leaseMs: 60_000 });
    await stack.db.pool.query(
      `UPDATE effects SET status = 'needs_review', settled_at = now(), error = '{"class": "no_lookup_unsafe_to_repeat", "detail": "the downstream answered 500"}' WHERE job_id = $1`,
      [reviewed],
    );

    // Act
    const page = await get('/console/attention');

    // Assert
    expect(page.statusCode).toBe(200);
    const awaitingRows = [...page.body.matchAll(/<tr data-job="([0-9a-f-]{36})">/g)].map((match) => match[1]);
    expect(awaitingRows.indexOf(older)).toBeGreaterThanOrEqual(0);
    expect(awaitingRows.indexOf(older)).toBeLessThan(awaitingRows.indexOf(newer));
    const olderRow = page.body.slice(page.body.indexOf(`<tr data-job="${older}">`), page.body.indexOf('</tr>', page.body.indexOf(`<tr data-job="${older}">`)));
    expect(olderRow).toContain('<strong>timeout</strong> no answer within 2000 ms');
    expect(olderRow).toContain('&quot;status&quot;: &quot;executing&quot;');
    expect(olderRow).toContain('alice');
    expect(olderRow).toContain('support.reply');
    const reviewRow = page.body.slice(page.body.indexOf(`data-job="${reviewed}" data-effect="message.send"`));
    expect(reviewRow.slice(0, reviewRow.indexOf('</tr>'))).toContain('the downstream answered 500');
  });

  it("tells a job's story: the discarded race, the usage, the claim and its lease", async () => {
    // Arrange: a winner, then a late answer that lost the race.
    const { jobId } = await jobWithWinner(stack.db.pool, 'first');
    await stack.db.pool.query(
      `INSERT INTO attempts (job_id, operation, seq, provider, model, status, job_version, ended_at, usage_reported, input_tokens, output_tokens)
       VALUES ($1, 'support.reply', 2, 'sim-backup', 'sim-large', 'discarded', 0, now(), true, 11, 7)`,
      [jobId],
    );
    await claimEffect(stack.db.pool, { jobId, name: 'message.send', owner: 'worker-7', leaseMs: 60_000 });

    // Act
    const page = await get(`/console/jobs/${jobId}`);

    // Assert
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/#2<\/strong> sim-backup[\s\S]*discarded[\s\S]*Lost the race: its answer came after attempt #1 had won the result slot/);
    expect(page.body).toContain('11 in / 7 out tokens');
    expect(page.body).toMatch(/<span class="mono">worker-7<\/span>, expires in \d+ (s|min)/);
    expect(page.body).toContain(`onceflow-${jobId}-message.send`);
    expect(page.body).toContain('/namespaces/');
  });

  it('settles an effect in review from its form as the signed-in operator, and refuses a receipt that is not an object of plain values', async () => {
    // Arrange
    const { jobId } = await jobWithWinner(stack.db.pool, 'hello');
    await claimEffect(stack.db.pool, { jobId, name: 'message.send', owner: 'test', leaseMs: 60_000 });
    await stack.db.pool.query(`UPDATE effects SET status = 'needs_review', settled_at = now() WHERE job_id = $1`, [jobId]);
    const session = await signIn(stack.app, KEYS.operator);
    const settle = (fields: Record<string, string>) =>
      stack.app.inject({ method: 'POST', url: `/console/jobs/${jobId}/effects/message.send/resolution`, headers: { ...FORM, cookie: session.cookie }, payload: form({ _csrf: session.csrf, ...fields }) });
    const formPage = await get(`/console/jobs/${jobId}`);

    // Act
    const notAnObject = await settle({ outcome: 'succeeded', reason: 'found it', receipt: '["m-1"]' });
    const nested = await settle({ outcome: 'succeeded', reason: 'found it', receipt: '{"message": {"id": "m-1"}}' });
    const settled = await settle({ outcome: 'succeeded', reason: 'found it in the outbox', receipt: '{"messageId": "m-by-hand"}' });
    const again = await settle({ outcome: 'failed', reason: 'twice' });

    // Assert
    expect(formPage.body).toContain(`action="/console/jobs/${jobId}/effects/message.send/resolution"`);
    expect([notAnObject.statusCode, nested.statusCode]).toEqual([400, 400]);
    expect(notAnObject.json().errors[0].pointer).toBe('/receipt');
    expect(settled.statusCode).toBe(303);
    expect(again.statusCode).toBe(409);
    const effect = (await stack.db.pool.query('SELECT status, receipt, resolution FROM effects WHERE job_id = $1', [jobId])).rows[0];
    expect(effect).toMatchObject({ status: 'succeeded', receipt: { messageId: 'm-by-hand' }, resolution: { outcome: 'succeeded', reason: 'found it in the outbox', by: expect.stringMatching(/^operator:[0-9a-f]{8}$/) } });
  });

  it('answers a job id that does not exist with a 404 page, and one that is not an id too', async () => {
    // Act
    const missing = await get(`/console/jobs/${randomUUID()}`);
    const malformed = await get('/console/jobs/not-an-id');

    // Assert
    expect([missing.statusCode, malformed.statusCode]).toEqual([404, 404]);
    expect(missing.headers['content-type']).toMatch(/^text\/html/);
  });

  it('finds jobs by the first characters of the id, the idempotency key, the principal and the operation; a whole id opens the job', async () => {
    // Arrange
    const key = `search-${randomUUID()}`;
    const alices = await submit(KEYS.alice, key);
    const bobs = await submit(KEYS.bob);

    // Act
    const byPrefix = await get(`/console/search?q=${alices.slice(0, 8)}`);
    const byKey = await get(`/console/search?q=${key}`);
    const byPrincipal = await get('/console/search?principal=bob&operation=support.reply');
    const byWholeId = await get(`/console/search?q=${alices}`);
    const nothing = await get('/console/search?q=no-such-key');

    // Assert
    expect(byPrefix.body).toContain(`data-job="${alices}"`);
    expect(byKey.body).toContain(`data-job="${alices}"`);
    expect(byKey.body).not.toContain(`data-job="${bobs}"`);
    expect(byPrincipal.body).toContain(`data-job="${bobs}"`);
    expect(byPrincipal.body).not.toContain(`data-job="${alices}"`);
    expect(byWholeId.statusCode).toBe(303);
    expect(byWholeId.headers.location).toBe(`/console/jobs/${alices}`);
    expect(nothing.body).toContain('No job matches.');
  });

  it('pages through a search, newest first, without repeating or skipping a job', async () => {
    // Arrange: 60 jobs of one principal (a page is 50).
    const principal = `p${randomUUID().slice(0, 8)}`;
    await stack.db.pool.query(
      `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id, created_at)
       SELECT $1, 'support.reply', 'k-' || g, 'sha256:' || md5(g::text), 1, '{}'::jsonb, 'wf-' || $1 || '-' || g, now() - g * interval '1 second'
         FROM generate_series(1, 60) AS g`,
      [principal],
    );

    // Act
    const first = await get(`/console/search?principal=${principal}`);
    const next = /href="(\/console\/search\?[^"]*before=[^"]+)"/.exec(first.body)![1]!.replace(/&amp;/g, '&');
    const second = await get(next);

    // Assert
    const keys = (body: string) => [...body.matchAll(/<td class="mono">(k-\d+)<\/td>/g)].map((match) => match[1]);
    expect(keys(first.body)).toEqual(Array.from({ length: 50 }, (_, i) => `k-${i + 1}`));
    expect(keys(second.body)).toEqual(Array.from({ length: 10 }, (_, i) => `k-${i + 51}`));
    expect(second.body).not.toContain('Older jobs');
  });

  it('shows a canary route version with its owner, share and counters', async () => {
    // Arrange
    const version = `console-${Date.now().toString(36)}`;
    const started = await stack.app.inject({
      method: 'POST',
      url: '/v1/routes/support.reply/canaries',
      headers: auth(KEYS.operator),
      payload: { version, steps: [{ provider: 'sim-backup', model: 'sim-large' }, { provider: 'sim-primary', model: 'sim-small' }], owner: 'olga', expiresAt: new Date(Date.now() + 3_600_000).toISOString(), sharePercent: 25, reason: 'backup first' },
    });
    expect(started.statusCode).toBe(201);

    // Act
    const page = await get('/console/providers');

    // Assert
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(new RegExp(`<span class="mono">${version}</span> on 25% of new jobs`));
    const row = page.body.slice(page.body.indexOf(`<td class="mono">${version}`));
    expect(row.slice(0, row.indexOf('</tr>'))).toMatch(/running[\s\S]*25% share[\s\S]*sim-backup[\s\S]*0 of 200: 0 succeeded[\s\S]*olga[\s\S]*backup first/);
  });

  it('shows which entries each model alias is verified through, with each check, on the providers page', async () => {
    // Arrange: support-chat verified through the OpenAI entry only (as POST /v1/entries/verify records it; this stack has no worker)
    const jobId = randomUUID();
    const passed = (detail: string) => ({ passed: true, detail });
    await recordEntryVerification(stack.db.pool, {
      alias: 'support-chat',
      entry: 'openai',
      aliasDigest: aliasDigest(demoRegistry().get('support-chat')!),
      client: ENTRY_CLIENTS.openai,
      onceflowVersion: ONCEFLOW_VERSION,
      passed: true,
      probes: [{ name: 'a greeting', idempotencyKey: 'onceflow-verify-1', jobId, checks: { answer: passed('on contract'), usage: passed('metered'), replay: passed('replayed'), stream: passed('streamed') }, ms: 12 }],
    });

    // Act
    const page = await get('/console/providers');

    // Assert
    expect(page.statusCode).toBe(200);
    const card = page.body.slice(page.body.indexOf('data-alias="support-chat"'));
    const rows = card.slice(0, card.indexOf('</section>'));
    const row = (entry: string) => rows.slice(rows.indexOf(`data-entry="${entry}"`)).split('</tr>')[0]!;
    expect(row('openai')).toMatch(/verified<\/span>[\s\S]*openai@[\s\S]*passed[\s\S]*a greeting: [\s\S]*✓ answer[\s\S]*✓ usage[\s\S]*✓ replay[\s\S]*✓ stream/);
    expect(row('openai')).toContain(`href="/console/jobs/${jobId}"`);
    expect(row('anthropic')).toMatch(/not verified<\/span><div class="muted">never verified through the anthropic entry[\s\S]*never verified/);
  });

  it("shows each effect's claims, its drills and what recovery may do now, on the providers page", async () => {
    // Act: the stack ran the drills of message.send at start (the honest simulator: its lookup is verified)
    const page = await get('/console/providers');

    // Assert
    expect(page.statusCode).toBe(200);
    const card = page.body.slice(page.body.indexOf('data-effect="message.send"'));
    expect(card.slice(0, card.indexOf('</section>'))).toMatch(/recovers by its lookup[\s\S]*Lookup<\/dt><dd>verified[\s\S]*not claimed[\s\S]*passed[\s\S]*data-drill="lookup_not_found"[\s\S]*pass[\s\S]*GET \/v1\/messages\/by-key\//);
    expect([...card.slice(0, card.indexOf('</section>')).matchAll(/data-drill="([^"]+)"/g)].map((row) => row[1])).toEqual(['send', 'lookup_found', 'lookup_not_found', 'dedupe', 'disconnect', 'classification']);
  });

  it('draws the overview from the ledger: jobs per hour by status, attempts by outcome', async () => {
    // Arrange: an unknown attempt, and a late answer that lost a race.
    await awaitingJob({});
    const { jobId } = await jobWithWinner(stack.db.pool, 'first');
    await stack.db.pool.query(`INSERT INTO attempts (job_id, operation, seq, provider, model, status, job_version, ended_at) VALUES ($1, 'support.reply', 2, 'sim-backup', 'sim-large', 'discarded', 0, now())`, [jobId]);
    const { rows } = await stack.db.pool.query(`SELECT status, count(*)::int AS jobs FROM jobs WHERE created_at >= date_trunc('hour', now()) GROUP BY status`);

    // Act
    const page = await get('/console/overview?hours=1');

    // Assert
    expect(page.statusCode).toBe(200);
    for (const row of rows as Array<{ status: string; jobs: number }>) expect(page.body).toMatch(new RegExp(`<title>\\d\\d:00: ${row.jobs} ${row.status}</title>`));
    expect(page.body).toMatch(/<title>unknown \(timeout\): \d+<\/title>/);
    expect(page.body).toMatch(/<title>discarded: \d+<\/title>/);
  });
});
