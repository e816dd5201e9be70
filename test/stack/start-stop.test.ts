import path from 'node:path';
import { freePort } from '../../src/stack/temporal-dev';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { alive, launchStack, listening, type LaunchedStack } from './launch';

/** `npm start` leaves no process behind: after Ctrl-C or a closed terminal once running, and during start-up. */
describe('starting and stopping the stack', () => {
  let db: TestDatabase;
  let stack: LaunchedStack | undefined;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterEach(() => stack?.kill());
  afterAll(() => db.drop());

  async function launch(): Promise<{ stack: LaunchedStack; temporalPort: number }> {
    const temporalPort = await freePort();
    stack = launchStack({
      DATABASE_URL: db.url,
      TEMPORAL_PORT: String(temporalPort),
      TEMPORAL_UI_PORT: String(await freePort()),
      TEMPORAL_DB_FILENAME: '',
      ONCEFLOW_API_PORT: '0',
      ONCEFLOW_WORKER_METRICS_PORT: '0',
      SIM_PRIMARY_PORT: '0',
      SIM_BACKUP_PORT: '0',
      SIM_DOWNSTREAM_PORT: '0',
      ONCEFLOW_PROVIDERS_FILE: path.join(__dirname, '..', 'fixtures', 'no-providers.yaml'),
      ONCEFLOW_VERIFY_AT_START: '0',
    });
    return { stack, temporalPort };
  }

  it.each([
    ['Ctrl-C', 'SIGINT'],
    ['a closed terminal', 'SIGHUP'],
  ] as const)('stops the Temporal dev server and everything else on %s once running', async (_, signal) => {
    // Arrange
    const { stack, temporalPort } = await launch();
    await stack.waitFor('Ctrl-C stops everything');
    expect(await listening(temporalPort)).toBe(true);
    const below = stack.descendants();

    // Act
    stack.child.kill(signal);
    const code = await stack.exited;

    // Assert
    expect(code).toBe(0);
    expect(await listening(temporalPort)).toBe(false);
    expect(below.filter(alive)).toEqual([]);
  }, 90_000);

  it('stops what it had started when Ctrl-C comes during start-up', async () => {
    // Arrange
    const { stack, temporalPort } = await launch();
    await stack.waitFor('Temporal dev server at');

    // Act
    stack.child.kill('SIGINT');
    const code = await stack.exited;

    // Assert
    expect(code).toBe(130);
    expect(await listening(temporalPort)).toBe(false);
    expect(stack.lines.join('\n')).toContain('interrupted during start-up');
  }, 90_000);
});
