import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from '../../src/stack/temporal-dev';
import { createTestDatabase, type TestDatabase } from '../harness/database';

/** `npm start` leaves no process behind: after Ctrl-C once running, and during start-up. */
describe('starting and stopping the stack', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db.drop());

  async function launch(): Promise<{ child: ChildProcess; temporalPort: number; lines: string[]; waitFor(text: string): Promise<void> }> {
    const temporalPort = await freePort();
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', '..', 'src', 'stack', 'start.ts')], {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: '',
        TEMPORAL_PORT: String(temporalPort),
        TEMPORAL_UI_PORT: String(await freePort()),
        TEMPORAL_DB_FILENAME: '',
        ONCEFLOW_API_PORT: '0',
        SIM_PRIMARY_PORT: '0',
        SIM_BACKUP_PORT: '0',
        SIM_DOWNSTREAM_PORT: '0',
        ONCEFLOW_PROVIDERS_FILE: path.join(__dirname, '..', 'fixtures', 'no-providers.yaml'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    const waiters: Array<{ text: string; resolve: () => void }> = [];
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      for (const waiter of waiters.filter((w) => line.includes(w.text))) waiter.resolve();
    });
    child.stderr!.on('data', (chunk) => lines.push(String(chunk)));
    return {
      child,
      temporalPort,
      lines,
      waitFor: (text) =>
        new Promise<void>((resolve, reject) => {
          if (lines.some((line) => line.includes(text))) return resolve();
          waiters.push({ text, resolve });
          child.once('exit', () => reject(new Error(`exited before "${text}":\n${lines.join('\n')}`)));
        }),
    };
  }

  const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once('exit', resolve));
  const listening = (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });

  it('stops the Temporal dev server and everything else on Ctrl-C once running', async () => {
    // Arrange
    const stack = await launch();
    await stack.waitFor('Ctrl-C stops everything');
    expect(await listening(stack.temporalPort)).toBe(true);

    // Act
    const done = exited(stack.child);
    stack.child.kill('SIGINT');
    const code = await done;

    // Assert
    expect(code).toBe(0);
    expect(await listening(stack.temporalPort)).toBe(false);
  }, 90_000);

  it('stops what it had started when Ctrl-C comes during start-up', async () => {
    // Arrange
    const stack = await launch();
    await stack.waitFor('Temporal dev server at');

    // Act
    const done = exited(stack.child);
    stack.child.kill('SIGINT');
    const code = await done;

    // Assert
    expect(code).toBe(130);
    expect(await listening(stack.temporalPort)).toBe(false);
    expect(stack.lines.join('\n')).toContain('interrupted during start-up');
  }, 90_000);
});
