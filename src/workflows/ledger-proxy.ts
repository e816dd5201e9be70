import { proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

/**
 * Ledger steps run as local activities: each is one short transaction whose
 * WHERE clauses make it safe to repeat, so a retry is harmless and no task
 * round trip through the server is spent on it.
 */
export const ledger = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', backoffCoefficient: 2 },
});
