import type { Queryable } from '../ledger/queryable';
import { servingVersions, stopExpiredCanaries, type RouteVersionRecord } from '../ledger/route-versions';
import { inCanaryShare } from './share';

export interface Serving {
  running?: RouteVersionRecord;
  promoted?: RouteVersionRecord;
}

/**
 * Chooses the route version of each new job at admission: a running
 * canary's share of job ids (by hash), the rest to the version it is tried
 * against (the promoted version, else the providers file's route). The
 * operation's running and promoted versions are one indexed read, kept for
 * `cacheMs`: a stop, a promotion or a new canary reaches new jobs of another
 * API process at most that much later (this process forgets at once).
 */
export class RouteChooser {
  private readonly cache = new Map<string, { readAtMs: number; serving: Promise<Serving> }>();

  constructor(
    private readonly db: Queryable,
    /** The providers file's route version of an operation, in this process. */
    private readonly baselineFor: (operation: string) => string,
    private readonly cacheMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** What serves new jobs of the operation now (cached). */
  serving(operation: string): Promise<Serving> {
    const cached = this.cache.get(operation);
    if (cached && this.nowMs() - cached.readAtMs < this.cacheMs) return cached.serving;
    const serving = servingVersions(this.db, operation);
    this.cache.set(operation, { readAtMs: this.nowMs(), serving });
    serving.catch(() => this.cache.delete(operation));
    return serving;
  }

  /** The version the rest of new jobs take: the promoted version, else the providers file's route. */
  previousOf(serving: Serving, operation: string): string {
    return serving.promoted?.version ?? this.baselineFor(operation);
  }

  /**
   * The version a new job with this id is admitted to. A canary found expired
   * is stopped here (the same compare-and-swap the sweeper makes), so no job
   * is admitted to it after its expiry.
   */
  async versionFor(operation: string, jobId: string): Promise<string> {
    const serving = await this.serving(operation);
    const { running } = serving;
    if (!running) return this.previousOf(serving, operation);
    if (running.expiresAt!.getTime() <= this.nowMs()) {
      await stopExpiredCanaries(this.db, operation);
      this.forget(operation);
      return this.previousOf(serving, operation);
    }
    return inCanaryShare(jobId, running.shareBp!) ? running.version : this.previousOf(serving, operation);
  }

  /** Reads the operation again at its next job (after this process changed one of its versions). */
  forget(operation: string): void {
    this.cache.delete(operation);
  }
}
