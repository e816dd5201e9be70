import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DEFAULT_PROVIDERS_YAML,
  ProvidersConfigError,
  checkRoutesPriced,
  priceTableOf,
  createProviders,
  loadProvidersConfig,
  parseProvidersConfig,
  routeFor,
} from '../../src/providers/config';
import { startSimProvider } from '../../src/sim/provider-server';
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
function configError(text: string): ProvidersConfigError {
  try {
    parseProvidersConfig(text, 'providers.yaml');
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
    ['unknown kind', 'providers:\n  p: { kind: gemini, baseUrl: "http://x/v1" }', 'providers.p.kind', /must be one of openai-compatible, anthropic/],
    ['missing kind', 'providers:\n  p: { baseUrl: "http://x/v1" }', 'providers.p.kind', /is required/],
    ['missing baseUrl', 'providers:\n  p: { kind: openai-compatible }', 'providers.p.baseUrl', /is required/],
    ['baseUrl not a URL', 'providers:\n  p: { kind: openai-compatible, baseUrl: "localhost:8000" }', 'providers.p.baseUrl', /http\(s\) URL/],
    ['baseUrl not http', 'providers:\n  p: { kind: openai-compatible, baseUrl: "ftp://x/v1" }', 'providers.p.baseUrl', /http\(s\) URL/],
    ['anthropic baseUrl not a URL', 'providers:\n  p: { kind: anthropic, baseUrl: "nope" }', 'providers.p.baseUrl', /http\(s\) URL/],
    ['a key in the file', 'providers:\n  p: { kind: anthropic, apiKey: sk-123 }', 'providers.p.apiKey', /apiKeyEnv/],
    ['bad apiKeyEnv', 'providers:\n  p: { kind: anthropic, apiKeyEnv: "sk-123" }', 'providers.p.apiKeyEnv', /environment variable/],
    ['lookup not boolean', 'providers:\n  p: { kind: openai-compatible, baseUrl: "http://x/v1", lookup: "yes" }', 'providers.p.lookup', /true or false/],
    ['lookup on anthropic', 'providers:\n  p: { kind: anthropic, lookup: true }', 'providers.p.lookup', /not supported/],
    ['maxTokens not positive', 'providers:\n  p: { kind: anthropic, maxTokens: 0 }', 'providers.p.maxTokens', /positive/],
    ['unknown provider key', 'providers:\n  p: { kind: anthropic, baseurl: "http://x" }', 'providers.p.baseurl', /not a known key/],
    ['bad provider name', 'providers:\n  "a b": { kind: anthropic }', 'providers.a b', /letters, digits/],
    ['no providers', 'routes: {}', 'providers', /is required/],
    ['empty providers', 'providers: {}', 'providers', /declares no provider/],
    ['unknown top-level key', 'providers:\n  p: { kind: anthropic }\nroute: {}', 'route', /not a known key/],
    ['route not a list', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op: p', 'routes.op', /non-empty list/],
    ['empty route', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op: []', 'routes.op', /non-empty list/],
    ['undeclared provider in a route', 'providers:\n  p: { kind: anthropic }\nroutes:\n  support.reply:\n    - { provider: q, model: m }', 'routes.support.reply[0].provider', /'q', which is not declared/],
    ['model missing', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p }', 'routes.op[0].model', /non-empty string/],
    ['model empty', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p, model: "" }', 'routes.op[0].model', /non-empty string/],
    ['unknown route entry key', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p, model: m, weight: 2 }', 'routes.op[0].weight', /not a known key/],
    ['a repeated route entry', 'providers:\n  p: { kind: anthropic }\nroutes:\n  op:\n    - { provider: p, model: m }\n    - { provider: p, model: m }', 'routes.op[1]', /repeats p with m/],
  ])('rejects %s, naming the file and the key', (_label, text, key, problem) => {
    // Act
    const error = configError(text);

    // Assert
    expect(error.key).toBe(key);
    expect(error.message).toMatch(new RegExp(`^providers\\.yaml: ${key.replace(/[.[\]]/g, '\\$&')}: `));
    expect(error.message).toMatch(problem);
    expect(error.message).not.toContain('\n');
  });

  it('reports a YAML syntax error on one line with its position', () => {
    // Act
    const error = configError('providers:\n  p: { kind: anthropic\n');

    // Assert
    expect(error.message).toMatch(/^providers\.yaml: line \d+, column \d+: invalid YAML: /);
    expect(error.message).not.toContain('\n');
  });

  it('rejects a duplicate key', () => {
    // Act
    const error = configError('providers:\n  p: { kind: anthropic }\n  p: { kind: anthropic }\n');

    // Assert
    expect(error.message).toMatch(/invalid YAML/);
  });

  it('rejects a document that is not a mapping', () => {
    expect(configError('- just\n- a list\n').message).toBe(
      "providers.yaml: must be a mapping with 'providers' (and optionally 'routes')",
    );
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
    await expect(loadProvidersConfig(file)).rejects.toThrow(`${file}: providers.p.kind: `);
  });

  it('names a file that does not exist', async () => {
    // Arrange
    const file = path.join(dir, 'missing.yaml');

    // Act / Assert
    await expect(loadProvidersConfig(file)).rejects.toThrow(`${file}: cannot read the file (ENOENT)`);
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
    expect(error.message).toBe('providers.yaml: providers.sim-primary.prices.sim-small.inputPerMillion: must be a decimal in quotes, e.g. "0.15" (money is never read as a floating-point number)');
  });

  it('refuses two currencies in one file', () => {
    const error = configError(priced('      sim-small: { inputPerMillion: "1", outputPerMillion: "2", currency: USD }\n      sim-large: { inputPerMillion: "1", outputPerMillion: "2", currency: EUR }'));
    expect(error.message).toMatch(/prices\.sim-large\.currency: is EUR, but .* is USD: one providers file prices in one currency/);
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
