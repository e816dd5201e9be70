import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { loadConfig } from '../../src/config';
import { createEffectRegistry } from '../../src/effects/registry';
import { parseOperations } from '../../src/operations/load';
import { loadProviders } from '../../src/providers/load';
import { partsOf, ROOT } from './markdown';

/**
 * The README's "Your own operation" files are real: the operations file and
 * the providers file it shows load as a start loads them, and the HTTP effect
 * it declares can be built with the variables the README exports.
 */
describe("the README's own operation", () => {
  const blocks = partsOf(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).blocks;
  const fileNamed = (name: string): string => {
    const block = blocks.find((b) => b.info === 'yaml' && b.body.startsWith(`# ${name}\n`));
    if (!block) throw new Error(`the README has no yaml block starting "# ${name}"`);
    return block.body;
  };
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-readme-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads its operations file, providers file and HTTP effect', async () => {
    // Arrange
    const opsFile = path.join(dir, 'ops.yaml');
    const providersFile = path.join(dir, 'providers.yaml');
    writeFileSync(opsFile, fileNamed('ops.yaml'));
    writeFileSync(providersFile, fileNamed('providers.yaml'));
    const env = { OPENAI_API_KEY: 'sk-test', NOTES_URL: 'http://127.0.0.1:7310', NOTES_TOKEN: 'anything' };

    // Act
    const operations = parseOperations(readFileSync(opsFile, 'utf8'), opsFile);
    const config = loadConfig({ ONCEFLOW_PROVIDERS_FILE: providersFile });
    const providers = await loadProviders(config, operations.registry, env);
    const effects = createEffectRegistry({ config: config.effects, db: {} as Pool, declared: operations.httpEffects, env });

    // Assert
    expect([...operations.registry.keys()]).toEqual(['ticket.summary']);
    expect(providers.routeFor('ticket.summary')).toEqual([{ provider: 'openai', model: 'gpt-4o-mini' }]);
    expect(operations.registry.get('ticket.summary')!.effects).toEqual(['ticket.note']);
    expect(effects.has('ticket.note')).toBe(true);
  });
});
