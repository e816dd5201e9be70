import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { withDeadline } from '../../src/stack/deadline';
import { startEmbeddedPostgres } from '../../src/stack/postgres';
import { freePort, loadTemporalDevConfig, startDevServer } from '../../src/stack/temporal-dev';
import { resolveTemporalCli, resolveTestServer } from '../../src/stack/tools';
import { STATE_ENV, type HarnessState } from './state';

/**
 * Starts, once for the whole run: a real PostgreSQL (embedded, unless
 * DATABASE_URL is given), a real Temporal dev server (in memory, with the
 * search attributes of temporal-dev.yaml), and the workflow bundle.
 */
export default async function globalSetup(): Promise<void> {
  const log = (line: string): void => void process.stderr.write(`[harness] ${line}\n`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-test-'));
  // As root, PostgreSQL runs as the `postgres` user, which must reach its data directory.
  chmodSync(dir, 0o755);
  const stops: Array<() => Promise<void>> = [];
  (globalThis as { __onceflowStops?: typeof stops }).__onceflowStops = stops;

  const started = Date.now();
  const [postgres, temporal, bundle, testServer] = await Promise.all([
    (async () => {
      if (process.env.DATABASE_URL) return { adminUrl: process.env.DATABASE_URL };
      // A start that never settles fails the run within minutes, naming itself, instead of hanging it.
      const pg = await withDeadline(startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'onceflow', persistent: false, log }), 300_000, 'starting the embedded PostgreSQL');
      stops.push(pg.stop);
      return pg;
    })(),
    (async () => {
      const cli = await resolveTemporalCli({ build: true, log });
      if (!cli) throw new Error('no Temporal CLI: install Go (to build it) or set TEMPORAL_CLI_PATH; see docs/production.md');
      const config = { ...loadTemporalDevConfig(), port: await freePort(), ui: false, dbFilename: undefined, namespace: 'onceflow-test' };
      const server = await startDevServer(cli.path, config, log);
      stops.push(server.stop);
      return server;
    })(),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: new DefaultLogger('WARN') }),
    resolveTestServer({ build: true, log }),
  ]);
  const workflowBundlePath = path.join(dir, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, bundle.code);

  const state: HarnessState = {
    adminDatabaseUrl: postgres.adminUrl,
    temporalAddress: temporal.address,
    temporalNamespace: temporal.namespace,
    workflowBundlePath,
    testServerPath: testServer?.path,
  };
  const stateFile = path.join(dir, 'state.json');
  writeFileSync(stateFile, JSON.stringify(state));
  process.env[STATE_ENV] = stateFile;
  log(`postgres, temporal dev server and workflow bundle ready in ${Date.now() - started} ms`);
}
