import { ApiKeyError, createApiKey } from '../../src/ledger/api-keys';
import { KeyRole } from '../../src/keys/api-key';
import { aliasDigest, ENTRY_CLIENTS, fetchThrough, verifyEntries, type EntryVerifyDeps } from '../../src/api/entries/verify';
import { parseApiKeys, PROBE_PRINCIPAL } from '../../src/config';
import { demoOperations } from '../../src/operations/load';
import { ONCEFLOW_VERSION } from '../../src/version';
import { runCli } from '../../src/cli/main';
import type { CliIo } from '../../src/cli/io';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

/**
 * Verification per entry: each alias's probes go through each entry with
 * that protocol's official client, and the outcome is recorded with its
 * evidence. A broken entry — one that answers another usage, drops the
 * replay's header, streams other text — fails the check it breaks, by name.
 */
describe('verifying the aliases through each entry', () => {
  let stack: TestStack;
  const operations = demoOperations().registry;
  const alias = operations.get('support-chat')!;

  beforeAll(async () => {
    stack = await startTestStack({ operations, env: { ONCEFLOW_ENTRY_WAIT_SECONDS: '5' } });
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(async () => {
    await stack.db.pool.query('DELETE FROM entry_verifications');
  });

  const verify = (payload: unknown = {}, key: string = KEYS.operator) => stack.app.inject({ method: 'POST', url: '/v1/entries/verify', headers: auth(key), payload: payload as object });
  const entriesShown = async () => {
    const providers = JSON.parse((await stack.app.inject({ method: 'GET', url: '/v1/providers', headers: auth(KEYS.operator) })).body);
    return providers.aliases.find((shown: { alias: string }) => shown.alias === 'support-chat');
  };
  /** verifyEntries as the app runs it, as alice, through a fetch that may break the entry's answers. */
  const verifyThrough = (breakIt: (request: Request, response: Response) => Promise<Response>, entry: 'openai' | 'anthropic') => {
    const through = fetchThrough(stack.app);
    const deps: EntryVerifyDeps = {
      db: stack.db.pool,
      operations,
      apiKey: KEYS.alice,
      principal: 'alice',
      timeoutMs: 30_000,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        return breakIt(request.clone(), await through(request));
      },
    };
    return verifyEntries(deps, { alias: 'support-chat', entry });
  };
  /** A copy of the response with its JSON body changed. */
  const rewritten = async (response: Response, change: (body: any) => void) => {
    const body = await response.json();
    change(body);
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify(body), { status: response.status, headers });
  };

  it('verifies the demo alias through both entries with the official clients, recording each check, and GET /v1/providers shows both verified', async () => {
    // Act
    const response = await verify();

    // Assert
    expect(response.statusCode).toBe(200);
    const { verifications } = JSON.parse(response.body);
    expect(verifications.map((v: { entry: string }) => v.entry)).toEqual(['openai', 'anthropic']);
    for (const verification of verifications) {
      expect(verification).toMatchObject({ alias: 'support-chat', aliasDigest: aliasDigest(alias), client: ENTRY_CLIENTS[verification.entry as 'openai'], onceflowVersion: ONCEFLOW_VERSION, passed: true });
      expect(verification.probes).toHaveLength(1);
      const [probe] = verification.probes;
      expect(Object.keys(probe.checks).sort()).toEqual(['answer', 'replay', 'stream', 'usage']);
      for (const check of Object.values(probe.checks) as Array<{ passed: boolean }>) expect(check.passed).toBe(true);
      // The probe was a job of the probe principal, with one attempt, the winner.
      const { rows } = await stack.db.pool.query(`SELECT j.principal_id, j.operation, j.status, j.completed_by, (SELECT count(*)::int FROM attempts a WHERE a.job_id = j.id) AS attempts FROM jobs j WHERE j.id = $1`, [probe.jobId]);
      expect(rows[0]).toEqual({ principal_id: PROBE_PRINCIPAL, operation: 'support-chat', status: 'succeeded', completed_by: probe.attemptId, attempts: 1 });
    }
    const { rows } = await stack.db.pool.query(`SELECT entry, passed FROM entry_verifications ORDER BY id`);
    expect(rows).toEqual([
      { entry: 'openai', passed: true },
      { entry: 'anthropic', passed: true },
    ]);
    const shown = await entriesShown();
    expect(shown.entries.map((e: { entry: string; verified: boolean }) => [e.entry, e.verified])).toEqual([
      ['openai', true],
      ['anthropic', true],
    ]);
  }, 120_000);

  it('verifies only the entry a filter names', async () => {
    // Act
    const response = await verify({ entry: 'anthropic' });

    // Assert
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body).verifications.map((v: { entry: string }) => v.entry)).toEqual(['anthropic']);
    const shown = await entriesShown();
    expect(shown.entries.find((e: { entry: string }) => e.entry === 'openai')).toMatchObject({ verified: false, detail: 'never verified through the openai entry', latestVerification: null });
  }, 60_000);

  it('refuses a tenant (403) and an alias that does not exist (400), recording nothing', async () => {
    // Act
    const tenant = await verify({}, KEYS.alice);
    const unknown = await verify({ alias: 'no-such-alias' });

    // Assert
    expect(tenant.statusCode).toBe(403);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await stack.db.pool.query(`SELECT count(*)::int AS n FROM entry_verifications`)).rows[0].n).toBe(0);
  });

  it('fails the usage check when the client reads other usage than the winning attempt metered', async () => {
    // Act: the entry's answer says one more input token than was metered
    const [verification] = await verifyThrough(
      (_request, response) => (response.headers.get('content-type')?.includes('json') ? rewritten(response, (body) => body.usage && (body.usage.prompt_tokens += 1)) : Promise.resolve(response)),
      'openai',
    );

    // Assert
    expect(verification!.passed).toBe(false);
    const checks = verification!.probes[0]!.checks;
    expect(checks.usage).toMatchObject({ passed: false, detail: expect.stringContaining('the winning attempt metered') });
    expect(checks.answer!.passed).toBe(true);
  }, 60_000);

  it("fails the replay check when the same key's answer is not marked replayed", async () => {
    // Act: the header is dropped from every answer
    const [verification] = await verifyThrough(async (_request, response) => {
      const headers = new Headers(response.headers);
      headers.delete('idempotent-replayed');
      return new Response(response.body, { status: response.status, headers });
    }, 'anthropic');

    // Assert
    expect(verification!.passed).toBe(false);
    const checks = verification!.probes[0]!.checks;
    expect(checks.replay).toMatchObject({ passed: false, detail: expect.stringContaining('no Idempotent-Replayed: true') });
    expect(checks.answer!.passed).toBe(true);
    expect(checks.usage!.passed).toBe(true);
  }, 60_000);

  it('fails the replay check when the same key gives another answer', async () => {
    // Act: the second answer's text differs from the first
    let answers = 0;
    const [verification] = await verifyThrough(async (_request, response) => {
      if (!response.headers.get('content-type')?.includes('json') || ++answers !== 2) return response;
      return rewritten(response, (body) => (body.choices[0].message.content += ' (again)'));
    }, 'openai');

    // Assert
    expect(verification!.probes[0]!.checks.replay).toMatchObject({ passed: false, detail: expect.stringContaining('another answer than the first') });
  }, 60_000);

  it('fails the stream check when the stream carries other text than the answer', async () => {
    // Act: each streamed text delta loses its first character
    const [verification] = await verifyThrough(async (_request, response) => {
      if (!response.headers.get('content-type')?.includes('event-stream')) return response;
      const text = (await response.text()).replace(/^data: (.*)$/gm, (_line, data: string) => {
        const event = JSON.parse(data);
        if (event.delta?.type === 'text_delta') event.delta.text = event.delta.text.slice(1);
        return `data: ${JSON.stringify(event)}`;
      });
      const headers = new Headers(response.headers);
      headers.delete('content-length');
      return new Response(text, { status: response.status, headers });
    }, 'anthropic');

    // Assert
    expect(verification!.passed).toBe(false);
    expect(verification!.probes[0]!.checks.stream).toMatchObject({ passed: false, detail: expect.stringContaining('not the answer') });
    expect(verification!.probes[0]!.checks.replay!.passed).toBe(true);
  }, 60_000);

  it("fails the answer check when the answer's id does not name its job", async () => {
    // Act
    const [verification] = await verifyThrough(
      (_request, response) => (response.headers.get('content-type')?.includes('json') ? rewritten(response, (body) => (body.id = 'chatcmpl-elsewhere')) : Promise.resolve(response)),
      'openai',
    );

    // Assert
    expect(verification!.probes[0]!.checks.answer).toMatchObject({ passed: false, detail: expect.stringContaining('its id is "chatcmpl-elsewhere"') });
  }, 60_000);

  it('fails the answer check when the answer names a job of another principal', async () => {
    // Act: the probe is sent as alice, but checked as if it were bob's
    const through = fetchThrough(stack.app);
    const [verification] = await verifyEntries({ db: stack.db.pool, operations, apiKey: KEYS.alice, principal: 'bob', timeoutMs: 30_000, fetch: through }, { alias: 'support-chat', entry: 'openai' });

    // Assert
    expect(verification!.probes[0]!.checks.answer).toMatchObject({ passed: false, detail: expect.stringContaining("its job is alice's support-chat") });
  }, 60_000);

  it('records a failed verification, and GET /v1/providers then shows the entry unverified', async () => {
    // Arrange: a passing verification, then a failing one
    await verify({ entry: 'openai' });
    await verifyThrough(
      (_request, response) => (response.headers.get('content-type')?.includes('json') ? rewritten(response, (body) => (body.id = 'chatcmpl-elsewhere')) : Promise.resolve(response)),
      'openai',
    );

    // Act
    const shown = await entriesShown();

    // Assert
    expect(shown.entries.find((e: { entry: string }) => e.entry === 'openai')).toMatchObject({ verified: false, detail: expect.stringMatching(/^its verification of .* failed$/), latestVerification: { passed: false } });
  }, 60_000);

  describe('a passing verification no longer holds', () => {
    const stale = async (column: 'alias_digest' | 'client' | 'onceflow_version' | 'verified_at', value: string) => {
      await verify({ entry: 'openai' });
      await stack.db.pool.query(`UPDATE entry_verifications SET ${column} = $1`, [value]);
      return (await entriesShown()).entries.find((e: { entry: string }) => e.entry === 'openai');
    };

    it('for another contract of the alias', async () => {
      expect(await stale('alias_digest', 'sha256:0000')).toMatchObject({ verified: false, detail: 'verified for another contract of the alias' });
    }, 60_000);

    it('with another version of the client', async () => {
      expect(await stale('client', 'openai@0.0.1')).toMatchObject({ verified: false, detail: `verified with openai@0.0.1, not ${ENTRY_CLIENTS.openai}` });
    }, 60_000);

    it('by another version of Onceflow', async () => {
      expect(await stale('onceflow_version', '0.0.0-old')).toMatchObject({ verified: false, detail: `verified by Onceflow 0.0.0-old, not ${ONCEFLOW_VERSION}` });
    }, 60_000);

    it('past the maximum age', async () => {
      expect(await stale('verified_at', new Date(Date.now() - 400 * 24 * 3_600_000).toISOString())).toMatchObject({ verified: false, detail: expect.stringMatching(/^verified \d+ h ago; the limit is \d+ h$/) });
    }, 60_000);
  });

  describe('onceflow entries verify', () => {
    /** Runs a command line in-process, against the app; returns its exit code and what it printed. */
    const cli = async (argv: string[]) => {
      let out = '';
      let err = '';
      const io: CliIo = { env: { ONCEFLOW_URL: 'http://onceflow.test', ONCEFLOW_KEY: KEYS.operator }, out: (t) => (out += `${t}\n`), err: (t) => (err += `${t}\n`), fetch: fetchThrough(stack.app) };
      return { code: await runCli(argv, io), out, err };
    };

    it('verifies every alias through both entries and prints a row per entry with its checks, exit 0', async () => {
      // Act
      const run = await cli(['entries', 'verify']);

      // Assert
      expect(run.err).toBe('');
      expect(run.code).toBe(0);
      const rows = run.out.trim().split('\n');
      expect(rows[0]).toMatch(/^RESULT\s+ALIAS\s+ENTRY\s+CLIENT\s+CHECKS\s+VERIFIED/);
      expect(rows.slice(1).map((row) => row.split(/\s+/).slice(0, 4))).toEqual([
        ['PASS', 'support-chat', 'openai', ENTRY_CLIENTS.openai],
        ['PASS', 'support-chat', 'anthropic', ENTRY_CLIENTS.anthropic],
      ]);
      expect(rows[1]).toContain('answer usage replay stream');
      const { rows: recorded } = await stack.db.pool.query(`SELECT entry, passed FROM entry_verifications ORDER BY id`);
      expect(recorded).toEqual([
        { entry: 'openai', passed: true },
        { entry: 'anthropic', passed: true },
      ]);
    });

    it('verifies only the alias and entry named, and --json prints the verifications as the API gives them', async () => {
      // Act
      const run = await cli(['entries', 'verify', '--alias', 'support-chat', '--entry', 'anthropic', '--json']);

      // Assert
      expect(run.code).toBe(0);
      const shown = JSON.parse(run.out);
      expect(shown).toEqual([expect.objectContaining({ alias: 'support-chat', entry: 'anthropic', passed: true, client: ENTRY_CLIENTS.anthropic, verifiedAt: expect.any(String) })]);
      expect(shown[0].probes[0].checks.stream.passed).toBe(true);
    });

    it("exits 1 with the server's problem for an alias that does not exist, and 2 for an entry it does not know", async () => {
      // Act
      const unknown = await cli(['entries', 'verify', '--alias', 'no-such-alias']);
      const badEntry = await cli(['entries', 'verify', '--entry', 'gemini']);

      // Assert
      expect(unknown.code).toBe(1);
      expect(unknown.err).toMatch(/^onceflow: 400 /);
      expect(badEntry.code).toBe(2);
      expect(badEntry.err).toMatch(/--entry is one of openai, anthropic/);
      expect((await stack.db.pool.query(`SELECT count(*)::int AS n FROM entry_verifications`)).rows[0].n).toBe(0);
    });
  });
});

describe('verifying the entries when no alias is declared', () => {
  it('answers 404', async () => {
    // Arrange
    const operations = new Map([...demoOperations().registry].filter(([, operation]) => !operation.alias));
    const stack = await startTestStack({ operations, verify: false });
    try {
      // Act
      const response = await stack.app.inject({ method: 'POST', url: '/v1/entries/verify', headers: auth(KEYS.operator), payload: {} });

      // Assert
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    } finally {
      await stack.close();
    }
  }, 120_000);
});

describe('the probe principal', () => {
  it('is refused as a configured key', () => {
    expect(() => parseApiKeys(`${PROBE_PRINCIPAL}:sk_${'a'.repeat(32)}`, undefined)).toThrow(`"${PROBE_PRINCIPAL}" is reserved`);
  });

  it.each([KeyRole.tenant, KeyRole.operator])('is refused as a created %s key, before any statement runs', async (role) => {
    const db = { query: () => Promise.reject(new Error('no statement may run')) };
    await expect(createApiKey(db as never, { principal: PROBE_PRINCIPAL, role })).rejects.toThrow(new ApiKeyError(`"${PROBE_PRINCIPAL}" is reserved for the entries' verification probes`));
  });
});
