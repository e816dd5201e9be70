import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileContracts } from '../contracts/output';
import type { ActivityDeps } from './deps';

/**
 * What a worker does once, before its first job, so that job costs what the
 * hundredth does: the output contracts are compiled, database connections
 * opened, and the HTTP client that provider calls and effects use (Node's
 * fetch) loaded and taken through one request to a server of its own, on
 * loopback, that lives only for it. Run inside the warm-up workflow, it also
 * takes the workflow sandbox, the message codecs and a local activity's round
 * trip through their first use. It reads and writes no ledger row and
 * reaches no provider and no downstream.
 */
export function createWarmUpActivities(deps: Pick<ActivityDeps, 'db' | 'operations'>) {
  return {
    async warmUp(): Promise<void> {
      compileContracts(deps.operations.values());
      const clients = await Promise.all(Array.from({ length: 2 }, () => deps.db.connect()));
      try {
        await Promise.all([...clients.map((client) => client.query('SELECT 1')), warmUpFetch()]);
      } finally {
        for (const client of clients) client.release();
      }
    },
  };
}

/** One JSON POST through fetch to a loopback server that answers with JSON, then the server is gone. */
async function warmUpFetch(): Promise<void> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end('{"ok":true}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'warm-up' },
      body: '{"warmUp":true}',
      signal: AbortSignal.timeout(5000),
    });
    await response.json();
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
