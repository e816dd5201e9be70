/** A job's attempts in the order they were opened: by run, then by sequence. */
import type { GatewayObservation, GwAttempt } from '../observation';

export function attemptsInOrder(obs: GatewayObservation, jobId: string): GwAttempt[] {
  return obs.attempts.filter((a) => a.jobId === jobId).sort((a, b) => a.run - b.run || a.seq - b.seq);
}
