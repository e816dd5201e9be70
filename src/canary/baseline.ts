import type { Queryable } from '../ledger/queryable';
import { recordBaselineRoutes } from '../ledger/route-versions';
import type { OperationRegistry } from '../operations/registry';
import { routeVersionOf } from '../providers/route-version';
import type { RouteStep } from '../temporal/contract';

/**
 * Records this process's providers-file route of every operation as a
 * baseline route version (idempotent: every API and worker does it at start),
 * so that whichever worker runs a job finds the steps of the version it was
 * admitted to, even when its own file says otherwise.
 */
export async function recordBaselines(db: Queryable, operations: OperationRegistry, routeFor: (operation: string) => RouteStep[]): Promise<void> {
  await recordBaselineRoutes(
    db,
    [...operations.keys()].map((operation) => ({ operation, version: routeVersionOf(routeFor(operation)), steps: routeFor(operation) })),
  );
}
