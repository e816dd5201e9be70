import { eligibility, type GateSettings } from '../../src/contracts/eligibility';
import { templateHash } from '../../src/contracts/prompt';
import { verifyProvider } from '../../src/contracts/verify';
import { createRegistry } from '../../src/operations/registry';
import { SIM_ROUTE } from '../../src/sim/providers';
import { startTestStack, type TestStack } from '../harness/stack';

const gate: GateSettings = { maxAgeMs: 24 * 3_600_000, demotion: { window: 20, minSamples: 5, threshold: 0.5 } };
const backup = SIM_ROUTE[1]!;

/** What a verification keeps per probe, and the configuration it holds for. */
describe('probe evidence', () => {
  let stack: TestStack;
  const operation = createRegistry().get('support.reply')!;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, verify: false });
  });
  afterAll(() => stack.close());

  const verify = () => verifyProvider({ db: stack.db.pool, operations: createRegistry(), providers: stack.providers, routeFor: () => SIM_ROUTE }, operation, backup, { samples: 1, timeoutMs: 5_000 });

  it('stores per probe the request id, the route, the terminal state and the usage, and the configuration it ran under', async () => {
    // Act
    const record = await verify();

    // Assert
    expect(record.passed).toBe(true);
    const fixtures = record.evidence.fixtures as Array<{ samples: unknown[] }>;
    expect(fixtures[0]!.samples[0]).toEqual({
      ok: true,
      requestId: expect.stringMatching(/^verify-/),
      route: { provider: 'sim-backup', model: 'sim-large' },
      outcome: 'succeeded',
      usage: expect.objectContaining({ inputTokens: expect.any(Number), outputTokens: expect.any(Number), model: 'sim-large' }),
    });
    expect(record.evidence.config).toEqual({
      baseUrl: stack.sims.backup.url,
      model: 'sim-large',
      templateHash: templateHash(operation),
      schemaVersion: operation.schemaVersion,
      onceflowVersion: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
  });

  it("holds a verification stale once the provider's base URL is re-pointed", async () => {
    // Arrange
    await verify();

    // Act
    const same = await eligibility(stack.db.pool, operation, backup, 'fallback', gate, new Date(), stack.sims.backup.url);
    const moved = await eligibility(stack.db.pool, operation, backup, 'fallback', gate, new Date(), 'http://127.0.0.1:9/v1');

    // Assert
    expect(same.eligible).toBe(true);
    expect(moved).toEqual({ eligible: false, reason: 'stale', detail: `verified against ${stack.sims.backup.url}; the provider now points at http://127.0.0.1:9/v1` });
  });
});
