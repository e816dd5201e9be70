import { createWarmUpActivities } from '../../src/activities/warm-up-activities';
import { createAnthropicProvider } from '../../src/providers/anthropic';
import { createOpenAiCompatibleProvider } from '../../src/providers/openai-compatible';
import { demoRegistry } from '../../src/operations/registry';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { startFakeServer, type FakeServer } from '../providers/fake-http';

describe('the worker warm-up', () => {
  let database: TestDatabase;
  let provider: FakeServer;
  beforeAll(async () => {
    database = await createTestDatabase();
    provider = await startFakeServer((_request, response) => response.writeHead(500).end());
  });
  afterAll(async () => {
    await provider?.close();
    await database?.drop();
  });

  it('takes the SDK of each kind of provider the routes use through a completion, on loopback, and reaches no provider', async () => {
    const providers = new Map([
      ['primary', createOpenAiCompatibleProvider({ name: 'primary', baseUrl: `${provider.url}/v1`, lookup: true })],
      ['backup', createOpenAiCompatibleProvider({ name: 'backup', baseUrl: `${provider.url}/v1` })],
      ['claude', createAnthropicProvider({ name: 'claude', baseUrl: provider.url })],
    ]);
    const { warmUp } = createWarmUpActivities({ db: database.pool, operations: demoRegistry(), providers });

    const report = await warmUp();

    // Each kind once, its answer parsed by its own SDK as a real call's would be.
    expect(report).toEqual({ providerKinds: { 'openai-compatible': 'warm-up', anthropic: 'warm-up' } });
    expect(provider.requests).toEqual([]);
  });

  it('warms no provider SDK when no provider is configured', async () => {
    const { warmUp } = createWarmUpActivities({ db: database.pool, operations: demoRegistry(), providers: new Map() });
    expect(await warmUp()).toEqual({ providerKinds: {} });
  });
});
