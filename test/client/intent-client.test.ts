import { DigestMismatchError, IntentClient, memoryStorage, OnceflowApiError, OnceflowUnavailableError, type Job, type KeyStorage } from '../../packages/client';
import { requestDigest as serverDigest } from '../../src/jobs/digest';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';

/** A fetch that records each request's method, path, Idempotency-Key and Prefer, and passes it on (or lets `intercept` answer it). */
function recordingFetch(intercept?: (call: number, url: string, init: RequestInit | undefined) => Promise<Response | undefined>) {
  const calls: Array<{ method: string; path: string; key: string | null; prefer: string | null }> = [];
  const fetchImpl: typeof fetch = async (url, init) => {
    const headers = new Headers(init?.headers);
    calls.push({ method: init?.method ?? 'GET', path: new URL(String(url)).pathname, key: headers.get('idempotency-key'), prefer: headers.get('prefer') });
    return (await intercept?.(calls.length, String(url), init)) ?? fetch(url, init);
  };
  return { calls, fetch: fetchImpl, posts: () => calls.filter((call) => call.method === 'POST') };
}

describe('the intent client: one key per intent', () => {
  let stack: TestStack;
  let baseUrl: string;
  beforeAll(async () => {
    stack = await startTestStack();
    baseUrl = await stack.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => stack.close());

  const newTicket = (): string => `T-${Math.random().toString(36).slice(2, 10)}`;
  const reply = (ticketId: string, customerMessage = 'Where is my order?') => ({ ticketId, customerMessage, channel: 'email' });
  const client = (opts: Partial<ConstructorParameters<typeof IntentClient>[0]> = {}) =>
    new IntentClient({ baseUrl, apiKey: KEYS.alice, storage: memoryStorage(), pollIntervalMs: 100, retry: { backoffMs: 10 }, ...opts });
  const jobsOf = async (ticketId: string): Promise<string[]> =>
    (await stack.db.pool.query("SELECT id FROM jobs WHERE input->>'ticketId' = $1 ORDER BY created_at", [ticketId])).rows.map((row) => row.id as string);
  const messagesOf = (ticketId: string) => stack.sims.downstream.deliveries().filter((delivery) => delivery.ticketId === ticketId);

  it('sends one key for two submissions of one intent at once (a double click): one job, one message', async () => {
    // Arrange
    const ticket = newTicket();
    const recorder = recordingFetch();
    const onceflow = client({ fetch: recorder.fetch });

    // Act
    const [first, second] = await Promise.all([onceflow.submit('support.reply', reply(ticket)), onceflow.submit('support.reply', reply(ticket))]);

    // Assert
    expect(recorder.posts()).toHaveLength(2);
    expect(recorder.posts()[1]!.key).toBe(recorder.posts()[0]!.key);
    expect(recorder.posts().map((post) => post.prefer)).toEqual(['wait=10', 'wait=10']);
    expect(second.id).toBe(first.id);
    expect(first.status).toBe('succeeded');
    expect(await jobsOf(ticket)).toEqual([first.id]);
    expect(messagesOf(ticket)).toHaveLength(1);
  });

  it('retries a submission whose answer was lost on the same key, and gets the one job', async () => {
    // Arrange: the server acts on the first request; its answer never arrives.
    const ticket = newTicket();
    const recorder = recordingFetch(async (call, url, init) => {
      if (call !== 1) return undefined;
      await fetch(url, init);
      throw new TypeError('fetch failed: socket hang up');
    });

    // Act
    const job = await client({ fetch: recorder.fetch }).submit('support.reply', reply(ticket));

    // Assert
    expect(recorder.posts().map((post) => post.key)).toEqual([job.idempotencyKey, job.idempotencyKey]);
    expect(await jobsOf(ticket)).toEqual([job.id]);
    expect(messagesOf(ticket)).toHaveLength(1);
  });

  it('retries a try that timed out on the same key', async () => {
    // Arrange: the first try reaches the server, and its answer comes later than the timeout.
    const ticket = newTicket();
    const recorder = recordingFetch(async (call, url, init) => {
      if (call !== 1) return undefined;
      const answer = await fetch(url, { ...init, signal: undefined });
      await new Promise((resolve, reject) => {
        setTimeout(resolve, 2_000);
        init?.signal?.addEventListener('abort', () => reject(init.signal!.reason));
      });
      return answer;
    });

    // Act
    const job = await client({ fetch: recorder.fetch, requestTimeoutMs: 300 }).submit('support.reply', reply(ticket), { wait: 0 });

    // Assert
    expect(recorder.posts().map((post) => post.key)).toEqual([job.idempotencyKey, job.idempotencyKey]);
    expect(await jobsOf(ticket)).toEqual([job.id]);
  });

  it('reuses the key after a reload: the same input submitted from a new page with the same session storage is the same job', async () => {
    // Arrange: the first page submits an intent whose attempt hangs, and is closed (aborted) while it waits.
    const ticket = newTicket();
    const session: KeyStorage = memoryStorage();
    const input = reply(ticket, 'Where is my order? @sim(sim-primary:hang)');
    const closed = new AbortController();
    const firstPage = client({ storage: session }).submit('support.reply', input, {
      wait: 0,
      signal: closed.signal,
      onStatus: (job) => {
        if (job.status === 'awaiting_resolution') closed.abort();
      },
    });
    await expect(firstPage).rejects.toMatchObject({ name: 'AbortError' });
    const [firstJobId] = await jobsOf(ticket);

    // Act: the reloaded page submits the same form.
    const reloaded = new AbortController();
    let seen: Job | undefined;
    const secondPage = client({ storage: session }).submit('support.reply', input, {
      wait: 0,
      signal: reloaded.signal,
      onUpdate: (job) => {
        seen = job;
        reloaded.abort();
      },
    });
    await expect(secondPage).rejects.toMatchObject({ name: 'AbortError' });

    // Assert
    expect(seen?.id).toBe(firstJobId);
    expect(seen?.status).toBe('awaiting_resolution');
    expect(await jobsOf(ticket)).toEqual([firstJobId]);
  });

  it('keeps the key until the outcome of a terminal job was shown, takes a new one for a changed input, and a new one once shown', async () => {
    // Arrange
    const ticket = newTicket();
    const onceflow = client();
    const first = await onceflow.submit('support.reply', reply(ticket, 'Refund please'));

    // Act
    const stillRunning = onceflow.shown({ ...first, status: 'running' });
    const again = await onceflow.submit('support.reply', reply(ticket, 'Refund please'));
    const changed = await onceflow.submit('support.reply', reply(ticket, 'Refund please, to my card'));
    onceflow.shown(first);
    const afterShown = await onceflow.submit('support.reply', reply(ticket, 'Refund please'));

    // Assert
    expect(stillRunning).toBe(false);
    expect(again.id).toBe(first.id);
    expect(changed.id).not.toBe(first.id);
    expect(changed.idempotencyKey).not.toBe(first.idempotencyKey);
    expect(afterShown.id).not.toBe(first.id);
    expect(await jobsOf(ticket)).toEqual([first.id, changed.id, afterShown.id]);
  });

  it('forgets a key unused for longer than keyMaxAgeMs', async () => {
    // Arrange
    const ticket = newTicket();
    let nowMs = Date.parse('2026-01-01T00:00:00Z');
    const storage = memoryStorage();
    const onceflow = client({ storage, keyMaxAgeMs: 60_000, now: () => nowMs });
    const first = await onceflow.submit('support.reply', reply(ticket));
    const kept = await onceflow.submit('support.reply', reply(ticket));

    // Act
    nowMs += 60_001;
    const later = await onceflow.submit('support.reply', reply(ticket));
    nowMs += 60_001;
    const swept = new IntentClient({ baseUrl, apiKey: KEYS.alice, storage, keyMaxAgeMs: 60_000, now: () => nowMs });

    // Assert
    expect(kept.id).toBe(first.id);
    expect(later.id).not.toBe(first.id);
    expect(swept.keys.sweep()).toBe(0);
    expect(storage.length).toBe(0);
  });

  it('surfaces a 409 (the key used for another intent) and never retries it', async () => {
    // Arrange
    const ticket = newTicket();
    const recorder = recordingFetch();
    const onceflow = client({ fetch: recorder.fetch });
    const first = await onceflow.submit('support.reply', reply(ticket, 'First'), { idempotencyKey: `chosen-${ticket}` });

    // Act
    const reused = onceflow.submit('support.reply', reply(ticket, 'Second'), { idempotencyKey: `chosen-${ticket}` });

    // Assert
    await expect(reused).rejects.toBeInstanceOf(OnceflowApiError);
    await expect(reused).rejects.toMatchObject({ status: 409, problem: { existingJob: { id: first.id } } });
    expect(recorder.posts()).toHaveLength(2);
    expect(await jobsOf(ticket)).toEqual([first.id]);
  });

  it('honours Retry-After on a 429 and backs off with jitter on a 503, on the same key', async () => {
    // Arrange
    const ticket = newTicket();
    const slept: number[] = [];
    const recorder = recordingFetch(async (call) => {
      if (call === 1) return new Response(JSON.stringify({ type: 'x', title: 'Too many requests', status: 429, detail: 'x' }), { status: 429, headers: { 'retry-after': '3' } });
      if (call === 2) return new Response(JSON.stringify({ type: 'x', title: 'Unavailable', status: 503, detail: 'x' }), { status: 503 });
      return undefined;
    });
    const onceflow = client({ fetch: recorder.fetch, retry: { backoffMs: 200 }, random: () => 0.5, sleep: async (ms) => void slept.push(ms) });

    // Act
    const job = await onceflow.submit('support.reply', reply(ticket), { wait: 5 });

    // Assert: 3 s as asked, then half of the second backoff (2 × 200 ms).
    expect(slept.slice(0, 2)).toEqual([3_000, 200]);
    expect(recorder.posts().map((post) => post.key)).toEqual([job.idempotencyKey, job.idempotencyKey, job.idempotencyKey]);
    expect(await jobsOf(ticket)).toEqual([job.id]);
  });

  it('does not retry a 501, retries a 500 on the same key, and gives up after maxRetries', async () => {
    // Arrange
    const failing = (status: number) => recordingFetch(async () => new Response(JSON.stringify({ type: 'x', title: 'x', status, detail: 'x' }), { status }));
    const never = failing(501);
    const internal = failing(500);

    // Act
    const once = client({ fetch: never.fetch }).submit('support.reply', reply(newTicket()));
    const retried = client({ fetch: internal.fetch, retry: { maxRetries: 2, backoffMs: 1 } }).submit('support.reply', reply(newTicket()));

    // Assert
    await expect(once).rejects.toMatchObject({ status: 501 });
    expect(never.calls).toHaveLength(1);
    await expect(retried).rejects.toBeInstanceOf(OnceflowUnavailableError);
    expect(internal.calls).toHaveLength(3);
    expect(new Set(internal.calls.map((call) => call.key)).size).toBe(1);
  });

  it('reports each status the job enters, from accepted to terminal', async () => {
    // Arrange
    const statuses: string[] = [];

    // Act
    const job = await client().submit('support.reply', reply(newTicket()), { wait: 0, onStatus: (seen) => statuses.push(seen.status) });

    // Assert
    expect(statuses[0]).toBe('accepted');
    expect(statuses.at(-1)).toBe('succeeded');
    expect(job.status).toBe('succeeded');
    expect(statuses.filter((status, index) => statuses[index - 1] === status)).toEqual([]);
  });

  it('agrees with the server on the digest: the key is kept under the job\'s own requestDigest when the schema version is known', async () => {
    // Arrange
    const storage = memoryStorage();
    const input = reply(newTicket(), 'Ünïcödé 👍 and "quotes"');

    // Act
    const job = await client({ storage, schemaVersions: { 'support.reply': 1 } }).submit('support.reply', input);

    // Assert
    expect(job.requestDigest).toBe(serverDigest('support.reply', 1, input));
    expect(JSON.parse(storage.getItem(`onceflow.intent:${job.requestDigest}`) ?? 'null')).toMatchObject({ idempotencyKey: job.idempotencyKey });
  });

  it('refuses a job whose request digest is not the one it computed', async () => {
    // Arrange: an answer whose digest was changed on the way.
    const recorder = recordingFetch(async (_call, url, init) => {
      const answer = await fetch(url, init);
      const job = (await answer.json()) as Job;
      return new Response(JSON.stringify({ ...job, requestDigest: `sha256:${'0'.repeat(64)}` }), { status: answer.status, headers: { 'content-type': 'application/json' } });
    });

    // Act
    const submitted = client({ fetch: recorder.fetch }).submit('support.reply', reply(newTicket()));

    // Assert
    await expect(submitted).rejects.toBeInstanceOf(DigestMismatchError);
  });
});
