import type { LookupResult, ProviderAdapter } from '../../src/providers/types';

/** A provider whose next lookup waits until the test lets it go: a reconciliation caught mid-look. */
export interface GatedProvider extends ProviderAdapter {
  /** Resolves when a lookup has started and is being held. */
  lookupHeld(): Promise<string>;
  /** Lets the held lookup (and every later one) through. */
  release(): void;
}

export function gateLookups(inner: ProviderAdapter): GatedProvider {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: (requestId: string) => void;
  const heldPromise = new Promise<string>((resolve) => (held = resolve));
  return {
    name: inner.name,
    kind: inner.kind,
    complete: (request) => inner.complete(request),
    async lookup(requestId: string): Promise<LookupResult> {
      held(requestId);
      await released;
      return inner.lookup!(requestId);
    },
    lookupHeld: () => heldPromise,
    release,
  };
}
