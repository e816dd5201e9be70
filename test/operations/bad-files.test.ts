import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { loadConfig } from '../../src/config';
import { loadOperations, parseOperations } from '../../src/operations/load';
import { OperationsFileError } from '../../src/operations/problems';
import { loadProviders } from '../../src/providers/load';

/** A valid operations file as data; each case breaks one thing. */
function validFile(): Record<string, any> {
  return {
    operations: [
      {
        name: 'ticket.summary',
        description: 'Summarise a ticket.',
        versions: [
          {
            schemaVersion: 1,
            input: { type: 'object', additionalProperties: false, required: ['ticketId', 'text'], properties: { ticketId: { type: 'string' }, text: { type: 'string', maxLength: 2000 } } },
            example: { ticketId: 'T-1', text: 'Broken on arrival.' },
          },
        ],
        output: {
          type: 'object',
          additionalProperties: false,
          required: ['summary', 'priority'],
          properties: { summary: { type: 'string' }, priority: { type: 'string' }, meta: { type: 'object', additionalProperties: false, properties: {} } },
        },
        checks: [
          { field: '/summary', nonBlank: true, message: 'summary is blank' },
          { field: '/priority', enum: ['low', 'high'], message: 'priority is low or high' },
        ],
        prompt: { system: 'Answer with JSON.', user: 'Ticket {{ticketId}}: {{text}}' },
        route: ['sim-primary', 'sim-backup'],
        probes: [{ name: 'broken', input: { ticketId: 'P-1', text: 'Broken.' } }],
        effects: ['record.write'],
        result: { fields: { recordKey: { effect: 'record.write', field: 'recordKey' } } },
      },
    ],
  };
}

const FILE = 'ops.yaml';

/** The message of what parsing `data` (as YAML) throws. */
function problemsOf(data: unknown): string {
  try {
    parseOperations(typeof data === 'string' ? data : YAML.stringify(data), FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(OperationsFileError);
    return (error as Error).message;
  }
  throw new Error('the file was accepted');
}

const broken = (change: (file: Record<string, any>) => void): Record<string, any> => {
  const file = validFile();
  change(file);
  return file;
};
const op = (file: Record<string, any>): Record<string, any> => file.operations[0];

describe('an operations file with a mistake', () => {
  it('is accepted when nothing is wrong (the cases below each break one thing)', () => {
    const loaded = parseOperations(YAML.stringify(validFile()), FILE);
    expect([...loaded.registry.keys()]).toEqual(['ticket.summary']);
  });

  it('hands on reopenFailed: true, and leaves it out when the file does', () => {
    const declared = parseOperations(YAML.stringify(broken((f) => (op(f).reopenFailed = true))), FILE).registry.get('ticket.summary');
    const silent = parseOperations(YAML.stringify(validFile()), FILE).registry.get('ticket.summary');
    expect(declared?.reopenFailed).toBe(true);
    expect(silent?.reopenFailed).toBeUndefined();
  });

  it.each<[string, unknown, RegExp]>([
    ['invalid YAML', 'operations:\n  - name: [unclosed\n', /^ops\.yaml:\d+:\d+: \(document\): invalid YAML: /],
    ['a key given twice', 'operations: []\noperations: []\n', /^ops\.yaml:2:1: \(document\): invalid YAML: Map keys must be unique/],
    ['an unknown top-level key', broken((f) => (f.operatons = [])), /^ops\.yaml:\d+:1: \/operatons: is not a known key$/m],
    [
      'a hedge on an operation with effects',
      broken((f) => (op(f).retry = { hedge: { maxConcurrent: 2, budgetMs: 10_000 } })),
      /^ops\.yaml:\d+:\d+: \/operations\/0\/retry\/hedge: an operation with effects \(record\.write\) may not hedge/m,
    ],
    ['a hedge of one attempt at a time', broken((f) => { delete op(f).effects; delete op(f).result; op(f).retry = { hedge: { maxConcurrent: 1, budgetMs: 10_000 } }; }), /\/operations\/0\/retry\/hedge\/maxConcurrent: must be >= 2$/m],
    ['a missing route', broken((f) => delete op(f).route), /^ops\.yaml:2:5: \/operations\/0: must have route$/m],
    ['a version number that is not a whole number', broken((f) => (op(f).versions[0].schemaVersion = 1.5)), /^ops\.yaml:\d+:\d+: \/operations\/0\/versions\/0\/schemaVersion: must be integer$/m],
    ['an output object that allows unknown keys', broken((f) => delete op(f).output.properties.meta.additionalProperties), /^ops\.yaml:\d+:\d+: \/operations\/0\/output\/properties\/meta: an object in the output contract must say additionalProperties: false$/m],
    ['an output schema that does not compile in strict mode', broken((f) => (op(f).output.properties.summary.minLenght = 1)), /^ops\.yaml:\d+:\d+: \/operations\/0\/output: does not compile as a JSON Schema \(Ajv strict mode\): strict mode: unknown keyword: "minLenght"$/m],
    ['an input schema that does not compile in strict mode', broken((f) => (op(f).versions[0].input.properties.text.maxLength = 'long')), /^ops\.yaml:\d+:\d+: \/operations\/0\/versions\/0\/input: does not compile as a JSON Schema/m],
    ['an example that does not fit its version', broken((f) => (op(f).versions[0].example.ticketId = 7)), /^ops\.yaml:\d+:\d+: \/operations\/0\/versions\/0\/example\/ticketId: does not fit the input schema: must be string$/m],
    ['a schema version declared twice', broken((f) => op(f).versions.push(structuredClone(op(f).versions[0]))), /^ops\.yaml:\d+:\d+: \/operations\/0\/versions\/1\/schemaVersion: schema version 1 is declared twice$/m],
    ['a check on a field the output does not have', broken((f) => (op(f).checks[0].field = '/summry')), /^ops\.yaml:\d+:\d+: \/operations\/0\/checks\/0\/field: \/summry names no property of the output contract$/m],
    ['a check with two rules', broken((f) => (op(f).checks[0].forbid = 'x')), /^ops\.yaml:\d+:\d+: \/operations\/0\/checks\/0: must be a field \(JSON pointer into the output\), a message, and exactly one rule: nonBlank, forbid, enum or length$/m],
    ['a check without its message', broken((f) => delete op(f).checks[1].message), /^ops\.yaml:\d+:\d+: \/operations\/0\/checks\/1: must have message$/m],
    ['a forbidden pattern that is not a regular expression', broken((f) => op(f).checks.push({ field: '/summary', forbid: '(', message: 'no' })), /^ops\.yaml:\d+:\d+: \/operations\/0\/checks\/2\/forbid: is not a regular expression: /m],
    ['a prompt placeholder the input does not have', broken((f) => (op(f).prompt.user = 'Ticket {{ticketId}} for {{customer}}')), /^ops\.yaml:\d+:\d+: \/operations\/0\/prompt\/user: \{\{customer\}\} is not a required field of the input of schema version 1$/m],
    ['a probe that does not fit the newest version', broken((f) => delete op(f).probes[0].input.text), /^ops\.yaml:\d+:\d+: \/operations\/0\/probes\/0\/input: does not fit the input schema of version 1: must have required property 'text'$/m],
    ['an effect with no adapter', broken((f) => (op(f).effects = ['ticket.comment'])), /^ops\.yaml:\d+:\d+: \/operations\/0\/effects\/0: effect "ticket\.comment" has no adapter/m],
    ['a result field from an effect the operation does not run', broken((f) => (op(f).result.fields.recordKey.effect = 'message.send')), /^ops\.yaml:\d+:\d+: \/operations\/0\/result\/fields\/recordKey\/effect: "message\.send" is not one of this operation's effects$/m],
    ['two operations with one name', broken((f) => f.operations.push(structuredClone(op(f)))), /^ops\.yaml:\d+:\d+: \/operations\/1\/name: operation "ticket\.summary" is already declared at \/operations\/0$/m],
    ['an HTTP effect named like a built-in one', broken((f) => (f.effects = [{ name: 'message.send', url: 'https://x.example/${TOKEN}', deduplicates: true }])), /^ops\.yaml:\d+:\d+: \/effects\/0\/name: effect "message\.send" is built in$/m],
    ['a reopenFailed that is not a boolean', broken((f) => (op(f).reopenFailed = 'yes')), /^ops\.yaml:\d+:\d+: \/operations\/0\/reopenFailed: must be boolean$/m],
    ['a result field the receipt of its effect never has', broken((f) => (op(f).result.fields.recordKey.field = 'key')), /^ops\.yaml:\d+:\d+: \/operations\/0\/result\/fields\/recordKey\/field: "key" is not a field of the receipt of record\.write \(its fields: recordKey, writtenAt\)$/m],
    [
      'a result field a declared effect without receipt: never has (its receipt is the status)',
      broken((f) => {
        f.effects = [{ name: 'ticket.comment', url: 'https://x.example/comments', deduplicates: true }];
        op(f).effects = ['ticket.comment'];
        op(f).result.fields = { commentId: { effect: 'ticket.comment', field: 'id' } };
      }),
      /^ops\.yaml:\d+:\d+: \/operations\/0\/result\/fields\/commentId\/field: "id" is not a field of the receipt of ticket\.comment \(its fields: status\)$/m,
    ],
    [
      'a body placeholder that names nothing a job has',
      broken((f) => (f.effects = [{ name: 'ticket.comment', url: 'https://x.example/comments', deduplicates: true, body: { parts: ['{{input.ticketId}}', 'by {{job.principal}}'] } }])),
      /^ops\.yaml:\d+:\d+: \/effects\/0\/body\/parts\/1: \{\{job\.principal\}\} names nothing a job has; placeholders may name input, output, job\.id, job\.operation and key$/m,
    ],
    [
      'a URL placeholder that names nothing a job has',
      broken((f) => (f.effects = [{ name: 'ticket.comment', url: 'https://x.example/tickets/{{ticket}}/comments', deduplicates: true }])),
      /^ops\.yaml:\d+:\d+: \/effects\/0\/url: \{\{ticket\}\} names nothing a job has/m,
    ],
    ['an HTTP effect with a malformed status class', broken((f) => (f.effects = [{ name: 'ticket.comment', url: 'https://x.example', deduplicates: true, statuses: { done: ['2XX'] } }])), /^ops\.yaml:\d+:\d+: \/effects\/0\/statuses\/done\/0: must match pattern/m],
  ])('%s: names the file, the JSON pointer and what is wrong', (_name, data, expected) => {
    expect(problemsOf(data)).toMatch(expected);
  });

  it('names the line and column of the place in the YAML', () => {
    // Arrange
    const text = ['operations:', '  - name: ticket.summary', '    description: d', '    versions: []', ''].join('\n');

    // Act
    const message = problemsOf(text);

    // Assert
    expect(message).toContain('ops.yaml:4:5: /operations/0/versions: must NOT have fewer than 1 items');
    expect(message).toContain('ops.yaml:2:5: /operations/0: must have output');
  });

  it('that cannot be read is named', () => {
    expect(() => loadOperations('/nonexistent/ops.yaml')).toThrow('/nonexistent/ops.yaml: (document): cannot read the file (ENOENT)');
  });

  it('with a route naming a provider that is not declared fails loadProviders, naming the file and the route step', async () => {
    // Arrange
    const registry = parseOperations(YAML.stringify(broken((f) => (op(f).route = ['sim-primary', 'sim-elsewhere']))), FILE).registry;

    // Act / Assert
    await expect(loadProviders(loadConfig({}), registry, {})).rejects.toThrow(/^ops\.yaml: \/operations\/0\/route\/1: provider "sim-elsewhere" is not declared in built-in providers/);
  });

  it('stops `npm run api` with a non-zero exit and the problem', async () => {
    // Arrange
    const dir = mkdtempSync(path.join(tmpdir(), 'onceflow-ops-'));
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, YAML.stringify(broken((f) => delete op(f).route)));

    // Act
    const result = await run(path.join(__dirname, '..', '..', 'src', 'api', 'main.ts'), { ONCEFLOW_OPERATIONS_FILE: file, DATABASE_URL: 'postgres://127.0.0.1:1/none', ONCEFLOW_API_KEYS: 'a:k' });

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(`api: ${file}:2:5: /operations/0: must have route`);
  }, 30_000);

  it('stops `npm run worker` the same way', async () => {
    // Arrange
    const dir = mkdtempSync(path.join(tmpdir(), 'onceflow-ops-'));
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, YAML.stringify(broken((f) => (op(f).effects = ['ticket.comment']))));

    // Act
    const result = await run(path.join(__dirname, '..', '..', 'src', 'worker', 'main.ts'), { ONCEFLOW_OPERATIONS_FILE: file, DATABASE_URL: 'postgres://127.0.0.1:1/none' });

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toMatch(new RegExp(`^worker: ${escapeRegExp(file)}:\\d+:\\d+: /operations/0/effects/0: effect "ticket.comment" has no adapter`));
  }, 30_000);
});

describe('`npm start` with a wrong operations file', () => {
  it('exits 1 with the problem before it starts anything', async () => {
    // Arrange
    const dir = mkdtempSync(path.join(tmpdir(), 'onceflow-ops-'));
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, 'operations:\n  - module: ./nowhere.js\n');

    // Act
    const result = await run(path.join(__dirname, '..', '..', 'src', 'stack', 'start.ts'), { ONCEFLOW_OPERATIONS_FILE: file, DATABASE_URL: 'postgres://127.0.0.1:1/none' });

    // Assert
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toMatch(new RegExp(`^onceflow: ${escapeRegExp(file)}:2:5: /operations/0/module: cannot load ./nowhere.js: Cannot find module`));
  }, 30_000);
});

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function run(entry: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const base = { ...process.env };
  for (const name of Object.keys(base)) if (/^(ONCEFLOW_|SIM_|TEMPORAL_)/.test(name) || name === 'DATABASE_URL') delete base[name];
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', entry], { env: { ...base, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}
