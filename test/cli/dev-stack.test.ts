import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli/main';
import type { CliIo } from '../../src/cli/io';
import { readStackFile, removeStackFile, writeStackFile } from '../../src/stack/stack-file';
import { createTestDatabase, type TestDatabase } from '../harness/database';

/**
 * The command line on the dev stack: `npm start` writes where its database
 * and API are (and its operator key) to .data/stack.json, and the CLI of the
 * checkout reads it when DATABASE_URL, ONCEFLOW_URL and ONCEFLOW_KEY are not set.
 */
describe('the command line on the stack npm start runs', () => {
  let db: TestDatabase;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-stack-file-'));
  const file = path.join(dir, 'stack.json');
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  function io(env: NodeJS.ProcessEnv, fetchStub?: typeof fetch): CliIo & { out_: string[]; err_: string[] } {
    const out_: string[] = [];
    const err_: string[] = [];
    return { env: { ONCEFLOW_STACK_FILE: file, ...env }, out: (t) => void out_.push(t), err: (t) => void err_.push(t), ...(fetchStub ? { fetch: fetchStub } : {}), out_, err_ };
  }

  it('creates a key in the running stack database without DATABASE_URL', async () => {
    // Arrange
    writeStackFile(file, { databaseUrl: db.url, apiUrl: 'http://127.0.0.1:1', operatorKey: 'k_operator_x' });

    // Act
    const cli = io({});
    const code = await runCli(['keys', 'create', '--principal', 'ann', '--json'], cli);

    // Assert
    expect(code).toBe(0);
    expect(JSON.parse(cli.out_[0]!)).toMatchObject({ principal: 'ann', role: 'tenant' });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("sends the operator's commands to the running stack's API with its operator key", async () => {
    // Arrange
    writeStackFile(file, { databaseUrl: db.url, apiUrl: 'http://127.0.0.1:4321', operatorKey: 'k_operator_dev' });
    const asked: Array<{ url: string; authorization: string | null }> = [];
    const fetchStub = (async (url: string | URL | Request, init?: RequestInit) => {
      asked.push({ url: String(url), authorization: new Headers(init?.headers).get('authorization') });
      return new Response(JSON.stringify({ jobs: [], nextCursor: null }), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;

    // Act
    const code = await runCli(['jobs', 'list', '--status', 'awaiting_resolution', '--json'], io({}, fetchStub));

    // Assert
    expect(code).toBe(0);
    expect(asked[0]).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:4321\/v1\/jobs\?/), authorization: 'Bearer k_operator_dev' });
  });

  it('ignores the file of a stack that is no longer running, and says how to find the database', async () => {
    // Arrange: the file a stack killed with SIGKILL left behind (its process is gone)
    const gone = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
    writeFileSync(file, JSON.stringify({ databaseUrl: db.url, apiUrl: 'http://127.0.0.1:1', pid: gone, startedAt: new Date().toISOString() }));

    // Act
    const cli = io({});
    const code = await runCli(['keys', 'list'], cli);

    // Assert
    expect(readStackFile(file)).toBeUndefined();
    expect(code).toBe(2);
    expect(cli.err_.join('\n')).toMatch(/DATABASE_URL is not set.*npm start/s);
  });

  it('removes only the file this process wrote', () => {
    // Arrange
    writeStackFile(file, { databaseUrl: db.url, apiUrl: 'http://127.0.0.1:1' });

    // Act
    removeStackFile(file);

    // Assert
    expect(readStackFile(file)).toBeUndefined();
  });
});
