import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const fixture = (name: string): string => path.join(__dirname, 'fixtures', name);
const HOST = fixture('compiled-host.cjs');

interface Loaded {
  operations?: Record<string, { checks: Array<{ ok: boolean; violations?: string[] }>; results: unknown[] }>;
  problems?: string;
}

/**
 * loadOperations in a process that runs Onceflow compiled, as `npm start` and
 * `npm run api` do (its TypeScript is not the test runner's, nor tsx's):
 * with TypeScript modules allowed or not, each operation's check and result of `outputs`.
 */
function load(file: string, typeScriptModules: boolean, outputs: unknown[] = [], env: NodeJS.ProcessEnv = {}): Promise<Loaded> {
  const child = spawn(process.execPath, [HOST, 'load', file, typeScriptModules ? 'ts' : 'js', JSON.stringify(outputs)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout) as Loaded) : reject(new Error(`the host exited ${code}: ${stderr}`)))),
  );
}

describe('an operation module (module: in the operations file)', () => {
  it('is loaded from its path relative to the file, its code check running after the declared ones', async () => {
    // Act
    const loaded = await load(fixture('with-modules.yaml'), true, [{ tags: ['refund', 'refund'] }, { tags: [] }, { tags: ['refund', 'damage'] }]);

    // Assert
    const operation = loaded.operations!['ticket.tag']!;
    expect(operation.checks).toEqual([
      expect.objectContaining({ ok: false, violations: ['a tag is repeated'] }),
      expect.objectContaining({ ok: false, violations: ['one to five tags'] }),
      expect.objectContaining({ ok: true }),
    ]);
    expect(operation.results[2]).toEqual({ tags: ['damage', 'refund'] });
  });

  it('is checked like a declaration: a loose output contract is refused, naming the module and the pointer', async () => {
    // Act
    const loaded = await load(fixture('with-loose-module.yaml'), true);

    // Assert
    expect(loaded.problems).toBe(`${path.join(path.dirname(fixture('with-loose-module.yaml')), './loose-output.ts')}: /output: an object in the output contract must say additionalProperties: false`);
  });

  it('that cannot be loaded is named with its entry in the file', async () => {
    // Act
    const loaded = await load(fixture('missing-module.yaml'), true);

    // Assert
    expect(loaded.problems).toMatch(/missing-module\.yaml:2:5: \/operations\/0\/module: cannot load \.\/nowhere\.ts: Cannot find module/);
  });
});

describe('a TypeScript operation module', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-ts-module-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is refused where TypeScript modules are not loaded (npm run api, npm run worker), naming its entry and how to compile it', async () => {
    // Act
    const loaded = await load(fixture('with-modules.yaml'), false);

    // Assert
    const file = fixture('with-modules.yaml');
    expect(loaded.problems).toBe(
      `${file}:2:5: /operations/0/module: ./ticket-tag.ts is TypeScript, and this process loads JavaScript only (npm run api and npm run worker run compiled code; npm start and onceflow check load TypeScript through tsx): ` +
        `compile it, e.g. \`npx tsc --module commonjs --target es2022 --outDir ${path.join(path.dirname(file), 'dist')} ${file.replace('with-modules.yaml', 'ticket-tag.ts')}\`, and point module: at ./dist/ticket-tag.js`,
    );
  });

  it.each(['.ts', '.mts', '.cts'])('with the extension %s is loaded through tsx when TypeScript modules are allowed', async (extension) => {
    // Arrange
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, `operations:\n  - module: ./triage${extension}\n`);
    writeFileSync(path.join(dir, `triage${extension}`), typeScriptModule(path.join(__dirname, '..', '..', 'src', 'operations', 'define'), 'triage'));

    // Act
    const loaded = await load(file, true);

    // Assert
    expect(Object.keys(loaded.operations ?? {})).toEqual(['ticket.triage']);
  });

  it('says so when tsx is not installed, and how to compile the module instead', async () => {
    // Arrange
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, 'operations:\n  - module: ./triage.ts\n');
    writeFileSync(path.join(dir, 'triage.ts'), typeScriptModule('onceflow', 'triage'));

    // Act
    const loaded = await load(file, true, [], { ONCEFLOW_TEST_HIDE_TSX: '1' });

    // Assert
    expect(loaded.problems).toBe(
      `${file}:2:5: /operations/0/module: ./triage.ts is TypeScript, and tsx, which loads it, is not installed (npm install --save-dev tsx); ` +
        `or compile it, e.g. \`npx tsc --module commonjs --target es2022 --outDir ${path.join(dir, 'dist')} ${path.join(dir, 'triage.ts')}\`, and point module: at ./dist/triage.js`,
    );
  });
});

describe('defineOperation, imported by a module outside the repository', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-own-ops-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("resolves from 'onceflow' in TypeScript and from 'onceflow/operations' in JavaScript, with no node_modules beside them", async () => {
    // Arrange
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, 'operations:\n  - module: ./triage.ts\n  - module: ./lib/route.js\n');
    writeFileSync(path.join(dir, 'triage.ts'), typeScriptModule('onceflow', 'triage'));
    mkdirSync(path.join(dir, 'lib'));
    writeFileSync(path.join(dir, 'lib', 'route.js'), javaScriptModule('onceflow/operations', 'ticket.route'));

    // Act
    const loaded = await load(file, true, [{ queue: 'nowhere' }]);

    // Assert
    expect(Object.keys(loaded.operations ?? {})).toEqual(['ticket.triage', 'ticket.route']);
    expect(loaded.operations!['ticket.triage']!.checks[0]).toMatchObject({ ok: false, violations: ['queue is billing or support'] });
  });

  it('resolves from a JavaScript module where TypeScript modules are not loaded (npm run api, npm run worker)', async () => {
    // Arrange
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, 'operations:\n  - module: ./route.cjs\n');
    writeFileSync(path.join(dir, 'route.cjs'), javaScriptModule('onceflow', 'ticket.route'));

    // Act
    const loaded = await load(file, false);

    // Assert
    expect(Object.keys(loaded.operations ?? {})).toEqual(['ticket.route']);
  });

  it("resolves only while Onceflow loads the operation modules: to other code, 'onceflow' is unknown", async () => {
    // Arrange: the module asks for onceflow again when its check runs, after the load.
    const file = path.join(dir, 'ops.yaml');
    writeFileSync(file, 'operations:\n  - module: ./route.cjs\n');
    writeFileSync(
      path.join(dir, 'route.cjs'),
      javaScriptModule('onceflow', 'ticket.route').replace('module.exports = defineOperation({', "module.exports = defineOperation({ businessChecks: () => { try { require('onceflow'); return ['resolved']; } catch (error) { return [error.message.split('\\n')[0]]; } },"),
    );

    // Act
    const loaded = await load(file, false, [{ queue: 'billing' }]);

    // Assert
    expect(loaded.operations!['ticket.route']!.checks[0]!.violations).toEqual([expect.stringMatching(/^Cannot find module 'onceflow'/)]);
  });
});

/** An operation spec as data: its output names a queue, and its prompt uses the input's text. */
function spec(name: string): Record<string, unknown> {
  return {
    name,
    description: 'Route a ticket to a queue.',
    versions: [{ schemaVersion: 1, input: { type: 'object', additionalProperties: false, required: ['text'], properties: { text: { type: 'string' } } }, example: { text: 'Refund please.' } }],
    output: { type: 'object', additionalProperties: false, required: ['queue'], properties: { queue: { type: 'string' } } },
    prompt: { system: 'Answer with {"queue": string}.', user: '{{text}}' },
    route: ['sim-primary'],
  };
}

/** A JavaScript module (CommonJS) requiring defineOperation from `from`. */
function javaScriptModule(from: string, name: string): string {
  const data = JSON.stringify(spec(name));
  return `const { defineOperation } = require('${from}');\nmodule.exports = defineOperation({ ...${data} });\n`;
}

/** A TypeScript module (an enum, an interface: nothing plain Node reads) importing defineOperation from `from`; named ticket.<suffix>. */
function typeScriptModule(from: string, suffix: string): string {
  const { name: _name, ...rest } = spec('');
  return `import { defineOperation } from '${from}';

interface Routed {
  queue: string;
}
enum Queue {
  billing = 'billing',
  support = 'support',
}
const suffix: string = '${suffix}';

export default defineOperation<{ text: string }, Routed>({
  ...(${JSON.stringify(rest)} as unknown as Omit<Parameters<typeof defineOperation<{ text: string }, Routed>>[0], 'name' | 'businessChecks'>),
  name: \`ticket.\${suffix}\`,
  businessChecks: (output: Routed): string[] => (Object.values(Queue).includes(output.queue as Queue) ? [] : ['queue is billing or support']),
});
`;
}
