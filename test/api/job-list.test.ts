import { randomUUID } from 'node:crypto';
import { listJobs } from '../../src/ledger/job-list';
import type { Queryable } from '../../src/ledger/queryable';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/**
 * GET /v1/jobs for operators: jobs by status across principals, filtered,
 * a page at a time, with cursors that stay right while jobs arrive. Tenants
 * keep finding their own job by key, and may not list.
 */
describe('listing jobs (operators)', () => {
  let stack: TestStack;
  const awaiting: string[] = [];
  const inReview: string[] = [];
  let aliceKey: string;

  const submit = async (apiKey: string = KEYS.alice): Promise<string> => (await submitReply(stack, { message: 'list', key: randomUUID(), apiKey })).json().id;
  const setStatus = (ids: string[], status: string) => stack.db.pool.query('UPDATE jobs SET status = $2 WHERE id = ANY($1::uuid[])', [ids, status]);
  const list = (query: string, key: string = KEYS.operator) => stack.app.inject({ method: 'GET', url: `/v1/jobs?${query}`, headers: auth(key) });
  const idsIn = (response: { json(): any }): string[] => response.json().jobs.map((job: { id: string }) => job.id);
  /** The ids in the list's order, as the database sorts them. */
  const ordered = async (ids: string[]): Promise<string[]> => (await stack.db.pool.query('SELECT id FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY created_at, id', [ids])).rows.map((row) => row.id);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    aliceKey = randomUUID();
    await submitReply(stack, { message: 'found by key', key: aliceKey });
    for (let i = 0; i < 5; i++) awaiting.push(await submit(KEYS.alice));
    for (let i = 0; i < 3; i++) awaiting.push(await submit(KEYS.bob));
    await setStatus(awaiting, 'awaiting_resolution');
    for (let i = 0; i < 2; i++) inReview.push(await submit(KEYS.bob));
    await setStatus(inReview, 'running');
    for (const jobId of inReview) {
      await stack.db.pool.query(`INSERT INTO effects (job_id, name, effect_key, status, settled_at) VALUES ($1, 'message.send', $2, 'needs_review', now())`, [jobId, `review-${jobId}`]);
    }
  });
  afterAll(() => stack.close());

  it("lists the jobs in a status across principals, oldest first, with each job's principal", async () => {
    // Act
    const response = await list('status=awaiting_resolution');

    // Assert
    expect(response.statusCode).toBe(200);
    expect(idsIn(response)).toEqual(await ordered(awaiting));
    expect(new Set(response.json().jobs.map((job: { principal: string }) => job.principal))).toEqual(new Set(['alice', 'bob']));
    expect(response.json().next).toBeUndefined();
    expect(response.headers.link).toBeUndefined();
  });

  it("filters by principal and by operation", async () => {
    // Act
    const alice = await list('status=awaiting_resolution&principal=alice');
    const otherOperation = await list('status=awaiting_resolution&operation=other.thing');
    const sameOperation = await list('status=awaiting_resolution&operation=support.reply&principal=bob');

    // Assert
    expect(idsIn(alice)).toEqual(await ordered(awaiting.slice(0, 5)));
    expect(idsIn(otherOperation)).toEqual([]);
    expect(idsIn(sameOperation)).toEqual(await ordered(awaiting.slice(5)));
  });

  it('lists needs_review as the jobs with an effect in review, naming the effects', async () => {
    // Act
    const response = await list('status=needs_review');

    // Assert
    expect(idsIn(response)).toEqual(await ordered(inReview));
    expect(response.json().jobs.map((job: { effectsInReview: string[]; status: string }) => [job.status, job.effectsInReview])).toEqual([
      ['running', ['message.send']],
      ['running', ['message.send']],
    ]);
  });

  it('pages with a cursor in the body and a Link header, and goes on where it stopped while new jobs arrive', async () => {
    // Arrange
    const expected = await ordered(awaiting);
    const seen: string[] = [];

    // Act
    const first = await list('status=awaiting_resolution&limit=3');
    seen.push(...idsIn(first));
    const arrived = await submit(KEYS.alice);
    await setStatus([arrived], 'awaiting_resolution');
    let next: string | undefined = first.json().next;
    const links: string[] = [first.headers.link as string];
    while (next) {
      const page = await list(`status=awaiting_resolution&limit=3&cursor=${next}`);
      seen.push(...idsIn(page));
      next = page.json().next;
      if (page.headers.link) links.push(page.headers.link as string);
    }

    // Assert
    expect(idsIn(first)).toHaveLength(3);
    expect(seen).toEqual([...expected, arrived]);
    expect(links[0]).toBe(`</v1/jobs?status=awaiting_resolution&limit=3&cursor=${first.json().next}>; rel="next"`);
    // Nine jobs in pages of three: two pages say there is a next one, the last does not.
    expect(links).toHaveLength(2);
    await setStatus([arrived], 'accepted');
  });

  it('follows the Link header to the same next page as the cursor', async () => {
    // Arrange
    const first = await list('status=awaiting_resolution&principal=alice&limit=2');
    const target = /^<([^>]+)>; rel="next"$/.exec(first.headers.link as string)![1]!;

    // Act
    const viaLink = await stack.app.inject({ method: 'GET', url: target, headers: auth(KEYS.operator) });
    const viaCursor = await list(`status=awaiting_resolution&principal=alice&limit=2&cursor=${first.json().next}`);

    // Assert
    expect(idsIn(viaLink)).toEqual(idsIn(viaCursor));
    expect(idsIn(viaLink)).toHaveLength(2);
  });

  it.each([
    ['a cursor this API did not give out', 'status=running&cursor=bm90LWEtY3Vyc29y'],
    ['a cursor naming a day that does not exist', `status=running&cursor=${Buffer.from(JSON.stringify(['2026-02-30T00:00:00.000000Z', randomUUID()])).toString('base64url')}`],
    ['a limit of 0', 'status=running&limit=0'],
    ['a limit over 200', 'status=running&limit=201'],
    ['an unknown status', 'status=stuck'],
    ['no status', 'principal=alice'],
    ['idempotencyKey with status', 'status=running&operation=support.reply&idempotencyKey=k'],
    ['an unknown parameter', 'status=running&sort=desc'],
  ])('answers 400 problem+json to %s', async (_name, query) => {
    // Act
    const response = await list(query);

    // Assert
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json().errors.length).toBeGreaterThan(0);
  });

  it('refuses a list to a tenant key with 403, as every operator-only route does', async () => {
    // Act
    const response = await list('status=awaiting_resolution', KEYS.alice);

    // Assert
    expect(response.statusCode).toBe(403);
    expect(response.json().type).toMatch(/\/forbidden$/);
  });

  it("keeps a tenant's lookup by key as it was: its job, 404 for none, 400 without a key", async () => {
    // Act
    const found = await list(`operation=support.reply&idempotencyKey=${aliceKey}`, KEYS.alice);
    const otherTenant = await list(`operation=support.reply&idempotencyKey=${aliceKey}`, KEYS.bob);
    const operator = await list(`operation=support.reply&idempotencyKey=${aliceKey}`);
    const noKey = await list('operation=support.reply', KEYS.alice);
    const noOperation = await list(`idempotencyKey=${aliceKey}`, KEYS.alice);

    // Assert
    expect(found.statusCode).toBe(200);
    expect(found.json().idempotencyKey).toBe(aliceKey);
    expect([otherTenant.statusCode, operator.statusCode]).toEqual([404, 404]);
    expect([noKey.statusCode, noOperation.statusCode]).toEqual([400, 400]);
  });

  describe('reads through indexes', () => {
    /** Runs listJobs' own statement under EXPLAIN, with sequential scans priced out, and returns the plan. */
    async function planOf(filter: Parameters<typeof listJobs>[1]): Promise<string> {
      const client = await stack.db.pool.connect();
      try {
        await client.query('SET enable_seqscan = off');
        let plan = '';
        const explaining = { query: async (sql: string, params: unknown[]) => {
          const { rows } = await client.query(`EXPLAIN ${sql}`, params);
          plan = rows.map((row) => row['QUERY PLAN']).join('\n');
          return { rows: [] };
        } } as unknown as Queryable;
        await listJobs(explaining, filter);
        return plan;
      } finally {
        await client.query('RESET enable_seqscan');
        client.release();
      }
    }

    it('reads a job status, after a cursor, from jobs_status_created_idx', async () => {
      const plan = await planOf({ status: 'awaiting_resolution', after: { createdAt: '2026-01-01T00:00:00.000000Z', id: randomUUID() }, limit: 50 });
      expect(plan).toContain('jobs_status_created_idx');
    });

    it('reads needs_review from effects_needs_review_idx', async () => {
      const plan = await planOf({ status: 'needs_review', limit: 50 });
      expect(plan).toContain('effects_needs_review_idx');
    });
  });
});
