import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/stack/temporal-dev';
import { SIM_PORT_ENV } from '../../src/sim/main';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { readHarnessState } from '../harness/state';
import { launchStack, type LaunchedStack } from './launch';

const KEY = 'k_start_test';

/**
 * What `npm start` calls: the simulators it started, wherever they were moved,
 * and only providers whose contracts it verified at start (or a loud word why not).
 */
describe('the providers of npm start', () => {
  let db: TestDatabase;
  let stack: LaunchedStack | undefined;
  let dir: string;

  beforeEach(async () => {
    db = await createTestDatabase({ migrate: false });
    dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-providers-'));
  });
  afterEach(async () => {
    stack?.kill();
    await stack?.exited;
    stack = undefined;
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** npm start against the run's PostgreSQL and Temporal server, on a task queue of its own. */
  async function start(env: NodeJS.ProcessEnv): Promise<{ api: string }> {
    const state = readHarnessState();
    const apiPort = await freePort();
    stack = launchStack({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: state.temporalAddress,
      TEMPORAL_NAMESPACE: state.temporalNamespace,
      ONCEFLOW_TASK_QUEUE: `start-${randomUUID()}`,
      ONCEFLOW_API_PORT: String(apiPort),
      ONCEFLOW_API_KEYS: `tester:${KEY}`,
      ONCEFLOW_WORKER_METRICS_PORT: String(await freePort()),
      ONCEFLOW_VERIFICATION_SAMPLES: '1',
      ...env,
    });
    await stack.waitFor('Ctrl-C stops everything');
    return { api: `http://127.0.0.1:${apiPort}` };
  }

  /** Listens where the default simulators would, if that port is free, and counts who calls. */
  async function impostor(port: number): Promise<{ connections: number; close(): Promise<void> }> {
    const state = { connections: 0, close: () => Promise.resolve() };
    const server = net.createServer((socket) => {
      state.connections += 1;
      socket.destroy();
    });
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    // Taken already (another copy of the stack): something else listens there, as the test wants.
    if (bound) state.close = () => new Promise((resolve) => server.close(() => resolve()));
    return state;
  }

  // One row per provider and model: every demo operation (support.reply, ticket.summarize) verifies each step alike.
  async function verifications(): Promise<Array<{ provider: string; model: string; passed: boolean }>> {
    const { rows } = await db.pool.query('SELECT provider, model, passed, array_agg(operation ORDER BY operation) AS operations FROM provider_contracts GROUP BY 1, 2, 3 ORDER BY provider, model');
    for (const row of rows) expect({ ...row, operations: row.operations }).toEqual({ ...row, operations: ['support-chat', 'support.reply', 'ticket.summarize'] });
    return rows.map(({ provider, model, passed }) => ({ provider, model, passed }));
  }

  it("moves the built-in providers and the messaging service with the simulators' ports", async () => {
    // Arrange: something else on the default ports, this stack's simulators elsewhere.
    const impostors = await Promise.all(Object.values(SIM_PORT_ENV).map(({ defaultPort }) => impostor(defaultPort)));
    const ports = { primary: await freePort(), backup: await freePort(), downstream: await freePort() };
    try {
      const { api } = await start({
        SIM_PRIMARY_PORT: String(ports.primary),
        SIM_BACKUP_PORT: String(ports.backup),
        SIM_DOWNSTREAM_PORT: String(ports.downstream),
      });

      // Act
      const response = await fetch(`${api}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'idempotency-key': 'moved-1', 'content-type': 'application/json', prefer: 'wait=30' },
        body: JSON.stringify({ operation: 'support.reply', input: { ticketId: 'T-moved', customerMessage: 'Where is my order?', channel: 'email' } }),
      });
      const job = (await response.json()) as { status: string };
      const delivered = (await (await fetch(`http://127.0.0.1:${ports.downstream}/v1/messages?ticketId=T-moved`)).json()) as { messages: unknown[] };

      // Assert
      expect(job.status).toBe('succeeded');
      expect(delivered.messages).toHaveLength(1);
      expect(impostors.map((i) => i.connections)).toEqual([0, 0, 0]);
      expect(await verifications()).toEqual([
        { provider: 'sim-backup', model: 'sim-large', passed: true },
        { provider: 'sim-primary', model: 'sim-small', passed: true },
      ]);
      // The demo alias, through each entry with the official clients, once the API was up.
      const entries = await db.pool.query(`SELECT alias, entry, passed FROM entry_verifications ORDER BY id`);
      expect(entries.rows).toEqual([
        { alias: 'support-chat', entry: 'openai', passed: true },
        { alias: 'support-chat', entry: 'anthropic', passed: true },
      ]);
    } finally {
      await Promise.all(impostors.map((i) => i.close()));
    }
  }, 90_000);

  it("verifies the routes of a providers file at start and names a provider that failed", async () => {
    // Arrange: the file's primary is this stack's simulator; its fallback answers nothing.
    const simPort = await freePort();
    const deadPort = await freePort();
    const file = path.join(dir, 'providers.yaml');
    writeFileSync(
      file,
      `providers:
  file-primary: { kind: openai-compatible, baseUrl: "http://127.0.0.1:${simPort}/v1", lookup: true, prices: { sim-small: { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: USD } } }
  file-backup: { kind: openai-compatible, baseUrl: "http://127.0.0.1:${deadPort}/v1", prices: { sim-large: { inputPerMillion: "2.50", outputPerMillion: "10.00", currency: USD } } }
routes:
  support.reply:
    - { provider: file-primary, model: sim-small }
    - { provider: file-backup, model: sim-large }
  ticket.summarize:
    - { provider: file-primary, model: sim-small }
    - { provider: file-backup, model: sim-large }
  support-chat:
    - { provider: file-primary, model: sim-small }
    - { provider: file-backup, model: sim-large }
`,
    );

    // Act
    await start({ ONCEFLOW_PROVIDERS_FILE: file, SIM_PRIMARY_PORT: String(simPort), SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: '0' });

    // Assert
    expect(await verifications()).toEqual([
      { provider: 'file-backup', model: 'sim-large', passed: false },
      { provider: 'file-primary', model: 'sim-small', passed: true },
    ]);
    expect(stack!.lines).toContainEqual(expect.stringMatching(/file-backup\/sim-large FAILED verification for support\.reply/));
    expect(stack!.lines).toContainEqual(expect.stringMatching(/file-backup\/sim-large FAILED verification for ticket\.summarize/));
  }, 90_000);

  it('says which providers were not verified, and why, when verification at start is turned off', async () => {
    // Act
    await start({ ONCEFLOW_VERIFY_AT_START: '0', SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: '0' });

    // Assert
    expect(await verifications()).toEqual([]);
    const warning = stack!.lines.filter((line) => line.includes('NOT verified at start'));
    expect(warning).toEqual([expect.stringContaining('ONCEFLOW_VERIFY_AT_START=0')]);
    expect(warning[0]).toContain('sim-primary/sim-small');
    expect(warning[0]).toContain('sim-backup/sim-large');
    expect(stack!.lines).toContainEqual(expect.stringMatching(/sim-backup\/sim-large will not take failover attempts for support\.reply: no verification/));
  }, 90_000);
});
