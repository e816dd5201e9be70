import type { DeadlinePolicy, HedgePolicy, InputVersion, JsonSchema } from './operation';

/**
 * A business check stated as data: a field of the output (a JSON pointer), the
 * message a violation reports, and one rule.
 */
export type DeclaredCheck = { field: string; message: string } & (
  | { nonBlank: true }
  /** A regular expression the field's text must not match (e.g. an unfilled `{{…}}` placeholder). */
  | { forbid: string }
  | { enum: unknown[] }
  /** Characters of a string, or items of a list. */
  | { length: { min?: number; max?: number } }
);

/** The job's result stated as data: the output (unless `output: false`) plus fields taken from the effects' receipts. */
export interface DeclaredResult {
  output?: boolean;
  fields?: Record<string, { effect: string; field: string }>;
}

/**
 * An operation as the operations file declares it; a module may give the same
 * and, where a declaration cannot say it, code: `businessChecks` (run after the
 * declared checks) and `finalize` (instead of `result`).
 */
/** The billing policies an operation may declare (operations file: `billing`). */
export const BillingPolicy = { winner: 'winner', allAttempts: 'all-attempts' } as const;
export type BillingPolicy = (typeof BillingPolicy)[keyof typeof BillingPolicy];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each operation has its own input and output types
export interface OperationSpec<Input = any, Output = any> {
  name: string;
  description: string;
  /** Input schemas by version; a request names one (schemaVersion) or gets the highest. */
  versions: Array<Omit<InputVersion<Input>, 'origin'>>;
  /** The output contract: every object in it says additionalProperties: false. */
  output: JsonSchema;
  checks?: DeclaredCheck[];
  businessChecks?(output: Output): string[];
  /** `{{field}}` takes the input's value; each placeholder must be a required field of every version. */
  prompt: { system: string; user: string };
  /** Provider names in failover order. */
  route: string[];
  probes?: Array<{ name: string; input: Input }>;
  /** Effect names, run in this order after the AI step. */
  effects?: string[];
  /** What the principal is billed: the winning attempt's cost (default), or every attempt's. */
  billing?: BillingPolicy;
  /** The caller's deadline: default, maximum and the least time left worth an attempt (milliseconds). */
  deadline?: DeadlinePolicy;
  /** Whether effects still run once the deadline has passed (default true); false fails the job before any claim. */
  effectsAfterDeadline?: boolean;
  /** A read-only generation (no effects) may hedge after a timeout, within a budget (docs/operations.md, "Retry policies"). */
  retry?: { hedge?: HedgePolicy };
  /** Whether the same intent after a failed job with no effect claimed starts the job's next run (default false: the failure is replayed). */
  reopenFailed?: boolean;
  result?: DeclaredResult;
  finalize?(output: Output, receipts: Record<string, Record<string, unknown>>): unknown;
}

/**
 * The default export of an operation module (`module: ./my-operation.ts` in
 * the operations file). It is checked at start like a declared operation.
 */
export function defineOperation<Input = Record<string, unknown>, Output = Record<string, unknown>>(spec: OperationSpec<Input, Output>): OperationSpec<Input, Output> {
  return spec;
}
