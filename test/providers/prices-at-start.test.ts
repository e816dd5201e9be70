import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { createRegistry } from '../../src/operations/registry';
import { loadProviders } from '../../src/providers/load';

/** The operations these files route: support.reply alone (its route is what the price table is checked against). */
const supportReplyOnly = () => createRegistry([createRegistry().get('support.reply')!]);

describe('prices at start', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'onceflow-prices-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const providersFile = (backupPrices: string): string => {
    const file = path.join(dir, `providers-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(
      file,
      `providers:
  sim-primary:
    kind: openai-compatible
    baseUrl: http://127.0.0.1:9/v1
    prices:
      sim-small: { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: USD }
  sim-backup:
    kind: openai-compatible
    baseUrl: http://127.0.0.1:9/v1
${backupPrices}
routes:
  support.reply:
    - { provider: sim-primary, model: sim-small }
    - { provider: sim-backup, model: sim-large }
`,
    );
    return file;
  };

  it('refuses to start when a model a route uses has no price, naming the model', async () => {
    const file = providersFile('');
    await expect(loadProviders(loadConfig({ ONCEFLOW_PROVIDERS_FILE: file }), supportReplyOnly(), {})).rejects.toThrow(
      `${file}: providers.sim-backup.prices: has no price for model sim-large, which the route of support.reply uses`,
    );
  });

  it('gives the activities the price table when every route model is priced', async () => {
    const file = providersFile('    prices:\n      sim-large: { inputPerMillion: "2.50", outputPerMillion: "10.00", currency: USD }');
    const { prices } = await loadProviders(loadConfig({ ONCEFLOW_PROVIDERS_FILE: file }), supportReplyOnly(), {});
    expect(prices.get('sim-backup')?.get('sim-large')).toEqual({ inputPerMillion: '2.50', outputPerMillion: '10.00', currency: 'USD' });
  });

  it('prices the built-in simulators', async () => {
    const { prices } = await loadProviders(loadConfig({}), createRegistry(), {});
    expect(prices.get('sim-primary')?.get('sim-small')?.currency).toBe('USD');
  });
});
