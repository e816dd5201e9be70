import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli/main';
import type { CliIo } from '../../src/cli/io';
import { startSimStack, type SimStack } from '../../src/sim/stack';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { partEnv, startPart, stopPart } from '../harness/parts';
import { partsOf, ROOT } from './markdown';

/**
 * The README's "Your own operation, end to end", followed as a new user
 * follows it: its ops.yaml and providers.yaml as written (the provider's
 * baseUrl pointed at the simulator instead of OpenAI, the notes service at
 * the simulated downstream), `onceflow check`, the API and a worker, a key
 * from `onceflow keys create`, the README's job, then the key revoked.
 */
describe("the README's own operation, end to end", () => {
  const blocks = partsOf(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).blocks;
  const fileNamed = (name: string): string => blocks.find((b) => b.info === 'yaml' && b.body.startsWith(`# ${name}\n`))!.body;
  let db: TestDatabase;
  let sims: SimStack;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let api: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let apiUrl: string;

  /** The command line, in this process, with the user's environment. */
  async function onceflow(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = { env: { ...env, ONCEFLOW_STACK_FILE: path.join(dir, 'no-stack.json') }, out: (t) => void out.push(t), err: (t) => void err.push(t) };
    const code = await runCli(args, io);
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    sims = await startSimStack();
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-readme-e2e-'));
    writeFileSync(path.join(dir, 'ops.yaml'), fileNamed('ops.yaml'));
    writeFileSync(path.join(dir, 'providers.yaml'), fileNamed('providers.yaml').replace('https://api.openai.com/v1', sims.primary.url));
    env = {
      ...partEnv({ databaseUrl: db.url, sims, name: 'readme', aliceKey: 'k_unused_by_this_test' }),
      ONCEFLOW_API_KEYS: '',
      ONCEFLOW_OPERATIONS_FILE: path.join(dir, 'ops.yaml'),
      ONCEFLOW_PROVIDERS_FILE: path.join(dir, 'providers.yaml'),
      OPENAI_API_KEY: 'sk-test',
      NOTES_URL: sims.downstream.url,
      NOTES_TOKEN: 'anything',
    };
  }, 60_000);

  afterAll(async () => {
    await Promise.all([stopPart(api), stopPart(worker)]);
    await sims.close();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("checks, runs a job of the new operation with its note posted once, drills the notes service's claims, and refuses the key once revoked", async () => {
    // Step 3: check both files
    const checked = await onceflow(['check']);
    expect(checked).toMatchObject({ code: 0, out: expect.stringMatching(/^ok: .*ticket\.summary/) });

    // Step 5's key first: the API, as production runs it, starts only with a key to take
    const created = await onceflow(['keys', 'create', '--principal', 'alice', '--json']);
    expect(created.code).toBe(0);
    const { key, id } = JSON.parse(created.out) as { key: string; id: string };

    // Step 4: run it (the API and a worker, as production runs them)
    worker = (await startPart('worker', env, /^worker: polling/)).proc;
    const started = await startPart('api', env, /^api: listening on (\S+)/);
    api = started.proc;
    apiUrl = started.match[1]!;

    // Step 5: the README's job
    const submit = () =>
      fetch(`${apiUrl}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'summary-T-9', 'content-type': 'application/json', prefer: 'wait=30' },
        body: JSON.stringify({ operation: 'ticket.summary', input: { ticketId: 'T-9', text: 'I was charged twice for one order.' } }),
      });
    const answer = await submit();
    const job = (await answer.json()) as { status: string; result: { summary: string; priority: string; noteId: string } };
    const notes = sims.downstream.deliveries().filter((d) => d.ticketId === 'T-9');

    // Step 6: the notes service's claims, drilled (an operator's key)
    const operator = JSON.parse((await onceflow(['keys', 'create', '--principal', 'ops', '--role', 'operator', '--json'])).out) as { key: string };
    const verified = await onceflow(['effects', 'verify', '--effect', 'ticket.note', '--url', apiUrl, '--key', operator.key]);
    const drill = (name: string) => new RegExp(`^ticket\\.note\\s+${name}\\s+(\\S+)`, 'm').exec(verified.out)?.[1];

    // A revoked key is refused from the next request on
    const revoked = await onceflow(['keys', 'revoke', id]);
    const afterRevoke = await submit();

    // Assert
    expect(answer.status).toBe(200);
    expect(job).toMatchObject({ status: 'succeeded', result: { summary: expect.any(String), priority: expect.stringMatching(/^(low|high)$/), noteId: notes[0]?.messageId } });
    expect(notes).toHaveLength(1);
    expect(verified.code).toBe(0);
    expect(['send', 'lookup_found', 'lookup_not_found', 'disconnect', 'dedupe', 'classification'].map(drill)).toEqual(['PASS', 'PASS', 'PASS', 'PASS', 'skipped', 'skipped']);
    expect(revoked.code).toBe(0);
    expect(afterRevoke.status).toBe(401);
  }, 120_000);
});
