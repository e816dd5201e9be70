import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { runCli } from '../../src/cli/main';
import type { CliIo } from '../../src/cli/io';
import { openAttempt, markAttemptRunning, commitAttemptResult } from '../../src/ledger/attempts';
import { claimEffect } from '../../src/ledger/effects';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/**
 * The onceflow command line: keys against the database, the operator's
 * commands against the API. Each command's output (tables, --json) and exit
 * code: 0 done, 1 the server said no, 2 a bad command line.
 */
describe('the onceflow command line', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  /** fetch, answered by the app in-process. */
  const injectFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const response = await stack.app.inject({
      method: (init?.method ?? 'GET') as 'GET',
      url: `${url.pathname}${url.search}`,
      headers: init?.headers as Record<string, string>,
      ...(init?.body === undefined ? {} : { payload: init.body as string }),
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) headers.set(name, String(value));
    return new Response(response.body, { status: response.statusCode, headers });
  }) as typeof fetch;

  /** Runs a command line in-process; returns its exit code and what it printed. */
  async function cli(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const io: CliIo = { env: { DATABASE_URL: stack.db.url, ONCEFLOW_URL: 'http://onceflow.test', ONCEFLOW_KEY: KEYS.operator, ...env }, out: (t) => (out += `${t}\n`), err: (t) => (err += `${t}\n`), fetch: injectFetch };
    const code = await runCli(argv, io);
    return { code, out, err };
  }

  const aliceJob = async (): Promise<string> => (await submitReply(stack, { message: 'cli', key: randomUUID() })).json().id;

  describe('keys', () => {
    it('creates a key, prints it once with its id, and the key authenticates as its principal', async () => {
      // Act
      const created = await cli(['keys', 'create', '--principal', 'alice', '--json']);

      // Assert
      expect(created.code).toBe(0);
      const shown = JSON.parse(created.out);
      expect(shown).toEqual({ key: expect.stringMatching(/^of_[0-9A-Za-z]{12}_[0-9A-Za-z]{43}$/), id: expect.any(String), principal: 'alice', role: 'tenant', createdAt: expect.any(String), lastUsedAt: null, revokedAt: null });
      expect(shown.key).toContain(shown.id);
      const jobId = await aliceJob();
      expect((await stack.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: auth(shown.key) })).statusCode).toBe(200);
    });

    it('creates an operator key as a table, and the key acts as an operator', async () => {
      // Act
      const created = await cli(['keys', 'create', '--principal', 'olga', '--role', 'operator']);

      // Assert
      expect(created.code).toBe(0);
      const key = /^key\s+(\S+)$/m.exec(created.out)![1]!;
      expect(created.out).toMatch(/^role\s+operator$/m);
      expect(created.err).toMatch(/not shown again/);
      expect((await stack.app.inject({ method: 'GET', url: '/v1/providers', headers: auth(key) })).statusCode).toBe(200);
    });

    it('lists keys with id, principal, role and times, never the secret or its hash', async () => {
      // Arrange
      const created = JSON.parse((await cli(['keys', 'create', '--principal', 'listed', '--json'])).out);

      // Act
      const listed = await cli(['keys', 'list', '--json']);
      const asTable = await cli(['keys', 'list']);

      // Assert
      expect(listed.code).toBe(0);
      const entry = JSON.parse(listed.out).find((k: { id: string }) => k.id === created.id);
      expect(Object.keys(entry).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'principal', 'revokedAt', 'role']);
      expect(listed.out).not.toContain(created.key.split('_')[2]);
      expect(asTable.out.split('\n')[0]).toMatch(/^ID\s+PRINCIPAL\s+ROLE\s+CREATED\s+LAST USED\s+REVOKED$/);
      expect(asTable.out).toMatch(new RegExp(`^${created.id}\\s+listed\\s+tenant\\s`, 'm'));
    });

    it('revokes a key, which the API refuses on its next request; an unknown id exits 1', async () => {
      // Arrange
      const created = JSON.parse((await cli(['keys', 'create', '--principal', 'alice', '--json'])).out);
      const jobId = await aliceJob();

      // Act
      const revoked = await cli(['keys', 'revoke', created.id]);
      const unknown = await cli(['keys', 'revoke', 'AAAAAAAAAAAA']);

      // Assert
      expect(revoked.code).toBe(0);
      expect(revoked.out).toMatch(new RegExp(`^revoked ${created.id} \\(alice, tenant\\) at `));
      expect((await stack.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: auth(created.key) })).statusCode).toBe(401);
      expect(unknown.code).toBe(1);
    });

    it.each([
      [['keys', 'create']],
      [['keys', 'create', '--principal', 'x', '--role', 'admin']],
      [['keys', 'create', '--principal', 'operator']],
      [['keys', 'revoke']],
      [['keys', 'revoke', 'not-an-id']],
      [['keys', 'rotate']],
      [['keys', 'list', '--colour']],
    ])('exits 2 on the bad command line %j', async (argv) => {
      const result = await cli(argv);
      expect(result.code).toBe(2);
      expect(result.err).toMatch(/usage: onceflow keys/);
    });

    it('exits 2 without DATABASE_URL', async () => {
      expect((await cli(['keys', 'list'], { DATABASE_URL: '' })).code).toBe(2);
    });
  });

  describe("the operator's commands over the API", () => {
    async function unknownAttempt(): Promise<{ jobId: string; attemptId: string }> {
      const jobId = await aliceJob();
      const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
      if (opened.kind !== 'opened') throw new Error('no attempt');
      await stack.db.pool.query(`UPDATE attempts SET status = 'unknown' WHERE id = $1`, [opened.attempt.id]);
      await stack.db.pool.query(`UPDATE jobs SET status = 'awaiting_resolution' WHERE id = $1`, [jobId]);
      return { jobId, attemptId: opened.attempt.id };
    }

    async function effectInReview(): Promise<string> {
      const jobId = await aliceJob();
      const winner = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
      if (winner.kind !== 'opened') throw new Error('no attempt');
      await markAttemptRunning(stack.db.pool, winner.attempt.id);
      await commitAttemptResult(stack.db.pool, winner.attempt.id, { reply: 'ok', escalate: false }, { terminal: false });
      await claimEffect(stack.db.pool, { jobId, name: 'message.send', owner: 'test', leaseMs: 60_000 });
      await stack.db.pool.query(`UPDATE effects SET status = 'needs_review', settled_at = now() WHERE job_id = $1`, [jobId]);
      return jobId;
    }

    it('lists jobs in a status as a table, and as the API page with --json', async () => {
      // Arrange
      const { jobId } = await unknownAttempt();

      // Act
      const asTable = await cli(['jobs', 'list', '--status', 'awaiting_resolution', '--principal', 'alice']);
      const asJson = await cli(['jobs', 'list', '--status', 'awaiting_resolution', '--json']);

      // Assert
      expect(asTable.code).toBe(0);
      expect(asTable.out.split('\n')[0]).toMatch(/^JOB\s+PRINCIPAL\s+OPERATION\s+STATUS\s+IN REVIEW\s+CREATED\s+IDEMPOTENCY KEY$/);
      expect(asTable.out).toMatch(new RegExp(`^${jobId}\\s+alice\\s+support\\.reply\\s+awaiting_resolution\\s`, 'm'));
      const page = JSON.parse(asJson.out);
      expect(page.jobs.map((job: { id: string }) => job.id)).toContain(jobId);
      expect(Object.keys(page.jobs[0]).sort()).toEqual(['createdAt', 'effectsInReview', 'id', 'idempotencyKey', 'links', 'operation', 'principal', 'status', 'updatedAt', 'workflowId']);
    });

    it('says how to get the next page, and --cursor gets it', async () => {
      // Arrange
      await unknownAttempt();
      await unknownAttempt();

      // Act
      const first = await cli(['jobs', 'list', '--status', 'awaiting_resolution', '--limit', '1']);
      const cursor = /--cursor (\S+)$/m.exec(first.out)![1]!;
      const second = await cli(['jobs', 'list', '--status', 'awaiting_resolution', '--limit', '1', '--cursor', cursor, '--json']);

      // Assert
      expect(first.out).toMatch(/^more: onceflow jobs list --status awaiting_resolution --limit 1 --cursor \S+$/m);
      expect(second.code).toBe(0);
      expect(JSON.parse(second.out).jobs).toHaveLength(1);
      expect(first.out).not.toContain(JSON.parse(second.out).jobs[0].id);
    });

    it('shows a job: attempts with evidence, effects with receipts, events and the Temporal UI link', async () => {
      // Arrange
      const { jobId, attemptId } = await unknownAttempt();
      await stack.db.pool.query(`UPDATE attempts SET evidence = '{"output": "prose, not JSON"}' WHERE id = $1`, [attemptId]);

      // Act
      const shown = await cli(['jobs', 'show', jobId]);
      const asJson = await cli(['jobs', 'show', jobId, '--json']);

      // Assert
      expect(shown.code).toBe(0);
      expect(shown.out).toMatch(/^temporal ui\s+http:\/\/\S+\/workflows\/\S+$/m);
      expect(shown.out).toMatch(new RegExp(`^1\\s+${attemptId}\\s+sim-primary/sim-small\\s+unknown\\s`, 'm'));
      expect(shown.out).toMatch(/^ATTEMPTS$/m);
      expect(shown.out).toContain('evidence of attempt 1: {"output":"prose, not JSON"}');
      expect(shown.out).toMatch(/^EFFECTS$/m);
      expect(shown.out).toMatch(/job\.created/);
      expect(JSON.parse(asJson.out)).toMatchObject({ id: jobId, status: 'awaiting_resolution', links: { temporalUi: expect.stringContaining('/workflows/') } });
    });

    it('resolves an unknown attempt; resolving it again exits 1 with the problem', async () => {
      // Arrange
      const { jobId, attemptId } = await unknownAttempt();

      // Act
      const resolved = await cli(['attempts', 'resolve', jobId, attemptId, '--outcome', 'failed', '--reason', 'the provider has no such request', '--json']);
      const again = await cli(['attempts', 'resolve', jobId, attemptId, '--outcome', 'failed', '--reason', 'twice']);

      // Assert
      expect(resolved.code).toBe(0);
      expect(JSON.parse(resolved.out).attempts[0]).toMatchObject({ status: 'failed', resolution: { outcome: 'failed', reason: 'the provider has no such request' } });
      expect(again.code).toBe(1);
      expect(again.err).toMatch(/^onceflow: 409 Attempt is not unknown: /);
    });

    it('settles an effect in review with the receipt found downstream', async () => {
      // Arrange
      const jobId = await effectInReview();

      // Act
      const listed = await cli(['jobs', 'list', '--status', 'needs_review', '--json']);
      const settled = await cli(['effects', 'resolve', jobId, 'message.send', '--outcome', 'succeeded', '--reason', 'found it', '--receipt', '{"messageId":"m-7"}']);

      // Assert
      expect(JSON.parse(listed.out).jobs.find((job: { id: string }) => job.id === jobId).effectsInReview).toEqual(['message.send']);
      expect(settled.code).toBe(0);
      expect(settled.out).toMatch(/^message\.send\s+succeeded\s+\{"messageId":"m-7"\}\s+succeeded by operator:/m);
    });

    it('verifies providers as a table of results', async () => {
      // Act
      const verified = await cli(['providers', 'verify', '--provider', 'sim-primary']);

      // Assert
      expect(verified.code).toBe(0);
      expect(verified.out).toMatch(/^PASS\s+support\.reply\s+sim-primary\s/m);
    });

    it("runs an effect's drills as a table, and lists each effect with what recovery may do", async () => {
      // Act
      const verified = await cli(['effects', 'verify', '--effect', 'message.send']);
      const listed = await cli(['effects', 'list']);
      const unknown = await cli(['effects', 'verify', '--effect', 'record.write']);

      // Assert
      expect(verified.code).toBe(0);
      expect(verified.out).toMatch(/^message\.send\s+lookup_not_found\s+PASS\s+not found, as never sent/m);
      expect(verified.out).toMatch(/^message\.send\s+dedupe\s+skipped\s+deduplicates is not claimed/m);
      // In the order the drills run, whatever order the evidence's JSON keeps
      expect([...verified.out.matchAll(/^message\.send\s+(\S+)/gm)].map((row) => row[1])).toEqual(['send', 'lookup_found', 'lookup_not_found', 'dedupe', 'disconnect', 'classification']);
      expect(listed.out).toMatch(/^message\.send\s+verified\s+-\s+settle_or_send\s/m);
      expect(unknown.code).toBe(1);
    });

    it('exits 1 with the problem when the key is not an operator', async () => {
      // Act
      const result = await cli(['jobs', 'list', '--status', 'running'], { ONCEFLOW_KEY: KEYS.alice });

      // Assert
      expect(result.code).toBe(1);
      expect(result.err).toMatch(/^onceflow: 403 Forbidden: only operators list jobs/);
    });

    it('exits 1 with the problem for a job that does not exist', async () => {
      const result = await cli(['jobs', 'show', randomUUID()]);
      expect(result.code).toBe(1);
      expect(result.err).toMatch(/^onceflow: 404 Not found: no such job/);
    });

    it.each([
      [['jobs', 'list']],
      [['jobs', 'list', '--status', 'stuck']],
      [['jobs', 'list', '--status', 'running', '--limit', '500']],
      [['jobs', 'show']],
      [['attempts', 'resolve', 'J', 'A', '--outcome', 'succeeded', '--reason', 'r']],
      [['attempts', 'resolve', 'J', 'A', '--outcome', 'failed']],
      [['effects', 'resolve', 'J', 'message.send', '--outcome', 'succeeded', '--reason', 'r', '--receipt', 'not json']],
      [['jobs', 'delete', 'J']],
      [['jobs', 'list', '--status', 'running', '--verbose']],
    ])('exits 2 on the bad command line %j', async (argv) => {
      const result = await cli(argv);
      expect(result.code).toBe(2);
      expect(result.err).toMatch(/usage: onceflow jobs list/);
    });

    it('exits 2 without a key', async () => {
      const result = await cli(['jobs', 'list', '--status', 'running'], { ONCEFLOW_KEY: '' });
      expect(result.code).toBe(2);
      expect(result.err).toMatch(/ONCEFLOW_KEY/);
    });
  });

  describe('as a process', () => {
    /** Runs src/cli/main.ts as `npx tsx` would. */
    function spawnCli(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../../src/cli/main.ts'), ...argv], { env: { ...process.env, ...env } });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk) => (out += chunk));
        child.stderr.on('data', (chunk) => (err += chunk));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, out, err }));
      });
    }

    it('creates a key against DATABASE_URL and lists jobs against ONCEFLOW_URL with it', async () => {
      // Arrange
      await stack.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;

      // Act
      const created = await spawnCli(['keys', 'create', '--principal', 'pat', '--role', 'operator', '--json'], { DATABASE_URL: stack.db.url });
      const key = JSON.parse(created.out).key as string;
      const listed = await spawnCli(['jobs', 'list', '--status', 'accepted', '--json'], { ONCEFLOW_URL: url, ONCEFLOW_KEY: key });
      const refused = await spawnCli(['jobs', 'list', '--status', 'accepted'], { ONCEFLOW_URL: url, ONCEFLOW_KEY: `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}` });

      // Assert
      expect(created.code).toBe(0);
      expect(listed.code).toBe(0);
      expect(Array.isArray(JSON.parse(listed.out).jobs)).toBe(true);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/401 Unauthorized/);
    }, 60_000);
  });

  describe('routes', () => {
    it('starts a canary, lists it as serving its share, and stops it with a reason', async () => {
      // Act
      const started = await cli(['routes', 'canary', 'start', '--operation', 'support.reply', '--version', 'cli-backup-first', '--route', 'sim-backup/sim-large,sim-primary/sim-small', '--owner', 'olga', '--share', '5', '--expires-in', '2h', '--window', '100', '--json']);
      const listed = await cli(['routes', 'list']);
      const noReason = await cli(['routes', 'canary', 'stop', 'support.reply', 'cli-backup-first']);
      const stopped = await cli(['routes', 'canary', 'stop', 'support.reply', 'cli-backup-first', '--reason', 'done for today']);
      const again = await cli(['routes', 'canary', 'promote', 'support.reply', 'cli-backup-first']);

      // Assert
      expect(started.code).toBe(0);
      expect(JSON.parse(started.out)).toMatchObject({ version: 'cli-backup-first', state: 'running', sharePercent: 5, owner: 'olga', thresholds: { window: 100, contractViolationsPercent: 2 } });
      expect(listed.code).toBe(0);
      expect(listed.out).toMatch(/cli-backup-first\s+canary\s+running \(5 %\)\s+sim-backup\/sim-large > sim-primary\/sim-small/);
      expect(noReason.code).toBe(2);
      expect(noReason.err).toMatch(/--reason is required/);
      expect(stopped.code).toBe(0);
      expect(stopped.out).toMatch(/stopped \(done for today\)/);
      expect(again.code).toBe(1);
      expect(again.err).toMatch(/409 Route version not in that state/);
    });

    it('refuses a bad route or expiry before asking the server (exit 2)', async () => {
      const badRoute = await cli(['routes', 'canary', 'start', '--operation', 'support.reply', '--version', 'x', '--route', 'sim-backup', '--owner', 'o', '--share', '5', '--expires-in', '2h']);
      const bothExpiries = await cli(['routes', 'canary', 'start', '--operation', 'support.reply', '--version', 'x', '--route', 'a/b', '--owner', 'o', '--share', '5', '--expires-in', '2h', '--expires-at', '2030-01-01T00:00:00Z']);
      expect([badRoute.code, bothExpiries.code]).toEqual([2, 2]);
    });
  });
});
