/**
 * `npm run tools -- ensure`: resolves (building or fetching where needed) the
 * Temporal CLI, the time-skipping test server and the browser tests'
 * Chromium, and says where each came from.
 */
import { resolveChromium, resolveTemporalCli, resolveTestServer, ToolError } from './tools';

async function main(): Promise<void> {
  const command = process.argv[2] ?? 'ensure';
  if (command !== 'ensure' && command !== 'show') {
    console.error(`usage: npm run tools -- ensure|show`);
    process.exit(2);
  }
  const build = command === 'ensure';
  const log = (line: string): void => console.log(`tools: ${line}`);
  const started = Date.now();
  const cli = await resolveTemporalCli({ build, log });
  log(cli ? `temporal CLI: ${cli.path} (${cli.source})` : 'temporal CLI: none here; the SDK will download it (needs internet)');
  const testServer = await resolveTestServer({ build, log });
  log(testServer ? `test server: ${testServer.path} (${testServer.source})` : 'test server: none here; the SDK will download it (needs internet)');
  const chromium = await resolveChromium({ build, log });
  log(chromium ? `chromium: ${chromium.path} (${chromium.source})` : 'chromium: none here; the browser tests need one (set CHROMIUM_PATH, or install Debian\'s chromium)');
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((err: unknown) => {
  console.error(`tools: ${err instanceof ToolError ? err.message : String(err)}`);
  process.exit(1);
});
