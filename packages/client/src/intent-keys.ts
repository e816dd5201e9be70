/**
 * Where keys are kept: the part of the Web Storage API this client uses, so
 * `sessionStorage` (the default in browsers) fits as it is, and Node or a
 * test passes `memoryStorage()` or its own.
 */
export interface KeyStorage {
  getItem(name: string): string | null;
  setItem(name: string, value: string): void;
  removeItem(name: string): void;
  key(index: number): string | null;
  readonly length: number;
}

/** A KeyStorage in memory, for Node and tests; one per "tab". */
export function memoryStorage(): KeyStorage {
  const items = new Map<string, string>();
  return {
    getItem: (name) => items.get(name) ?? null,
    setItem: (name, value) => void items.set(name, String(value)),
    removeItem: (name) => void items.delete(name),
    key: (index) => [...items.keys()][index] ?? null,
    get length() {
      return items.size;
    },
  };
}

/** What is kept per intent, under its digest. */
interface IntentRecord {
  idempotencyKey: string;
  /** Last time a submission of this intent used the key. */
  usedAtMs: number;
}

export const DEFAULT_KEY_MAX_AGE_MS = 24 * 60 * 60 * 1000;

const PREFIX = 'onceflow.intent:';

export interface IntentKeysOptions {
  storage: KeyStorage;
  /** A key unused for longer is forgotten: the same input later is a new intent. */
  maxAgeMs?: number;
  now?: () => number;
  newKey?: () => string;
}

/**
 * One Idempotency-Key per intent. The key of an intent (its digest) is made
 * once and kept in storage before the first request carries it, so a double
 * click, a retry and a reload that submits the same form again all send it;
 * another input is another digest, so another key. A key is forgotten when
 * the caller has shown the job's outcome (`forgetKey`), or once unused for
 * `maxAgeMs`.
 */
export class IntentKeys {
  private readonly storage: KeyStorage;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  private readonly newKey: () => string;

  constructor(options: IntentKeysOptions) {
    this.storage = options.storage;
    this.maxAgeMs = options.maxAgeMs ?? DEFAULT_KEY_MAX_AGE_MS;
    this.now = options.now ?? Date.now;
    this.newKey = options.newKey ?? (() => globalThis.crypto.randomUUID());
  }

  /** The key of the intent with this digest: the kept one, or a new one, kept before it is returned. */
  keyFor(digest: string): string {
    const nowMs = this.now();
    const kept = this.read(PREFIX + digest);
    const idempotencyKey = kept && !this.expired(kept, nowMs) ? kept.idempotencyKey : this.newKey();
    const record: IntentRecord = { idempotencyKey, usedAtMs: nowMs };
    this.storage.setItem(PREFIX + digest, JSON.stringify(record));
    return idempotencyKey;
  }

  /** The kept key of this digest, if any and not expired; keeps nothing. */
  peek(digest: string): string | undefined {
    const kept = this.read(PREFIX + digest);
    return kept && !this.expired(kept, this.now()) ? kept.idempotencyKey : undefined;
  }

  /** Forgets this key (its outcome was shown): the same input submitted again is a new intent. Returns whether it was kept. */
  forgetKey(idempotencyKey: string): boolean {
    let forgotten = false;
    for (const [name, record] of this.records()) {
      if (record.idempotencyKey !== idempotencyKey) continue;
      this.storage.removeItem(name);
      forgotten = true;
    }
    return forgotten;
  }

  /** Forgets every key unused for longer than maxAgeMs; returns how many. */
  sweep(): number {
    const nowMs = this.now();
    const stale = this.records().filter(([, record]) => this.expired(record, nowMs));
    for (const [name] of stale) this.storage.removeItem(name);
    return stale.length;
  }

  private expired(record: IntentRecord, nowMs: number): boolean {
    return nowMs - record.usedAtMs > this.maxAgeMs;
  }

  private records(): Array<[string, IntentRecord]> {
    const found: Array<[string, IntentRecord]> = [];
    for (let index = 0; index < this.storage.length; index++) {
      const name = this.storage.key(index);
      if (name === null || !name.startsWith(PREFIX)) continue;
      const record = this.read(name);
      if (record) found.push([name, record]);
    }
    return found;
  }

  private read(name: string): IntentRecord | undefined {
    const raw = this.storage.getItem(name);
    if (raw === null) return undefined;
    try {
      const record = JSON.parse(raw) as Partial<IntentRecord>;
      if (typeof record.idempotencyKey === 'string' && typeof record.usedAtMs === 'number') return record as IntentRecord;
    } catch {
      // Not ours, or damaged: treated as absent, and overwritten by the next key.
    }
    return undefined;
  }
}
