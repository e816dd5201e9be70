import type { BillingPolicy } from './define';
import Ajv, { type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';

/** A failing field: JSON pointer into the request body, and why. */
export interface InputError {
  pointer: string;
  detail: string;
}

/** A JSON Schema as plain data (a TypeBox schema is one too). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- schemas are open JSON
export type JsonSchema = Record<string, any>;

/** Where a declaration sits: the file and the JSON pointer inside it (start-up errors name both). */
export interface DeclarationOrigin {
  file: string;
  pointer: string;
}

/** One version of an operation's input. Old versions stay beside new ones, so requests made for them keep working. */
export interface InputVersion<Input = unknown> {
  schemaVersion: number;
  input: JsonSchema;
  /** An input of this version, used by the docs and the demo. */
  example: Input;
  origin?: DeclarationOrigin;
}

/** How an operation treats its callers' deadlines; every value in milliseconds. */
export interface DeadlinePolicy {
  /** The deadline of a request that names none: this long after it arrives. Without it, such a job has none. */
  defaultMs?: number;
  /** The latest deadline a request may have, counted from its arrival: a later one is shortened to it. */
  maxMs?: number;
  /** No new attempt starts with less time than this left before the deadline (default 1000). */
  minAttemptMs?: number;
}

/**
 * How a read-only generation (an operation without effects) may retry: after
 * an attempt's timeout, while that attempt is still unknown, it may hedge with
 * a new attempt, within a budget. The first valid answer wins by the same
 * compare-and-swap. Invariant 4 is relaxed for these operations only.
 */
export interface HedgePolicy {
  /** Attempts in flight at once, the unknown ones included (2 or more). */
  maxConcurrent: number;
  /** No hedge opens later than this after the run's first attempt started (milliseconds). */
  budgetMs: number;
  /** No hedge opens once the run's attempts have cost, or may have cost (an unknown one at its most), this much (a decimal, in the route's price currency); without it, no cost limit. */
  maxCost?: string;
}

/** The least time left worth a new attempt, when an operation does not say. */
export const DEFAULT_MIN_ATTEMPT_MS = 1_000;

/**
 * A registered kind of work: its input schemas (versioned), the AI step's
 * prompt and output contract, and its default provider route.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each operation has its own input and output types
export interface OperationDefinition<Input = any, Output = any> {
  name: string;
  /** The newest input version: a request that names none is checked against it, and provider contracts are verified for it. */
  schemaVersion: number;
  description: string;
  /** The newest version's input schema. */
  input: JsonSchema;
  /** Every input version; without it, the one version above. */
  versions?: ReadonlyArray<InputVersion<Input>>;
  /** The output contract: strict JSON Schema, no extra keys. */
  output: JsonSchema;
  /**
   * The business parser: what the code consuming the output relies on beyond
   * the schema. Returns the violations; none means the output is usable.
   */
  businessChecks?(output: Output): string[];
  prompt: { system: string; user: string };
  /** Side effects run after the AI step, in order, each through the effect ledger. */
  effects?: string[];
  /** What the principal is billed for a job; default: the winning attempt's cost. */
  billing?: BillingPolicy;
  /** The caller's deadline (Request-Deadline): its default, its latest, and the least time left worth an attempt. */
  deadline?: DeadlinePolicy;
  /** Whether a job whose AI step has a winner still performs its effects once its deadline has passed (default true). */
  effectsAfterDeadline?: boolean;
  /** How a read-only generation retries: hedged attempts within a budget. Only for operations without effects. */
  retry?: { hedge?: HedgePolicy };
  /**
   * Whether the same key and digest, after a failed job none of whose effects
   * was ever claimed, starts a new run of that job (default false: the
   * failure is replayed, as for every terminal job).
   */
  reopenFailed?: boolean;
  /**
   * The job's result from the winning output and the effects' receipts (by
   * effect name). Without it, the result is the output itself.
   */
  finalize?(output: Output, receipts: Record<string, Record<string, unknown>>): unknown;
  /** Provider names in failover order. */
  defaultRoute: string[];
  /** Probe fixtures: realistic inputs a provider must answer on contract before it may be failed over to. */
  probes?: Array<{ name: string; input: Input }>;
  /** Example input of the newest version, used by the docs and the demo. */
  example: Input;
  /** Where the operation was declared. */
  origin?: DeclarationOrigin;
  /**
   * A model alias (operations/alias.ts): the input is a conversation, sent as
   * it is (no template); the output is `{ content }`, the assistant's text,
   * which must be JSON fitting `output` when `json`.
   */
  alias?: { json: boolean };
}

export interface RegisteredOperation extends OperationDefinition {
  /** Every input version, oldest first. */
  versions: ReadonlyArray<InputVersion>;
  /**
   * Checks an input against one version's schema (by default the newest).
   * @returns the failing fields under `/input`; none when the input is valid.
   * @throws RangeError when the operation has no such version.
   */
  validateInput(input: unknown, schemaVersion?: number): InputError[];
}

const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false, useDefaults: false, removeAdditional: false });

function pointerOf(error: ErrorObject, prefix: string): string {
  const params = error.params as { missingProperty?: string; additionalProperty?: string };
  const child = params.missingProperty ?? params.additionalProperty;
  const escaped = child?.replace(/~/g, '~0').replace(/\//g, '~1');
  return `${prefix}${error.instancePath}${escaped === undefined ? '' : `/${escaped}`}`;
}

function describe(error: ErrorObject): string {
  const params = error.params as { additionalProperty?: string; allowedValues?: unknown[] };
  if (error.keyword === 'additionalProperties') return 'is not a known field';
  if (error.keyword === 'required') return 'is required';
  if (params.allowedValues) return `must be one of ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return error.message ?? 'is not valid';
}

function inputErrors(validate: ValidateFunction, input: unknown): InputError[] {
  if (validate(input)) return [];
  const seen = new Set<string>();
  const errors: InputError[] = [];
  for (const error of validate.errors ?? []) {
    // anyOf branches of a union repeat themselves; one line a field is enough.
    if (error.keyword === 'const' || error.keyword === 'anyOf' && seen.has(pointerOf(error, '/input'))) continue;
    const pointer = pointerOf(error, '/input');
    const detail = describe(error);
    if (seen.has(`${pointer} ${detail}`)) continue;
    seen.add(`${pointer} ${detail}`);
    seen.add(pointer);
    errors.push({ pointer, detail });
  }
  return errors;
}

/**
 * Compiles an operation's input schemas once; its validator reports JSON pointers under `/input`.
 * @throws Error when a schema does not compile under Ajv's strict mode.
 */
export function registerOperation(definition: OperationDefinition): RegisteredOperation {
  const versions = [...(definition.versions ?? [{ schemaVersion: definition.schemaVersion, input: definition.input, example: definition.example }])].sort((a, b) => a.schemaVersion - b.schemaVersion);
  const validators = new Map(versions.map((version) => [version.schemaVersion, ajv.compile(version.input as AnySchema)]));
  return {
    ...definition,
    versions,
    validateInput(input: unknown, schemaVersion = definition.schemaVersion): InputError[] {
      const validate = validators.get(schemaVersion);
      if (!validate) throw new RangeError(`${definition.name} has no schema version ${schemaVersion}`);
      return inputErrors(validate, input);
    },
  };
}
