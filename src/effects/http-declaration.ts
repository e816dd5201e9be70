/** A downstream declared in the operations file: an HTTP call with an idempotency key. */
export interface HttpEffectDeclaration {
  /** The effect's name, as operations list it (e.g. "ticket.comment"). */
  name: string;
  /** The URL; `${ENV}` parts are read from the environment at start (secrets never live in the file). */
  url: string;
  method?: 'POST' | 'PUT' | 'PATCH';
  /** Header values may use `${ENV}`. */
  headers?: Record<string, string>;
  /** The header that carries the idempotency key (default Idempotency-Key). */
  idempotencyHeader?: string;
  /** A JSON template: strings may hold `{{input.x}}`, `{{output.y}}`, `{{job.id}}`, `{{job.operation}}`, `{{key}}`; a string that is exactly one placeholder takes the value's type. */
  body?: unknown;
  /** Status classes as lists of codes or ranges like "2xx"; defaults: done 2xx, notPerformed 429, rejected other 4xx, ambiguous 5xx (and resets/timeouts). */
  statuses?: { done?: string[]; rejected?: string[]; notPerformed?: string[]; ambiguous?: string[] };
  /** Receipt fields: name → JSON pointer into the response body (scalars only). */
  receipt?: Record<string, string>;
  /** How to look a receipt up by key after an ambiguous try. */
  lookup?: { url: string; method?: 'GET' | 'POST'; found?: string[]; notFound?: string[]; receipt?: Record<string, string> };
  /** The downstream deduplicates by the idempotency key, so a repeat with the same key is safe. */
  deduplicates: boolean;
  /** Per-try timeout, ms (default 10000). */
  timeoutMs?: number;
  /**
   * What the drills that check `lookup` and `deduplicates` send (onceflow
   * effects verify): probes (input and output values, as a job has them), a
   * malformed probe the downstream must refuse with a 4xx, and, for a
   * downstream with a staging or test mode, another origin and extra headers.
   */
  verify?: {
    url?: string;
    headers?: Record<string, string>;
    probes?: Array<{ name: string; input: Record<string, unknown>; output: Record<string, unknown> }>;
    malformed?: { input: Record<string, unknown>; output: Record<string, unknown> };
  };
}
