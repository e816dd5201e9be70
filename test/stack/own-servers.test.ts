import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/stack/temporal-dev';
import { pollUntil } from '../harness/poll';
import { alive, descendantsOf, launchStack, listening, processGroupOf, type LaunchedStack } from './launch';

/**
 * `npm start` with nothing given: its own embedded PostgreSQL and Temporal dev
 * server, placed and shaped by the documented settings, stopped by SIGTERM as
 * a service manager stops it.
 */
describe('npm start with its own PostgreSQL and Temporal dev server', () => {
  let stack: LaunchedStack;
  let dataDir: string;
  const ports = { pg: 0, temporal: 0, ui: 0, metrics: 0 };
  /** The API's URL as the start banner prints it. */
  const apiUrl = (): string | undefined => stack.lines.map((line) => /^\s+API\s+(http:\S+)/.exec(line)?.[1]).find(Boolean);

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-start-'));
    for (const name of Object.keys(ports) as Array<keyof typeof ports>) ports[name] = await freePort();
    stack = launchStack({
      ONCEFLOW_PG_DATA_DIR: path.join(dataDir, 'pg'),
      ONCEFLOW_PG_PORT: String(ports.pg),
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
      TEMPORAL_UI: '0',
      TEMPORAL_DB_FILENAME: '',
      ONCEFLOW_WORKER_METRICS_PORT: String(ports.metrics),
      ONCEFLOW_API_PORT: '0',
      SIM_PRIMARY_PORT: '0',
      SIM_BACKUP_PORT: '0',
      SIM_DOWNSTREAM_PORT: '0',
      ONCEFLOW_STACK_FILE: path.join(dataDir, 'stack.json'),
    });
    await stack.waitFor('Ctrl-C stops everything');
  }, 120_000);

  afterAll(() => {
    stack?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the embedded PostgreSQL data in ONCEFLOW_PG_DATA_DIR', () => {
    // Assert
    expect(existsSync(path.join(dataDir, 'pg', 'PG_VERSION'))).toBe(true);
  });

  it('prints the URL of the API where it listens, also on a port chosen at start (ONCEFLOW_API_PORT=0)', async () => {
    // Act
    const response = await fetch(`${apiUrl()}/healthz`);

    // Assert
    expect(response.status).toBe(200);
  });

  it('serves the demo page it prints, holding the demo key it issued, and the client package beside it', async () => {
    // Arrange
    const printed = (pattern: RegExp): string | undefined => stack.lines.map((line) => pattern.exec(line)?.[1]).find(Boolean);
    const demoUrl = printed(/^\s+Demo page\s+(http:\S+)/);
    const demoKey = printed(/^\s+demo API key\s+(\S+)/);

    // Act
    const page = await fetch(demoUrl!);
    const config = await (await fetch(`${apiUrl()}/demo/config.json`)).json();
    const clientModule = await fetch(`${apiUrl()}/demo/client/index.js`);

    // Assert
    expect(demoUrl).toBe(`${apiUrl()}/demo`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Send reply');
    expect(config).toEqual({ apiKey: demoKey });
    expect(clientModule.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await clientModule.text()).toContain('IntentClient');
  });

  it('tells the command line of the checkout where its database, API and operator key are, while it runs', async () => {
    // Act
    const written = JSON.parse(readFileSync(path.join(dataDir, 'stack.json'), 'utf8'));

    // Assert
    expect(written).toMatchObject({ apiUrl: apiUrl(), databaseUrl: expect.stringMatching(new RegExp(`^postgres(ql)?://.*:${ports.pg}/onceflow`)), operatorKey: expect.stringMatching(/^k_operator_/) });
    expect(statSync(path.join(dataDir, 'stack.json')).mode & 0o777).toBe(0o600);
  });

  it('prints an example submission of each operation it loaded, and the timeouts it shortens', () => {
    // Assert
    const banner = stack.lines.join('\n');
    for (const operation of ['support.reply', 'ticket.summarize']) expect(banner).toContain(`"operation":"${operation}"`);
    expect(banner).toMatch(/Dev timeouts\s+ONCEFLOW_ATTEMPT_TIMEOUT_MS=5000/);
  });

  it("answers the banner's example for the demo alias through the OpenAI-compatible entry", async () => {
    // Arrange: the example as printed (curl … URL -H … -d '<body>')
    const banner = stack.lines.join('\n');
    const example = /curl -s -X POST (\S+\/openai\/v1\/chat\/completions) -H 'Authorization: Bearer ([^']+)'[\s\S]*?-H 'Idempotency-Key: ([^']+)'[\s\S]*?-d '([^']+)'/.exec(banner);
    expect(example).not.toBeNull();
    const [, url, key, idempotencyKey, body] = example!;

    // Act
    const response = await fetch(url!, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'idempotency-key': idempotencyKey!, 'content-type': 'application/json' }, body });

    // Assert
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ object: 'chat.completion', model: 'support-chat', choices: [{ message: { role: 'assistant' } }] });
  });

  it('serves no Temporal Web UI with TEMPORAL_UI=0', async () => {
    // Assert
    expect(await listening(ports.temporal)).toBe(true);
    expect(await listening(ports.ui)).toBe(false);
    expect(stack.lines).toContainEqual(expect.stringMatching(/Temporal UI\s+off \(TEMPORAL_UI=0/));
  });

  it("serves the worker's counters on ONCEFLOW_WORKER_METRICS_PORT", async () => {
    // Act
    const response = await fetch(`http://127.0.0.1:${ports.metrics}/metrics`);

    // Assert
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('onceflow_attempts_started_total');
  });

  it('on SIGTERM stops the API, worker, simulators, Temporal and then PostgreSQL, exits 0 and leaves no process behind', async () => {
    // Arrange
    const below = stack.descendants();
    expect(below.length).toBeGreaterThan(0);
    const apiPort = Number(new URL(apiUrl()!).port);

    // Act
    stack.child.kill('SIGTERM');
    const code = await stack.exited;

    // Assert
    expect(code).toBe(0);
    const stopped = stack.lines.filter((line) => line.startsWith('onceflow: stopped '));
    expect(stopped).toEqual([
      'onceflow: stopped the API',
      'onceflow: stopped the worker',
      'onceflow: stopped the simulators',
      'onceflow: stopped the Temporal dev server',
      'onceflow: stopped PostgreSQL',
    ]);
    expect(below.filter(alive)).toEqual([]);
    for (const port of [ports.pg, ports.temporal, ports.metrics, apiPort]) expect(await listening(port)).toBe(false);
    expect(existsSync(path.join(dataDir, 'stack.json'))).toBe(false);
  }, 60_000);
});

describe('npm start in a terminal', () => {
  let stack: LaunchedStack | undefined;
  let dataDir: string;
  afterAll(() => {
    stack?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('on Ctrl-C (SIGINT to its whole process group) still stops each server in its turn, exits 0 and leaves no process behind', async () => {
    // Arrange: the stack leads its own process group, as a shell's job does.
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-start-'));
    stack = launchStack(
      {
        ONCEFLOW_PG_DATA_DIR: path.join(dataDir, 'pg'),
        ONCEFLOW_PG_PORT: String(await freePort()),
        TEMPORAL_PORT: String(await freePort()),
        TEMPORAL_UI: '0',
        TEMPORAL_DB_FILENAME: '',
        ONCEFLOW_WORKER_METRICS_PORT: '0',
        ONCEFLOW_API_PORT: '0',
        SIM_PRIMARY_PORT: '0',
        SIM_BACKUP_PORT: '0',
        SIM_DOWNSTREAM_PORT: '0',
      },
      { processGroup: true },
    );
    await stack.waitFor('Ctrl-C stops everything');
    const below = stack.descendants();
    const reachedByCtrlC = below.filter((pid) => processGroupOf(pid) === stack!.child.pid);

    // Act: what a terminal does on Ctrl-C.
    process.kill(-stack.child.pid!, 'SIGINT');
    const code = await stack.exited;

    // Assert: the servers were still running when their turn came, not stopped by the signal ahead of the worker.
    expect(code).toBe(0);
    expect(reachedByCtrlC).toEqual([]);
    expect(stack.lines.filter((line) => /had (already )?(stopped|exited)/.test(line))).toEqual([]);
    expect(stack.lines.filter((line) => line.startsWith('onceflow: stopped '))).toEqual([
      'onceflow: stopped the API',
      'onceflow: stopped the worker',
      'onceflow: stopped the simulators',
      'onceflow: stopped the Temporal dev server',
      'onceflow: stopped PostgreSQL',
    ]);
    expect(below.filter(alive)).toEqual([]);
  }, 120_000);
});

describe('the servers of a process that crashes', () => {
  it('stop with it: the embedded PostgreSQL and the Temporal dev server are not left without their owner', async () => {
    // Arrange
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-crash-'));
    const owner = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, 'fixtures', 'crash-after-start.ts'), path.join(dataDir, 'pg')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    owner.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => owner.once('exit', resolve));
    const below: number[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        owner.stdout.on('data', (chunk) => String(chunk).includes('started') && resolve());
        void exited.then(() => reject(new Error(`exited before starting:\n${output}`)));
      });
      below.push(...descendantsOf(owner.pid!));

      // Act
      owner.kill('SIGUSR2');
      const code = await exited;

      // Assert: each server has been told to stop and does, in its own time.
      expect(code).toBe(1);
      expect(below.length).toBeGreaterThanOrEqual(2);
      await pollUntil(() => below.filter(alive).length === 0, { timeoutMs: 30_000, everyMs: 100 });
      expect(below.filter(alive)).toEqual([]);
    } finally {
      for (const pid of [owner.pid!, ...below].filter(alive)) process.kill(pid, 'SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
