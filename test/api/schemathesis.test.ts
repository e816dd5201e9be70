import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';
import { ensureSchemathesis } from './schemathesis/venv';

/**
 * Schemathesis against the real stack (the API on a real port, PostgreSQL,
 * Temporal, a worker), generating requests from /openapi.json with every
 * check on, stateful links included: the document must describe what the
 * server does, and no request may get a 5xx.
 *
 * The CI run is short and seeded. The long run (`npm run test:schemathesis:long`)
 * takes its size and seed from ONCEFLOW_SCHEMATHESIS_MAX_EXAMPLES and
 * ONCEFLOW_SCHEMATHESIS_SEED.
 */
const MAX_EXAMPLES = Number(process.env.ONCEFLOW_SCHEMATHESIS_MAX_EXAMPLES ?? 25);
const SEED = Number(process.env.ONCEFLOW_SCHEMATHESIS_SEED ?? 20260611);
const TIMEOUT_MS = Number(process.env.ONCEFLOW_SCHEMATHESIS_TIMEOUT_MS ?? 600_000);

interface Run {
  code: number | null;
  output: string;
}

/** Runs a command without blocking this process (which serves the API under test), writing its output to a file as it goes. */
function run(command: string, args: string[], outputFile: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    // In the output's folder: Schemathesis keeps a cache of crashes in its working directory.
    const child = spawn(command, args, { cwd: path.dirname(outputFile), env: { ...process.env, NO_COLOR: '1', COLUMNS: '160' } });
    const file = createWriteStream(outputFile);
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk;
      file.write(chunk);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code) => file.end(() => resolve({ code, output })));
  });
}

/**
 * The summary block of Schemathesis' output, less its banners: the closing
 * one ("=== 3 warnings in 19.83s ===") has the shape of pytest's closing
 * line, and a reader of the test run's log would take it for a runner that
 * ran no test. The whole output stays in the run's folder.
 */
function summaryOf(output: string): string {
  const banner = output.lastIndexOf('SUMMARY');
  return output
    .slice(banner < 0 ? 0 : output.indexOf('\n', banner) + 1)
    .split('\n')
    .filter((line) => !/^=+ .* =+$/.test(line.trim()))
    .join('\n')
    .trimEnd();
}

describe('schemathesis against the running stack', () => {
  let stack: TestStack;
  let baseUrl: string;
  let st: string;
  beforeAll(async () => {
    st = ensureSchemathesis((line) => process.stderr.write(`[schemathesis] ${line}\n`));
    stack = await startTestStack({
      // Schemathesis checks that requests without a key are refused: those must not lock the test client out.
      env: { ONCEFLOW_AUTH_FAILURES_PER_WINDOW: '100000000' },
    });
    await stack.app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  }, 900_000);
  afterAll(() => stack?.close());

  async function schemathesis(name: string, apiKey: string, extra: string[]): Promise<void> {
    const dir = mkdtempSync(path.join(os.tmpdir(), `onceflow-schemathesis-${name}-`));
    const args = [
      '--config-file',
      path.join(__dirname, 'schemathesis', 'schemathesis.toml'),
      'run',
      `${baseUrl}/openapi.json`,
      '--checks',
      'all',
      '--seed',
      String(SEED),
      '--max-examples',
      String(MAX_EXAMPLES),
      '--header',
      `Authorization: Bearer ${apiKey}`,
      // One worker: hypothesis parses lambda sources with ast, which CPython 3.11 can break when two threads do it at once.
      '--workers',
      '1',
      '--request-timeout',
      '90',
      '--generation-database',
      'none',
      '--report',
      'junit',
      '--report-dir',
      dir,
      '--no-color',
      ...extra,
    ];
    const result = await run(st, args, path.join(dir, 'output.txt'));
    process.stderr.write(`[schemathesis] ${name}: seed ${SEED}, max examples ${MAX_EXAMPLES}, output in ${dir}\n${summaryOf(result.output)}\n`);
    expect({ exitCode: result.code, output: result.code === 0 ? 'passed' : result.output.slice(-20_000) }).toEqual({ exitCode: 0, output: 'passed' });
  }

  it(
    'finds no failure as a tenant, on every operation, stateful links included',
    async () => {
      await schemathesis('tenant', KEYS.alice, []);
    },
    TIMEOUT_MS,
  );

  it(
    'finds no failure as an operator, on the operator routes and job reads',
    async () => {
      await schemathesis('operator', KEYS.operator, ['--include-tag', 'operators', '--include-operation-id', 'getJob', '--include-operation-id', 'cancelJob', '--include-operation-id', 'getUsage']);
    },
    TIMEOUT_MS,
  );
});
