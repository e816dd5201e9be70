import { compileContracts } from '../contracts/output';
import type { ActivityDeps } from './deps';

/**
 * What a worker does once, before its first job, so that job costs what the
 * hundredth does: the output contracts are compiled and database connections
 * opened. Run inside the warm-up workflow, it also takes the workflow sandbox,
 * the message codecs and a local activity's round trip through their first
 * use. It reads and writes no ledger row.
 */
export function createWarmUpActivities(deps: Pick<ActivityDeps, 'db' | 'operations'>) {
  return {
    async warmUp(): Promise<void> {
      compileContracts(deps.operations.values());
      const clients = await Promise.all(Array.from({ length: 2 }, () => deps.db.connect()));
      try {
        await Promise.all(clients.map((client) => client.query('SELECT 1')));
      } finally {
        for (const client of clients) client.release();
      }
    },
  };
}
