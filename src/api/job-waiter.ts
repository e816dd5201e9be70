import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { JOB_TERMINAL_CHANNEL } from '../ledger/jobs';

/**
 * How long an announcement is remembered (by default), for a request that
 * read its job open just before the job ended and begins to wait after the
 * announcement came. A wait that begins later than this after its read looks
 * at the ledger.
 */
export const ANNOUNCEMENTS_KEPT_MS = 10_000;

/**
 * Lets requests with `Prefer: wait=N` sleep until their job is terminal. One
 * LISTEN connection per process hears the trigger on jobs; the caller re-reads
 * the row after waking, and a missed notification only costs the timeout.
 */
export class JobWaiter {
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Jobs announced terminal in the last ANNOUNCEMENTS_KEPT_MS, oldest first, with when (performance.now()). */
  private readonly announced = new Map<string, number>();
  /** Since when (performance.now()) the current LISTEN connection has heard every announcement; undefined while there is none. */
  private listeningSinceMs?: number;
  private client?: Client;
  private connecting?: Promise<void>;

  private readonly announcementsKeptMs: number;

  constructor(
    private readonly connectionString: string,
    opts: { announcementsKeptMs?: number } = {},
  ) {
    this.announcementsKeptMs = opts.announcementsKeptMs ?? ANNOUNCEMENTS_KEPT_MS;
  }

  /** The moment to pass to wait(): taken before the job is read open. */
  now(): number {
    return performance.now();
  }

  private remember(jobId: string): void {
    const nowMs = performance.now();
    this.announced.delete(jobId);
    this.announced.set(jobId, nowMs);
    for (const [id, atMs] of this.announced) {
      if (nowMs - atMs <= this.announcementsKeptMs) break;
      this.announced.delete(id);
    }
  }

  private async connect(): Promise<void> {
    const client = new Client({ connectionString: this.connectionString });
    client.on('notification', (message) => {
      if (!message.payload) return;
      this.remember(message.payload);
      this.waiting.get(message.payload)?.forEach((wake) => wake());
    });
    client.on('error', () => {
      // The next wait reconnects (and looks at the ledger: what came meanwhile went unheard); waits in progress fall back to their timeout.
      this.listeningSinceMs = undefined;
      this.client = undefined;
      this.connecting = undefined;
      void client.end().catch(() => undefined);
    });
    await client.connect();
    await client.query(`LISTEN ${JOB_TERMINAL_CHANNEL}`);
    this.listeningSinceMs = performance.now();
    this.client = client;
  }

  /**
   * Opens the LISTEN connection now (at start) rather than on the first wait.
   * @throws what connecting throws; the next wait tries again.
   */
  async listen(): Promise<void> {
    if (this.client) return;
    this.connecting ??= this.connect().catch((err: unknown) => {
      // Not kept: the next wait tries to connect again.
      this.connecting = undefined;
      throw err;
    });
    await this.connecting;
  }

  /**
   * Resolves when jobId is announced terminal, or after timeoutMs, whichever
   * comes first. `readAtMs` (from now()) says when the caller began the read
   * that found the job open: when this waiter has been listening since then
   * and remembers that long, every announcement since is either remembered or
   * still to come, so no look at the ledger is needed. Otherwise
   * `isTerminalNow` is asked, for an announcement that came unheard.
   */
  async wait(jobId: string, timeoutMs: number, isTerminalNow: () => Promise<boolean>, readAtMs?: number): Promise<void> {
    // Without LISTEN the wait still ends: by the job's own state, or the timeout.
    if (!this.client) await this.listen().catch(() => undefined);
    const heardSinceRead =
      readAtMs !== undefined && this.listeningSinceMs !== undefined && this.listeningSinceMs <= readAtMs && performance.now() - readAtMs < this.announcementsKeptMs;
    // Only an announcement after the read: an earlier one is of a run that ended before it (a failed job reopened since).
    if (heardSinceRead && (this.announced.get(jobId) ?? -Infinity) >= readAtMs) return;
    await new Promise<void>((resolve) => {
      const wakers = this.waiting.get(jobId) ?? new Set<() => void>();
      this.waiting.set(jobId, wakers);
      let finished = false;
      // Woken once only (the announcement, the timeout and the request's own look may all fire),
      // and the map entry goes only while it is still this set: another request's wait must stay.
      const done = (): void => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        wakers.delete(done);
        if (wakers.size === 0 && this.waiting.get(jobId) === wakers) this.waiting.delete(jobId);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      wakers.add(done);
      // Unless every announcement since the read was heard, the job may have become terminal before LISTEN heard about it.
      if (!heardSinceRead) isTerminalNow().then((terminal) => terminal && done(), () => undefined);
    });
  }

  async close(): Promise<void> {
    for (const wakers of this.waiting.values()) wakers.forEach((wake) => wake());
    await this.client?.end().catch(() => undefined);
    this.listeningSinceMs = undefined;
    this.client = undefined;
  }
}
