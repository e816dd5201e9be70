import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

const MAIN = path.join(__dirname, '../../src/sim/main.ts');

/** Runs the simulator CLI from source (through tsx) with `env` added. */
function runCli(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), MAIN], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('sim CLI', () => {
  it('logs one URL line per server and exits 0 on SIGTERM', async () => {
    // Arrange
    const cli = runCli({ SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: '0' });
    try {
      await waitFor(() => cli.output().stdout.split('\n').length > 3, 15_000);

      // Act
      cli.child.kill('SIGTERM');
      const code = await cli.exited;

      // Assert
      const lines = cli.output().stdout.trim().split('\n');
      expect(lines).toEqual([
        expect.stringMatching(/^sim-primary listening on http:\/\/127\.0\.0\.1:\d+\/v1$/),
        expect.stringMatching(/^sim-backup listening on http:\/\/127\.0\.0\.1:\d+\/v1$/),
        expect.stringMatching(/^sim-downstream listening on http:\/\/127\.0\.0\.1:\d+$/),
      ]);
      expect(code).toBe(0);
    } finally {
      cli.child.kill('SIGKILL');
    }
  }, 20_000);

  it('says on its downstream line which lie the downstream tells', async () => {
    // Arrange
    const cli = runCli({ SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: '0', SIM_DOWNSTREAM_LIE: 'lookup-slow-to-show=800' });
    try {
      // Act
      await waitFor(() => cli.output().stdout.split('\n').length > 3, 15_000);

      // Assert
      expect(cli.output().stdout.trim().split('\n')[2]).toMatch(/^sim-downstream listening on http:\/\/127\.0\.0\.1:\d+ \(lying: lookup-slow-to-show=800\)$/);
    } finally {
      cli.child.kill('SIGKILL');
    }
  }, 20_000);

  it('exits 1 with one line naming the busy port and the variable to change', async () => {
    // Arrange
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      // Act
      const cli = runCli({ SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: String(port) });
      const code = await cli.exited;

      // Assert
      expect(code).toBe(1);
      expect(cli.output().stderr).toBe(`sim: port ${port} is already in use; set SIM_DOWNSTREAM_PORT to another port\n`);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  }, 20_000);
});
