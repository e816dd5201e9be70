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

/**
 * The step that may also send an attempt (revision 2): its real bounds are
 * inside it (the provider call's own timeout, a lease for the effects); this
 * only stops a step that hangs past all of them. Retrying it is safe too: a
 * retried step finds its attempt already sent and makes it unknown.
 */
export const ledgerSending = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', backoffCoefficient: 2 },
});
