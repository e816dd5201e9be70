import { Client } from 'pg';
import { JOB_TERMINAL_CHANNEL } from '../ledger/jobs';

/**
 * Lets requests with `Prefer: wait=N` sleep until their job is terminal. One
 * LISTEN connection per process hears the trigger on jobs; the caller re-reads
 * the row after waking, and a missed notification only costs the timeout.
 */
export class JobWaiter {
  private readonly waiting = new Map<string, Set<() => void>>();
  private client?: Client;
  private connecting?: Promise<void>;

  constructor(private readonly connectionString: string) {}

  private async connect(): Promise<void> {
    const client = new Client({ connectionString: this.connectionString });
    client.on('notification', (message) => {
      const wakers = message.payload ? this.waiting.get(message.payload) : undefined;
      wakers?.forEach((wake) => wake());
    });
    client.on('error', () => {
      // The next wait reconnects; waits in progress fall back to their timeout.
      this.client = undefined;
      this.connecting = undefined;
      void client.end().catch(() => undefined);
    });
    await client.connect();
    await client.query(`LISTEN ${JOB_TERMINAL_CHANNEL}`);
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

  /** Resolves when jobId is announced terminal, or after timeoutMs, whichever comes first. */
  async wait(jobId: string, timeoutMs: number, isTerminalNow: () => Promise<boolean>): Promise<void> {
    // Without LISTEN the wait still ends: by the job's own state, or the timeout.
    if (!this.client) await this.listen().catch(() => undefined);
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
      // The job may have become terminal before LISTEN heard about it.
      isTerminalNow().then((terminal) => terminal && done(), () => undefined);
    });
  }

  async close(): Promise<void> {
    for (const wakers of this.waiting.values()) wakers.forEach((wake) => wake());
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }
}
