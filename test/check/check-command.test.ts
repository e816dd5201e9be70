import { spawn } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli/main';
import type { CliIo } from '../../src/cli/io';
import { admitJob } from '../../src/ledger/jobs';
import { recordOperationVersions } from '../../src/ledger/operation-versions';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { parseOperations } from '../../src/operations/load';
import { createTestDatabase, type TestDatabase } from '../harness/database';

const TWO_VERSIONS = path.join(__dirname, '..', 'operations', 'fixtures', 'two-versions.yaml');
const HOST = path.join(__dirname, '..', 'operations', 'fixtures', 'compiled-host.cjs');

/** `line:column` (1-based) of the first `needle` in `text`. */
function at(text: string, needle: string): string {
  const before = text.slice(0, text.indexOf(needle)).split('\n');
  return `${before.length}:${before[before.length - 1]!.length + 1}`;
}

/** Runs `onceflow ...` in-process; its exit code and what it printed. */
async function onceflow(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { env, out: (text) => (out += `${text}\n`), err: (text) => (err += `${text}\n`) };
  const code = await runCli(argv, io);
  return { code, out, err };
}

/** Runs a part (src/<part>/main.ts) as `npm run api` and `npm run worker` do, from the sources; its exit code and stderr. */
function runPart(entry: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const base = { ...process.env };
  for (const name of Object.keys(base)) if (/^(ONCEFLOW_|SIM_|TEMPORAL_)/.test(name) || name === 'DATABASE_URL') delete base[name];
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', '..', 'src', entry)], { env: { ...base, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}

/** Runs `onceflow ARGS` in a process that runs Onceflow compiled (test/operations/fixtures/compiled-host.cjs). */
function compiledCli(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [HOST, 'cli', ...argv], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (err += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out, err })));
}

const EFFECT_WITH_A_SECRET = `operations:
  - name: ticket.answer
    description: Answer a ticket and post the answer as a comment.
    versions:
      - schemaVersion: 1
        input: { type: object, additionalProperties: false, required: [ticketId], properties: { ticketId: { type: string } } }
        example: { ticketId: T-1 }
    output: { type: object, additionalProperties: false, required: [answer], properties: { answer: { type: string } } }
    prompt: { system: Answer briefly., user: "Ticket {{ticketId}}" }
    route: [sim-primary]
    effects: [ticket.comment]
effects:
  - name: ticket.comment
    url: https://tickets.example/api/comments
    headers: { Authorization: "Bearer \${TICKETS_TOKEN}" }
    body: { text: "{{output.reply}} {{outputs.answer}}" }
    deduplicates: false
`;

describe('onceflow check [--operations FILE] [--providers FILE]', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-check-cli-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0 with one line naming what it checked', async () => {
    // Act
    const checked = await onceflow(['check']);

    // Assert
    expect(checked.code).toBe(0);
    expect(checked.err).toBe('');
    expect(checked.out.trim().split('\n')).toEqual([expect.stringMatching(/^ok: .*demo\.yaml \(support\.reply, ticket\.summarize, support-chat; 0 HTTP effects\), built-in providers/)]);
  });

  it('exits 1 and prints every problem, one a line, file:line:column: pointer: what is wrong; never a secret', async () => {
    // Arrange
    const operations = path.join(dir, 'ops.yaml');
    const providers = path.join(dir, 'providers.yaml');
    writeFileSync(operations, EFFECT_WITH_A_SECRET);
    const providersText = 'providers:\n  sim-primary: { kind: openai-compatible, baseUrl: "${SIM_URL}", apiKeyEnv: SIM_KEY, defaultModel: m, prices: { m: { inputPerMillion: "1", outputPerMillion: "1", currency: USD } } }\n';
    writeFileSync(providers, providersText);

    // Act
    const checked = await onceflow(['check', '--operations', operations, '--providers', providers], { SIM_KEY: 's3cret-key' });

    // Assert
    expect(checked.code).toBe(1);
    expect(checked.out).toBe('');
    expect(checked.err.trim().split('\n')).toEqual([
      `${operations}:${at(EFFECT_WITH_A_SECRET, '${TICKETS_TOKEN}')}: /effects/0/headers/Authorization: environment variable TICKETS_TOKEN is not set`,
      `${operations}:${at(EFFECT_WITH_A_SECRET, '{{outputs.answer}}')}: /effects/0/body/text: {{outputs.answer}} names nothing a job has; placeholders may name input, output, job.id, job.operation and key`,
      `${providers}:${at(providersText, '${SIM_URL}')}: /providers/sim-primary/baseUrl: environment variable SIM_URL is not set`,
      `onceflow check: 3 problems`,
    ]);
    expect(checked.err).not.toContain('s3cret-key');
  });

  it('exits 2 on a bad command line', async () => {
    // Act
    const checked = await onceflow(['check', '--operation', 'x.yaml']);

    // Assert
    expect(checked.code).toBe(2);
    expect(checked.err).toMatch(/^onceflow: .*--operation[\s\S]*usage: onceflow check \[--operations FILE\] \[--providers FILE\]/);
  });

  it('loads a TypeScript module through tsx where Onceflow runs compiled (as `npx onceflow check` does)', async () => {
    // Arrange
    const operations = path.join(dir, 'ops.yaml');
    writeFileSync(operations, 'operations:\n  - module: ./ticket-tag.ts\n');
    writeFileSync(path.join(dir, 'ticket-tag.ts'), readFileSync(path.join(__dirname, '..', 'operations', 'fixtures', 'ticket-tag.ts'), 'utf8').replace("'../../../src/operations/define'", "'onceflow'"));
    const providers = path.join(dir, 'providers.yaml');
    writeFileSync(providers, 'providers:\n  sim-primary: { kind: openai-compatible, baseUrl: "${ONCEFLOW_SIM_PRIMARY_URL}", defaultModel: m, prices: { m: { inputPerMillion: "1", outputPerMillion: "1", currency: USD } } }\n');

    // Act
    const checked = await compiledCli(['check', '--operations', operations, '--providers', providers], {});

    // Assert
    expect(checked.err).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.out).toMatch(/^ok: .*\(ticket\.tag; 0 HTTP effects\)/);
  }, 30_000);
});

describe('npm run api and npm run worker', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-check-parts-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['api/main.ts', 'worker/main.ts'])('%s runs the check first: every problem, and no start', async (entry) => {
    // Arrange
    const operations = path.join(dir, 'ops.yaml');
    const text = EFFECT_WITH_A_SECRET.replace('  - name: ticket.answer', '  - module: ./triage.ts\n  - name: ticket.answer');
    writeFileSync(operations, text);
    writeFileSync(path.join(dir, 'triage.ts'), 'export default {};\n');

    // Act
    const started = await runPart(entry, { ONCEFLOW_OPERATIONS_FILE: operations, DATABASE_URL: 'postgres://127.0.0.1:1/none', ONCEFLOW_API_KEYS: 'a:k' });

    // Assert
    const part = entry.split('/')[0];
    expect(started.code).toBe(1);
    expect(started.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${part}: ${escapeRegExp(operations)}:2:5: /operations/0/module: \\./triage\\.ts is TypeScript, and this process loads JavaScript only .*npx tsc --module commonjs`)),
      `${operations}:${at(text, '${TICKETS_TOKEN}')}: /effects/0/headers/Authorization: environment variable TICKETS_TOKEN is not set`,
      `${operations}:${at(text, '{{outputs.answer}}')}: /effects/0/body/text: {{outputs.answer}} names nothing a job has; placeholders may name input, output, job.id, job.operation and key`,
    ]);
  }, 30_000);
});

describe('onceflow check with DATABASE_URL', () => {
  let db: TestDatabase;
  let dir: string;
  beforeEach(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-check-db-'));
  });
  afterEach(async () => {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses an input schema changed under a version that has jobs, at its line and column, and reads nothing else', async () => {
    // Arrange: jobs of support.ask v1 exist; the file then changes v1's input.
    const original = readFileSync(TWO_VERSIONS, 'utf8');
    await recordOperationVersions(db.pool, parseOperations(original, 'ops.yaml').registry);
    const input = { ticketId: 'T-1', question: 'Where?' };
    const scope = { principalId: 'alice', operation: 'support.ask', idempotencyKey: 'k-1' };
    await admitJob(db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest('support.ask', 1, input), workflowId: jobWorkflowId(scope) });
    const changed = path.join(dir, 'ops.yaml');
    writeFileSync(changed, original.replace('            question: { type: string, minLength: 1 }\n        example: { ticketId: T-1, question: Where is my parcel? }', '            question: { type: string, minLength: 1 }\n            note: { type: string }\n        example: { ticketId: T-1, question: Where is my parcel? }'));
    const before = (await db.pool.query('SELECT * FROM operation_versions ORDER BY schema_version')).rows;

    // Act
    const withDatabase = await onceflow(['check', '--operations', changed], { DATABASE_URL: db.url });
    const without = await onceflow(['check', '--operations', changed]);

    // Assert
    expect(withDatabase.code).toBe(1);
    expect(withDatabase.err.trim().split('\n')[0]).toBe(
      `${changed}:7:9: /operations/0/versions/0/input: the input schema of support.ask v1 changed, and jobs of support.ask v1 exist: declare the new schema as a new schemaVersion and keep v1 beside it`,
    );
    expect(without.code).toBe(0);
    expect(without.out).toMatch(/input schemas not compared with a database \(DATABASE_URL is not set\)$/m);
    expect((await db.pool.query('SELECT * FROM operation_versions ORDER BY schema_version')).rows).toEqual(before);
  });

  it('passes an unchanged file, saying it compared the input schemas', async () => {
    // Arrange
    await recordOperationVersions(db.pool, parseOperations(readFileSync(TWO_VERSIONS, 'utf8'), 'ops.yaml').registry);

    // Act
    const checked = await onceflow(['check', '--operations', TWO_VERSIONS], { DATABASE_URL: db.url });

    // Assert
    expect(checked.err).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.out).toMatch(/input schemas match the versions jobs were made with$/m);
  });

  it('names a database it cannot reach, with the rest of the problems', async () => {
    // Act
    const checked = await onceflow(['check'], { DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/app' });

    // Assert
    expect(checked.code).toBe(1);
    expect(checked.err).toMatch(/^environment: DATABASE_URL: PostgreSQL at postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/app is not reachable/m);
    expect(checked.err).not.toContain('s3cret');
  });
});

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
