/**
 * `npm run tools -- ensure`: resolves (building or fetching where needed) the
 * Temporal CLI and the time-skipping test server, and says where each came from.
 */
import { resolveTemporalCli, resolveTestServer, ToolError } from './tools';

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
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((err: unknown) => {
  console.error(`tools: ${err instanceof ToolError ? err.message : String(err)}`);
  process.exit(1);
});
