import { CANARY_ITSELF, getRouteVersion, RouteVersionState, stopCanaryIfRunning, stopExpiredCanaries, windowCounts, type RouteVersionRecord } from '../ledger/route-versions';
import type { Queryable } from '../ledger/queryable';
import { crossedThreshold } from './thresholds';

/**
 * Checks a version after one of its jobs became terminal: when it is a
 * running canary that has expired, or whose last jobs cross a threshold, it
 * stops by itself (a compare-and-swap on `running`: a promotion that won
 * first stands), with an event saying why. Cheap for any other version: one
 * primary-key read. Bounded for a canary: at most its window of jobs in each of three index reads (route-versions.ts, windowCounts).
 * @returns the canary it stopped, or undefined.
 */
export async function checkCanary(db: Queryable, operation: string, version: string): Promise<RouteVersionRecord | undefined> {
  const canary = await getRouteVersion(db, operation, version);
  if (!canary || canary.state !== RouteVersionState.running || !canary.thresholds) return undefined;
  const [expired] = await stopExpiredCanaries(db, operation);
  if (expired) return expired;
  const counts = await windowCounts(db, operation, version, canary.thresholds.window);
  const crossed = crossedThreshold(counts, canary.thresholds);
  if (!crossed) return undefined;
  return stopCanaryIfRunning(
    db,
    { operation, version },
    { by: CANARY_ITSELF, reason: crossed.reason, detail: { cause: 'threshold', threshold: crossed.threshold, window: canary.thresholds.window, counts, rolledBackTo: canary.previousVersion } },
  );
}
