import type { Static, TObject } from '@sinclair/typebox';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';

/** A failing field: JSON pointer into the request body, and why. */
export interface InputError {
  pointer: string;
  detail: string;
}

/**
 * A registered kind of work: its input schema (versioned), the AI step's
 * prompt and output contract, and its default provider route.
 */
export interface OperationDefinition<I extends TObject = TObject, O extends TObject = TObject> {
  name: string;
  schemaVersion: number;
  description: string;
  input: I;
  /** The output contract: strict JSON Schema, no extra keys. */
  output: O;
  /**
   * The business parser: what the code consuming the output relies on beyond
   * the schema. Returns the violations; none means the output is usable.
   */
  businessChecks?(output: Static<O>): string[];
  prompt: { system: string; user: string };
  /** Side effects run after the AI step, in order, each through the effect ledger. */
  effects?: string[];
  /**
   * The job's result from the winning output and the effects' receipts (by
   * effect name). Without it, the result is the output itself.
   */
  finalize?(output: Static<O>, receipts: Record<string, Record<string, unknown>>): unknown;
  /** Provider names in failover order. */
  defaultRoute: string[];
  /** Probe fixtures: realistic inputs a provider must answer on contract before it may be failed over to. */
  probes?: Array<{ name: string; input: Static<I> }>;
  /** Example input, used by the docs and the demo. */
  example: Static<I>;
}

export interface RegisteredOperation extends OperationDefinition {
  validateInput(input: unknown): InputError[];
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

/** Compiles an operation's schemas once; its validator reports JSON pointers under `/input`. */
export function registerOperation(definition: OperationDefinition): RegisteredOperation {
  const validate: ValidateFunction = ajv.compile(definition.input);
  return {
    ...definition,
    validateInput(input: unknown): InputError[] {
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
    },
  };
}
