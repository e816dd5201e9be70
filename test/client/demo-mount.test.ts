import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { readHarnessState } from '../harness/state';

const API_MAIN = path.join(__dirname, '..', '..', 'src', 'api', 'main.ts');

describe('the demo page outside npm start', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('is not served by `npm run api`, what production runs', async () => {
    // Arrange: the API process as `npm run api` starts it.
    const state = readHarnessState();
    const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(ONCEFLOW_|SIM_|TEMPORAL_)/.test(name) && name !== 'DATABASE_URL'));
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', API_MAIN], {
      env: { ...base, DATABASE_URL: db.url, TEMPORAL_ADDRESS: state.temporalAddress, TEMPORAL_NAMESPACE: state.temporalNamespace, ONCEFLOW_API_KEYS: 'alice:k_alice_api', ONCEFLOW_API_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const lines: string[] = [];
        const onLine = (line: string): void => {
          lines.push(line);
          const listening = /api: listening on (\S+)/.exec(line);
          if (listening) resolve(listening[1]!);
        };
        createInterface({ input: child.stdout! }).on('line', onLine);
        createInterface({ input: child.stderr! }).on('line', onLine);
        child.once('exit', (code) => reject(new Error(`npm run api exited (${code}):\n${lines.join('\n')}`)));
      });

      // Act
      const demo = await fetch(`${url}/demo`);
      const clientModule = await fetch(`${url}/demo/client/index.js`);
      const health = await fetch(`${url}/healthz`);

      // Assert
      expect(health.status).toBe(200);
      expect(demo.status).toBe(404);
      expect(clientModule.status).toBe(404);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
