import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { demoRegistry } from '../../src/operations/registry';
import { loadProviders, providersEnv } from '../../src/providers/load';
import {
  DEFAULT_PROVIDERS_YAML,
  DEMO_PROVIDERS_FILE,
  SIM_PRICES,
  SIM_URL_ENV,
  simulatorUrlEnv,
  ProvidersConfigError,
  checkRoutesPriced,
  priceTableOf,
  createProviders,
  loadProvidersConfig,
  parseProvidersConfig,
  routeFor,
} from '../../src/providers/config';
import { startSimProvider } from '../../src/sim/provider-server';

/** The demo registry with support.reply alone (the file below routes only it). */
const supportReplyOnly = () => new Map([...demoRegistry()].filter(([name]) => name === 'support.reply'));
import { completionRequest } from './fake-http';

const VALID = `
providers:
  sim-primary:
    kind: openai-compatible
    baseUrl: http://127.0.0.1:7301/v1
    apiKeyEnv: SIM_API_KEY
    lookup: true
  sim-backup:
    kind: openai-compatible
    baseUrl: http://127.0.0.1:7302/v1
    defaultModel: sim-large
  claude:
    kind: anthropic
    apiKeyEnv: ANTHROPIC_API_KEY
    maxTokens: 2048
routes:
  support.reply:
    - { provider: sim-primary, model: sim-small }
    - { provider: sim-backup, model: sim-large }
`;

/** The error parseProvidersConfig throws for `text`, which must throw. */
function configError(text: string, env: NodeJS.ProcessEnv = {}): ProvidersConfigError {
  try {
    parseProvidersConfig(text, 'providers.yaml', env);
  } catch (error) {
    if (error instanceof ProvidersConfigError) return error;
    throw error;
  }
  throw new Error('expected a ProvidersConfigError');
}

describe('parseProvidersConfig', () => {
  it('parses providers and routes', () => {
    // Act
    const config = parseProvidersConfig(VALID, 'providers.yaml');

    // Assert
    expect(config.source).toBe('providers.yaml');
    expect([...config.providers.keys()]).toEqual(['sim-primary', 'sim-backup', 'claude']);
    expect(config.providers.get('sim-primary')).toEqual({
      name: 'sim-primary',
      kind: 'openai-compatible',
      baseUrl: 'http://127.0.0.1:7301/v1',
      apiKeyEnv: 'SIM_API_KEY',
      lookup: true,
      prices: new Map(),
    });
    expect(config.providers.get('sim-backup')).toMatchObject({ lookup: false, defaultModel: 'sim-large' });
    expect(config.providers.get('claude')).toEqual({
      name: 'claude',
      kind: 'anthropic',
      apiKeyEnv: 'ANTHROPIC_API_KEY',
      lookup: false,
      maxTokens: 2048,
      prices: new Map(),
    });
    expect(config.routes.get('support.reply')).toEqual([
      { provider: 'sim-primary', model: 'sim-small' },
      { provider: 'sim-backup', model: 'sim-large' },
    ]);
  });

  it('reads JSON as well', () => {
    // Arrange
    const json = JSON.stringify({
      providers: { local: { kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:8000/v1' } },
      routes: { 'support.reply': [{ provider: 'local', model: 'qwen' }] },
    });

    // Act
    const config = parseProvidersConfig(json, 'providers.json');

    // Assert
    expect(config.routes.get('support.reply')).toEqual([{ provider: 'local', model: 'qwen' }]);
  });

  it.each([
    ['unknown kind', 'providers:\n  p: { kind: gemini, baseUrl: "http://x/v1" }', '2:8: /providers/p/kind: must be one of "openai-compatible", "anthropic"'],
    ['missing kind', 'providers:\n  p: { baseUrl: "http://x/v1" }', '2:3: /providers/p: must have kind'],
    ['missing baseUrl', 'providers:\n  p: { kind: openai-compatible }', '2:3: /providers/p: must have baseUrl'],
    ['baseUrl not a URL', 'providers:\n  p: { kind: openai-compatible, baseUrl: "localhost:8000" }', '2:33: /providers/p/baseUrl: must be an http(s) URL, not "localhost:8000"'],
    ['baseUrl not http', 'providers:\n  p: { kind: openai-compatible, baseUrl: "ftp://x/v1" }', '2:33: /providers/p/baseUrl: must be an http(s) URL, not "ftp://x/v1"'],
    ['anthropic baseUrl not a URL', 'providers:\n  p: { kind: anthropic, baseUrl: "nope" }', '2:25: /providers/p/baseUrl: must be an http(s) URL, not "nope"'],
    ['a key in the file', 'providers:\n  p: { kind: anthropic, apiKey: sk-123 }', '2:25: /providers/p/apiKey: keys never go in this file: put the key in an environment variable and name it in apiKeyEnv'],
    ['bad apiKeyEnv', 'providers:\n  p: { kind: anthropic, apiKeyEnv: "sk-123" }', '2:25: /providers/p/apiKeyEnv: must be the name of an environment variable, e.g. OPENAI_API_KEY'],
    ['lookup not boolean', 'providers:\n  p: { kind: openai-compatible, baseUrl: "http://x/v1", lookup: "yes" }', '2:57: /providers/p/lookup: must be true or false'],
    ['lookup on anthropic', 'providers:\n  p: { kind: anthropic, lookup: true }', '2:25: /providers/p/lookup: is not supported for kind anthropic'],
    ['maxTokens not positive', 'providers:\n  p: { kind: anthropic, maxTokens: 0 }', '2:25: /providers/p/maxTokens: must be a positive whole number'],
    ['maxTokens on openai-compatible', 'providers:\n  p: { kind: openai-compatible, baseUrl: "http://x/v1", maxTokens: 5 }', '2:57: /providers/p/maxTokens: is only used by kind anthropic'],
    ['unknown provider key', 'providers:\n  p: { kind: anthropic, baseurl: "http://x" }', '2:25: /providers/p/baseurl: is not a known key'],
    ['bad provider name', 'providers:\n  "a b": { kind: anthropic }', '2:3: /providers/a b: a provider name may hold only letters, digits, ".", "_" and "-"'],
    ['no providers', 'routes: {}', '1:1: (document): must have providers'],
    ['empty providers', 'providers: {}', '1:1: /providers: declares no provider'],
    ['unknown top-level key', 'providers:\n  p: { kind: anthropic }\nroute: {}', '3:1: /route: is not a known key'],
    ['route not a list', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op: p', '4:3: /routes/op: must be a non-empty list of { provider, model }, in failover order'],
    ['empty route', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op: []', '4:3: /routes/op: must be a non-empty list of { provider, model }, in failover order'],
    ['undeclared provider in a route', 'providers:\n  p: { kind: anthropic }\nroutes:\n  support.reply:\n    - { provider: q, model: m }', "5:9: /routes/support.reply/0/provider: names 'q', which is not declared under providers"],
    ['model missing', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p }', '5:7: /routes/op/0: must have model'],
    ['model empty', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p, model: "" }', '5:22: /routes/op/0/model: must be a non-empty string'],
    ['unknown route entry key', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p, model: m, weight: 2 }', '5:32: /routes/op/0/weight: is not a known key'],
    ['a repeated route entry', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p, model: m }\n    - { provider: p, model: m }', '6:7: /routes/op/1: repeats p with m'],
    ['a document that is not a mapping', '- just\n- a list\n', '1:1: (document): must be a mapping with providers (and optionally routes)'],
  ])('rejects %s, naming the file, the line and column, and the JSON pointer', (_label, text, expected) => {
    // Act
    const error = configError(text);

    // Assert
    expect(error.message).toBe(`providers.yaml:${expected}`);
    expect(error.problems).toHaveLength(1);
  });

  it('names every mistake of a file at once, each at its line and column', () => {
    // Arrange
    const text = [
      'providers:',
      '  p:',
      '    kind: openai-compatible',
      '    lookup: "yes"',
      '    apiKey: sk-123',
      '  q: { kind: anthropic, maxTokens: 0, prices: { m: { inputPerMillion: 0.15, outputPerMillion: "1", currency: usd } } }',
      'routes:',
      '  op: []',
      '',
    ].join('\n');

    // Act
    const error = configError(text);

    // Assert
    expect(error.message.split('\n')).toEqual([
      'providers.yaml:2:3: /providers/p: must have baseUrl',
      'providers.yaml:4:5: /providers/p/lookup: must be true or false',
      'providers.yaml:5:5: /providers/p/apiKey: keys never go in this file: put the key in an environment variable and name it in apiKeyEnv',
      'providers.yaml:6:25: /providers/q/maxTokens: must be a positive whole number',
      'providers.yaml:6:54: /providers/q/prices/m/inputPerMillion: must be a decimal in quotes, e.g. "0.15" (money is never read as a floating-point number)',
      'providers.yaml:6:100: /providers/q/prices/m/currency: must be an ISO 4217 code, e.g. USD',
      'providers.yaml:8:3: /routes/op: must be a non-empty list of { provider, model }, in failover order',
    ]);
  });

  it('reports a YAML syntax error with its position', () => {
    // Act
    const error = configError('providers:\n  p: { kind: anthropic\n');

    // Assert
    expect(error.message).toMatch(/^providers\.yaml:\d+:\d+: \(document\): invalid YAML: /);
    expect(error.message).not.toContain('\n');
  });

  it('rejects a duplicate key', () => {
    // Act
    const error = configError('providers:\n  p: { kind: anthropic }\n  p: { kind: anthropic }\n');

    // Assert
    expect(error.message).toBe('providers.yaml:3:3: (document): invalid YAML: Map keys must be unique');
  });

  it('takes an empty routes: as none', () => {
    expect(parseProvidersConfig('providers:\n  p: { kind: anthropic }\nroutes:\n', 'providers.yaml').routes.size).toBe(0);
  });
});

describe('${NAME} in a baseUrl', () => {
  const file = 'providers:\n  local:\n    kind: openai-compatible\n    baseUrl: ${LLM_SCHEME}://${LLM_HOST}:8000/v1\n';

  it('is read from the environment when the file is read', () => {
    // Act
    const config = parseProvidersConfig(file, 'providers.yaml', { LLM_SCHEME: 'http', LLM_HOST: 'gpu-1.internal' });

    // Assert
    expect(config.providers.get('local')?.baseUrl).toBe('http://gpu-1.internal:8000/v1');
  });

  it('names each variable that is unset or empty, where it stands, all at once', () => {
    // Act
    const error = configError(file, { LLM_SCHEME: '' });

    // Assert
    expect(error.message.split('\n')).toEqual([
      'providers.yaml:4:14: /providers/local/baseUrl: environment variable LLM_SCHEME is not set',
      'providers.yaml:4:30: /providers/local/baseUrl: environment variable LLM_HOST is not set',
    ]);
  });

  it('must make an http(s) URL, and the message shows the file, not the values', () => {
    // Act
    const error = configError(file, { LLM_SCHEME: 'ftp', LLM_HOST: 'secret-host' });

    // Assert
    expect(error.message).toBe('providers.yaml:4:5: /providers/local/baseUrl: must be an http(s) URL: "${LLM_SCHEME}://${LLM_HOST}:8000/v1" is not one with its variables set');
  });
});

describe('a providers file pointed at the simulators', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-providers-sim-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const simulatorsFile = (): string => {
    const file = path.join(dir, 'providers.yaml');
    writeFileSync(file, `providers:\n  mine:\n    kind: openai-compatible\n    baseUrl: \${${SIM_URL_ENV.primary}}\n    defaultModel: sim-small\n    prices:\n      sim-small: { inputPerMillion: "1", outputPerMillion: "1", currency: USD }\nroutes:\n  support.reply:\n    - { provider: mine, model: sim-small }\n`);
    return file;
  };

  it('finds them where SIM_PRIMARY_PORT puts them, with no port written in the file', async () => {
    // Arrange
    const file = simulatorsFile();

    // Act
    const { providers } = await loadProviders(loadConfig({ ONCEFLOW_PROVIDERS_FILE: file, SIM_PRIMARY_PORT: '7391' }), supportReplyOnly(), {});

    // Assert
    expect(providers.get('mine')?.baseUrl).toBe('http://127.0.0.1:7391/v1');
  });

  it('takes the URL the environment gives (npm start sets it to the simulator it started)', async () => {
    // Arrange
    const file = simulatorsFile();
    const env = { [SIM_URL_ENV.primary]: 'http://127.0.0.1:40123/v1', SIM_PRIMARY_PORT: '7391' };

    // Act
    const { providers } = await loadProviders(loadConfig({ ...env, ONCEFLOW_PROVIDERS_FILE: file }), supportReplyOnly(), env);

    // Assert
    expect(providers.get('mine')?.baseUrl).toBe('http://127.0.0.1:40123/v1');
    expect(providersEnv(loadConfig(env), env)[SIM_URL_ENV.backup]).toBe('http://127.0.0.1:7302/v1');
  });

  it('is what the built-in providers are: operations/demo-providers.yaml, at the simulators\' prices', () => {
    // Act
    const demo = parseProvidersConfig(readFileSync(DEMO_PROVIDERS_FILE, 'utf8'), 'demo', simulatorUrlEnv({ primaryUrl: 'http://127.0.0.1:7301/v1', backupUrl: 'http://127.0.0.1:7302/v1' }));
    const builtIn = parseProvidersConfig(DEFAULT_PROVIDERS_YAML, 'demo', {});

    // Assert
    expect(demo).toEqual({ ...builtIn, locate: expect.any(Function) });
    expect(demo.providers.get('sim-primary')?.prices.get('sim-small')).toEqual(SIM_PRICES.small);
    expect(demo.providers.get('sim-backup')?.prices.get('sim-large')).toEqual(SIM_PRICES.large);
    expect(readFileSync(DEMO_PROVIDERS_FILE, 'utf8').split('\n')[0]).toBe('# yaml-language-server: $schema=../schemas/providers.schema.json');
  });
});

describe('loadProvidersConfig', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-providers-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads a file and names it as the source', async () => {
    // Arrange
    const file = path.join(dir, 'providers.yaml');
    writeFileSync(file, VALID);

    // Act
    const config = await loadProvidersConfig(file);

    // Assert
    expect(config.source).toBe(file);
    expect(config.providers.size).toBe(3);
  });

  it('names the file in a validation error', async () => {
    // Arrange
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'providers:\n  p: { kind: nope }\n');

    // Act / Assert
    await expect(loadProvidersConfig(file)).rejects.toThrow(`${file}:2:8: /providers/p/kind: `);
  });

  it('names a file that does not exist', async () => {
    // Arrange
    const file = path.join(dir, 'missing.yaml');

    // Act / Assert
    await expect(loadProvidersConfig(file)).rejects.toThrow(`${file}: (document): cannot read the file (ENOENT)`);
  });
});

describe('createProviders', () => {
  it('builds one adapter per provider, with lookup where configured', () => {
    // Arrange
    const config = parseProvidersConfig(VALID, 'providers.yaml');

    // Act
    const providers = createProviders(config, { SIM_API_KEY: 'sim', ANTHROPIC_API_KEY: 'sk-test' });

    // Assert
    expect([...providers.keys()]).toEqual(['sim-primary', 'sim-backup', 'claude']);
    expect(providers.get('sim-primary')).toMatchObject({ name: 'sim-primary', kind: 'openai-compatible' });
    expect(typeof providers.get('sim-primary')?.lookup).toBe('function');
    expect(providers.get('sim-backup')?.lookup).toBeUndefined();
    expect(providers.get('claude')).toMatchObject({ name: 'claude', kind: 'anthropic' });
  });

  it.each([
    ['unset', {}],
    ['empty', { SIM_API_KEY: 'sim', ANTHROPIC_API_KEY: '' }],
  ])('names the environment variable when it is %s', (_label, env) => {
    // Arrange
    const config = parseProvidersConfig(VALID, 'providers.yaml');
    const partial: Record<string, string> = { SIM_API_KEY: 'sim', ...env };

    // Act / Assert
    expect(() => createProviders(config, partial)).toThrow(
      new ProvidersConfigError('providers.yaml', 'providers.claude.apiKeyEnv', 'environment variable ANTHROPIC_API_KEY is not set'),
    );
  });

  it('passes the key from the environment to the provider', async () => {
    // Arrange: a provider that records what it receives.
    const sim = await startSimProvider({ name: 'sim-primary' });
    try {
      const config = parseProvidersConfig(
        `providers:\n  sim-primary: { kind: openai-compatible, baseUrl: "${sim.url}", apiKeyEnv: SIM_KEY, lookup: true }\n`,
        'providers.yaml',
      );
      const providers = createProviders(config, { SIM_KEY: 'secret-1' });
      const request = completionRequest('Hello');

      // Act
      const answer = await providers.get('sim-primary')!.complete(request);
      const lookup = await providers.get('sim-primary')!.lookup!(request.requestId);

      // Assert
      expect(answer.content).toContain('sim-primary');
      expect(lookup).toMatchObject({ found: true, status: 'completed', content: answer.content });
    } finally {
      await sim.close();
    }
  });
});

describe('routeFor', () => {
  const config = parseProvidersConfig(VALID, 'providers.yaml');

  it('returns the configured route, in failover order', () => {
    expect(routeFor(config, 'support.reply', ['sim-backup'])).toEqual([
      { provider: 'sim-primary', model: 'sim-small' },
      { provider: 'sim-backup', model: 'sim-large' },
    ]);
  });

  it("falls back to the operation's default providers with their defaultModel", () => {
    expect(routeFor(config, 'other.op', ['sim-backup'])).toEqual([{ provider: 'sim-backup', model: 'sim-large' }]);
  });

  it('returns a copy that callers cannot use to change the configuration', () => {
    // Arrange
    const route = routeFor(config, 'support.reply', []);

    // Act
    route.pop();

    // Assert
    expect(routeFor(config, 'support.reply', [])).toHaveLength(2);
  });

  it('names the defaultModel a default route needs', () => {
    expect(() => routeFor(config, 'other.op', ['sim-primary'])).toThrow(
      'providers.yaml: providers.sim-primary.defaultModel: is needed by the default route of other.op',
    );
  });

  it('names an undeclared default provider', () => {
    expect(() => routeFor(config, 'other.op', ['nowhere'])).toThrow(
      "providers.yaml: routes.other.op: no route configured, and the default provider 'nowhere' is not declared",
    );
  });

  it('rejects an operation with neither a route nor a default', () => {
    expect(() => routeFor(config, 'constructor', [])).toThrow('providers.yaml: routes.constructor: no route configured and no default route');
  });
});

describe('DEFAULT_PROVIDERS_YAML', () => {
  it('describes the two simulators and the support.reply route, needing no key', () => {
    // Act
    const config = parseProvidersConfig(DEFAULT_PROVIDERS_YAML, 'default');
    const providers = createProviders(config, {});

    // Assert
    expect(config.providers.get('sim-primary')).toMatchObject({ baseUrl: 'http://127.0.0.1:7301/v1', lookup: true });
    expect(config.providers.get('sim-backup')).toMatchObject({ baseUrl: 'http://127.0.0.1:7302/v1', lookup: true });
    expect([...providers.keys()]).toEqual(['sim-primary', 'sim-backup']);
    expect(routeFor(config, 'support.reply', [])).toEqual([
      { provider: 'sim-primary', model: 'sim-small' },
      { provider: 'sim-backup', model: 'sim-large' },
    ]);
  });

  it('holds valid examples for OpenAI, a local server and Anthropic once uncommented', () => {
    // Arrange: uncomment the example blocks.
    const uncommented = DEFAULT_PROVIDERS_YAML.replace(/^ {2}# {2}/gm, '    ').replace(/^ {2}# (\S+:)$/gm, '  $1');

    // Act
    const config = parseProvidersConfig(uncommented, 'default');

    // Assert
    expect(config.providers.get('openai')).toMatchObject({
      kind: 'openai-compatible',
      baseUrl: 'https://api.openai.com/v1',
      apiKeyEnv: 'OPENAI_API_KEY',
    });
    expect(config.providers.get('local')).toMatchObject({ kind: 'openai-compatible' });
    expect(config.providers.get('anthropic')).toMatchObject({ kind: 'anthropic', apiKeyEnv: 'ANTHROPIC_API_KEY' });
    expect(() => createProviders(config, {})).toThrow(/OPENAI_API_KEY is not set/);
  });
});

describe('prices', () => {
  const priced = (prices: string) => `
providers:
  sim-primary:
    kind: openai-compatible
    baseUrl: http://127.0.0.1:7301/v1
    prices:
${prices}
routes:
  support.reply:
    - { provider: sim-primary, model: sim-small }
`;

  it('keeps prices as the decimal strings the file gives', () => {
    const config = parseProvidersConfig(priced('      sim-small: { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: USD }'), 'providers.yaml');
    expect(priceTableOf(config).get('sim-primary')?.get('sim-small')).toEqual({ inputPerMillion: '0.15', outputPerMillion: '0.60', currency: 'USD' });
  });

  it('refuses a price written as a bare number, which YAML would read as floating point', () => {
    const error = configError(priced('      sim-small: { inputPerMillion: 0.15, outputPerMillion: "0.60", currency: USD }'));
    expect(error.message).toBe('providers.yaml:7:20: /providers/sim-primary/prices/sim-small/inputPerMillion: must be a decimal in quotes, e.g. "0.15" (money is never read as a floating-point number)');
  });

  it('refuses two currencies in one file', () => {
    const error = configError(priced('      sim-small: { inputPerMillion: "1", outputPerMillion: "2", currency: USD }\n      sim-large: { inputPerMillion: "1", outputPerMillion: "2", currency: EUR }'));
    expect(error.message).toBe('providers.yaml:8:65: /providers/sim-primary/prices/sim-large/currency: is EUR, but /providers/sim-primary/prices/sim-small/currency is USD: one providers file prices in one currency');
  });

  it('names the model a route uses that has no price', () => {
    const config = parseProvidersConfig(priced('      sim-other: { inputPerMillion: "1", outputPerMillion: "2", currency: USD }'), 'providers.yaml');
    expect(() => checkRoutesPriced(config, new Map([['support.reply', routeFor(config, 'support.reply', [])]]))).toThrow(
      'providers.yaml: providers.sim-primary.prices: has no price for model sim-small, which the route of support.reply uses',
    );
  });

  it('prices every model of the built-in route to the simulators', () => {
    const config = parseProvidersConfig(DEFAULT_PROVIDERS_YAML, 'built-in providers');
    expect(() => checkRoutesPriced(config, new Map([['support.reply', routeFor(config, 'support.reply', [])]]))).not.toThrow();
  });
});
