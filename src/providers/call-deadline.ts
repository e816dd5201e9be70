/**
 * One provider call's whole budget, enforced by us and not only by the SDK:
 * the SDKs' `timeout` stops at the response headers, so a body that trickles
 * or stalls would otherwise outlive `timeoutMs`. Also follows the caller's signal.
 */

/** A running deadline; `clear()` it when the call settles. */
export interface CallDeadline {
  /** Aborts when the budget is spent or the caller aborts. */
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  /** True once the budget ran out. */
  expired(): boolean;
  /** True once the caller's own signal aborted. */
  callerAborted(): boolean;
  clear(): void;
}

/**
 * Starts a deadline of `timeoutMs` linked to the caller's `signal`.
 * @throws RangeError when timeoutMs is not a positive finite number (nothing is sent).
 */
export function startCallDeadline(timeoutMs: number, callerSignal?: AbortSignal): CallDeadline {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`);
  }
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new Error(`no answer within ${timeoutMs} ms`));
  }, timeoutMs);
  const onCallerAbort = (): void => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    timeoutMs,
    expired: () => expired,
    callerAborted: () => callerSignal?.aborted === true,
    clear: () => {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    },
  };
}

/** The SDKs insist on a positive integer timeout; round our budget up to one. */
export function sdkTimeoutMs(timeoutMs: number): number {
  return Math.max(1, Math.ceil(timeoutMs));
}
