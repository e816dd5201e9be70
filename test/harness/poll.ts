/**
 * Polls `check` every `everyMs` until it holds or `timeoutMs` passes. It
 * does not throw: the caller's assertion after it says what was wrong.
 * @returns whether it held.
 */
export async function pollUntil(check: () => boolean | Promise<boolean>, opts: { timeoutMs: number; everyMs: number }): Promise<boolean> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, opts.everyMs));
  }
}

/**
 * Waits until `check` holds, polling every 20 ms.
 * @throws Error when it does not hold within timeoutMs.
 */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  if (!(await pollUntil(check, { timeoutMs, everyMs: 20 }))) throw new Error('condition not met in time');
}
