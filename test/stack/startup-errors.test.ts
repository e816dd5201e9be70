import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { createTestDatabase } from '../harness/database';
import { readHarnessState } from '../harness/state';

/** `npm start` with a broken environment: one line saying what is wrong, a non-zero exit, nothing left running. */
describe('start-up errors', () => {
  function start(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', '..', 'src', 'stack', 'start.ts')], {
      env: { ...process.env, SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: '0', ONCEFLOW_API_PORT: '0', ONCEFLOW_WORKER_METRICS_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  }

  it('names an unreachable DATABASE_URL, without its password, in one line', async () => {
    // Act
    const result = await start({ DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/app', TEMPORAL_ADDRESS: readHarnessState().temporalAddress });

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^onceflow: PostgreSQL at postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/app is not reachable .*check DATABASE_URL/)]);
    expect(result.stdout + result.stderr).not.toContain('s3cret');
  }, 60_000);

  it('names a busy Temporal port and what to change, in one line', async () => {
    // Arrange
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;

    // Act
    const result = await start({ DATABASE_URL: readHarnessState().adminDatabaseUrl, TEMPORAL_ADDRESS: '', TEMPORAL_PORT: String(port) });
    holder.close();

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([`onceflow: port ${port} on 127.0.0.1 is busy; set TEMPORAL_PORT or port in temporal-dev.yaml, or stop what uses it`]);
  }, 60_000);

  it.each(['SIM_BACKUP_PORT', 'ONCEFLOW_WORKER_METRICS_PORT'])('names a busy port set by %s and that variable, in one line', async (variable) => {
    // Arrange
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    const { temporalAddress, temporalNamespace } = readHarnessState();
    const db = await createTestDatabase({ migrate: false });

    // Act
    const result = await start({ DATABASE_URL: db.url, TEMPORAL_ADDRESS: temporalAddress, TEMPORAL_NAMESPACE: temporalNamespace, ONCEFLOW_VERIFY_AT_START: '0', [variable]: String(port) });
    holder.close();
    await db.drop();

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n').filter((line) => !line.includes('WARNING'))).toEqual([`onceflow: port ${port} on 127.0.0.1 is busy; set ${variable}`]);
  }, 60_000);

  it('checks the operations file as onceflow check does, before starting anything: every problem, each with its line and column', async () => {
    // Arrange: a declared effect with an unset secret and a placeholder that names nothing
    const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-start-check-'));
    const file = path.join(dir, 'ops.yaml');
    const demo = readFileSync(path.join(__dirname, '..', '..', 'operations', 'demo.yaml'), 'utf8');
    const effect = '\neffects:\n  - name: ticket.comment\n    url: https://tickets.example.com/v1/comments\n    headers: { Authorization: "Bearer ${UNSET_TOKEN_FOR_TEST}" }\n    body: { text: "{{outputs.reply}}" }\n    deduplicates: false\n';
    writeFileSync(file, demo.replace(/\neffects:[\s\S]*$/, '') + effect);

    // Act
    const result = await start({ ONCEFLOW_OPERATIONS_FILE: file, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', TEMPORAL_ADDRESS: '127.0.0.1:1' });
    rmSync(dir, { recursive: true, force: true });

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: /effects/0/headers/Authorization: environment variable UNSET_TOKEN_FOR_TEST is not set`));
    expect(result.stderr).toMatch(/:\d+:\d+: \/effects\/0\/body\/text: \{\{outputs\.reply\}\} names nothing a job has/);
    expect(result.stdout).not.toMatch(/PostgreSQL|Temporal/);
  }, 60_000);
});

