import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { startSimStack, type SimStack } from '../../src/sim/stack';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { partEnv, startPart, stopPart } from '../harness/parts';

const KEY = 'k_codecs_alice';
const WATCH = path.join(__dirname, '..', 'fixtures', 'codec-watch.ts');

/**
 * protobufjs builds a message type's codecs at its first use, about a
 * millisecond each. The API and the worker each run here as a process of
 * its own, with their warm-ups, and say which types they build after they
 * are ready: a job's way must find every type it uses already built.
 */
describe('the warm-ups of the API and the worker', () => {
  let db: TestDatabase;
  let sims: SimStack;
  const parts: ChildProcess[] = [];
  let apiUrl: string;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-codecs-'));
  const built = (part: string): string[] => {
    const file = path.join(dir, part);
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  };

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    sims = await startSimStack();
    const common = partEnv({ databaseUrl: db.url, sims, name: 'codecs', aliceKey: KEY });
    const env = (part: string): NodeJS.ProcessEnv => ({ ...common, NODE_OPTIONS: `--require tsx/cjs --require ${WATCH}`, CODEC_WATCH_FILE: path.join(dir, part) });
    const worker = await startPart('worker', env('worker'), /^worker: polling/);
    parts.push(worker.proc);
    const api = await startPart('api', env('api'), /^api: listening on (\S+)/);
    parts.push(api.proc);
    apiUrl = api.match[1]!;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(parts.map((proc) => stopPart(proc, 'SIGKILL')));
    await sims?.close();
    await db?.drop();
  });

  it('leave no codec of a job’s way to be built by the first job', async () => {
    const response = await fetch(`${apiUrl}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': randomUUID(), prefer: 'wait=30' },
      body: JSON.stringify({ operation: 'support.reply', input: { ticketId: 'T-1', customerMessage: 'Where is my order?', channel: 'email' } }),
    });
    expect(((await response.json()) as { status: string }).status).toBe('succeeded');
    expect({ api: built('api'), worker: built('worker') }).toEqual({ api: [], worker: [] });
  });
});
