/**
 * Throttles authentication failures per client address: after `maxFailures`
 * wrong or missing keys within `windowMs`, the address is refused (429) until
 * its window ends.
 *
 * While an address is refused, every request from it is refused, valid keys
 * included, and the key is not even compared: if a valid key still passed, a
 * guesser would learn that its guess was right from the one answer that is
 * not a 429, and the throttle would not slow guessing at all. A success does
 * not reset the count either, or one valid key would let its holder guess on
 * for ever. The price is that clients sharing an address with a misbehaving
 * one wait out the window; behind a proxy, set ONCEFLOW_API_TRUST_PROXY so the
 * address is the client's and not the proxy's.
 */
export interface AuthThrottleSettings {
  maxFailures: number;
  windowMs: number;
  /** Addresses tracked at most; the oldest windows are dropped first. */
  maxAddresses?: number;
}

interface Window {
  startedAtMs: number;
  failures: number;
}

export class AuthThrottle {
  private readonly windows = new Map<string, Window>();
  private readonly maxAddresses: number;

  constructor(
    private readonly settings: AuthThrottleSettings,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.maxAddresses = settings.maxAddresses ?? 100_000;
  }

  /** Milliseconds until the address may try again, or 0 when it is not refused. */
  refusedForMs(address: string): number {
    const window = this.current(address);
    if (!window || window.failures < this.settings.maxFailures) return 0;
    return window.startedAtMs + this.settings.windowMs - this.nowMs();
  }

  /** Counts one failed authentication from the address. */
  fail(address: string): void {
    const window = this.current(address);
    if (window) {
      window.failures++;
      return;
    }
    if (this.windows.size >= this.maxAddresses) this.dropOldest();
    this.windows.set(address, { startedAtMs: this.nowMs(), failures: 1 });
  }

  private current(address: string): Window | undefined {
    const window = this.windows.get(address);
    if (window && this.nowMs() - window.startedAtMs >= this.settings.windowMs) {
      this.windows.delete(address);
      return undefined;
    }
    return window;
  }

  private dropOldest(): void {
    // Insertion order is start order: expired windows go first, then the oldest live ones.
    for (const address of this.windows.keys()) {
      this.windows.delete(address);
      if (this.windows.size < this.maxAddresses) return;
    }
  }
}
