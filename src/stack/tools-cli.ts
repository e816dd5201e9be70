/**
 * `npm run tools -- ensure [--temporal-server]`: resolves (building or
 * fetching where needed) the Temporal CLI, the time-skipping test server and
 * the browser tests' Chromium, and says where each came from. With
 * `--temporal-server`, also Temporal's own server and its SQL tool (for
 * `npm run bench -- --temporal postgres`; about ten minutes to build the
 * first time). `show` says where each is without building anything.
 */
import { resolveChromium, resolveTemporalCli, resolveTemporalServer, resolveTestServer, ToolError } from './tools';

async function main(): Promise<void> {
  const command = process.argv[2] ?? 'ensure';
  const flags = process.argv.slice(3);
  if ((command !== 'ensure' && command !== 'show') || flags.some((flag) => flag !== '--temporal-server')) {
    console.error(`usage: npm run tools -- ensure|show [--temporal-server]`);
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
  const server = await resolveTemporalServer({ build: build && flags.includes('--temporal-server'), log });
  log(server ? `temporal server: ${server.server}, ${server.sqlTool}, schemas ${server.schemaDir} (${server.source})` : 'temporal server: none here (`npm run tools -- ensure --temporal-server` builds it with Go; only `npm run bench -- --temporal postgres` needs it)');
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((err: unknown) => {
  console.error(`tools: ${err instanceof ToolError ? err.message : String(err)}`);
  process.exit(1);
});
