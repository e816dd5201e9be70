/**
 * Process faults, struck at their anchor: SIGKILL of a worker or of the API
 * (restarted after a pause), a restart of PostgreSQL, a SIGSTOPped worker.
 * Each reports when it struck, or why it could not (the job ended first).
 */
import { sleep, type TrialScope } from './context';
import type { Anchor, ProcessFault } from './faults';
import { watchJob, type JobView } from './job-view';

/** What the PostgreSQL pool of the API and workers may still get wrong after the server is back. */
const POSTGRES_GRACE_MS = 5_000;

export interface StrikeResult {
  /** When the fault struck; undefined when it could not run. */
  struckAt?: number;
  notRun?: string;
}

const anchorReached: Record<Exclude<Anchor, 'submit'>, (job: JobView) => boolean> = {
  'attempt-running': (job) => job.attempts.some((a) => a.status === 'running'),
  'attempt-won': (job) => job.attempts.some((a) => a.status === 'succeeded'),
  'effect-claimed': (job) => job.effects.length > 0,
};

/** Waits for the anchor plus the offset. @returns why it cannot strike, or undefined when it may. */
async function awaitAnchor(scope: TrialScope, anchor: Anchor, offsetMs: number): Promise<string | undefined> {
  if (anchor === 'submit') {
    await sleep(scope.submittedAt + offsetMs - Date.now());
    return undefined;
  }
  const jobId = await scope.jobId;
  if (!jobId) return 'no job was admitted';
  const watched = await watchJob(scope.client, scope.ctx.stack.operatorKey, jobId, anchorReached[anchor], Math.min(scope.deadline, Date.now() + 30_000));
  if (!watched.reached) return `anchor ${anchor} not reached: ${watched.why}`;
  scope.note(`anchor ${anchor} seen`);
  await sleep(offsetMs);
  return undefined;
}

export async function strike(scope: TrialScope, fault: ProcessFault): Promise<StrikeResult> {
  if (fault.kind === 'none') return {};
  const { stack, windows } = scope.ctx;
  const notRun = await awaitAnchor(scope, fault.anchor, fault.offsetMs);
  if (notRun) return { notRun };
  switch (fault.kind) {
    case 'kill-worker': {
      const worker = stack.workers[fault.worker];
      if (!worker.running) return { notRun: `${worker.name} was not running` };
      const struckAt = scope.note(`SIGKILL ${worker.name} (pid ${worker.process?.pid})`);
      await worker.kill();
      await sleep(fault.restartAfterMs);
      await worker.start();
      scope.note(`${worker.name} restarted`);
      return { struckAt };
    }
    case 'kill-api': {
      const struckAt = scope.note(`SIGKILL api (pid ${stack.api.process?.pid})`);
      const window = { what: 'api' as const, from: struckAt, to: Number.MAX_SAFE_INTEGER };
      windows.push(window);
      await stack.api.kill();
      await sleep(fault.restartAfterMs);
      await stack.api.start();
      window.to = scope.note('api restarted');
      return { struckAt };
    }
    case 'restart-pg': {
      if (!stack.canRestartPostgres) return { notRun: 'PostgreSQL is external (DATABASE_URL)' };
      const struckAt = scope.note('PostgreSQL stopping');
      const window = { what: 'postgres' as const, from: struckAt, to: Number.MAX_SAFE_INTEGER };
      windows.push(window);
      await stack.restartPostgres(fault.downMs);
      window.to = scope.note('PostgreSQL up again') + POSTGRES_GRACE_MS;
      return { struckAt };
    }
    case 'pause-worker': {
      const worker = stack.workers[fault.worker];
      if (!worker.running || !worker.process) return { notRun: `${worker.name} was not running` };
      const proc = worker.process;
      const struckAt = scope.note(`SIGSTOP ${worker.name} (pid ${proc.pid})`);
      proc.pause();
      try {
        await sleep(fault.pausedMs);
      } finally {
        proc.resume();
        scope.note(`SIGCONT ${worker.name}`);
      }
      return { struckAt };
    }
  }
}
