/** The one-line log of a finished gateway trial. */
import { roundTrialLine } from '../round';
import type { GatewayTrialRecord } from './trial';

export function gatewayTrialLine(record: GatewayTrialRecord): string {
  return roundTrialLine(record, record.observation?.jobs ?? [], { before: `${record.plan.kind} ` });
}
