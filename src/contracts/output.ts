import Ajv, { type ValidateFunction } from 'ajv';
import type { OperationDefinition } from '../operations/operation';

/** How much of an offending output is kept as evidence. */
export const EVIDENCE_LIMIT_BYTES = 2_048;

export type ContractCheck =
  | { ok: true; output: unknown }
  | { ok: false; violations: string[]; excerpt: string };

const ajv = new Ajv({ allErrors: true, strict: true });
const compiled = new WeakMap<object, ValidateFunction>();

function validatorFor(operation: Pick<OperationDefinition, 'output'>): ValidateFunction {
  let validate = compiled.get(operation.output);
  if (!validate) {
    validate = ajv.compile(operation.output);
    compiled.set(operation.output, validate);
  }
  return validate;
}

/** Compiles these operations' output contracts now, so the first answer checked costs what the hundredth does. */
export function compileContracts(operations: Iterable<Pick<OperationDefinition, 'output'>>): void {
  for (const operation of operations) validatorFor(operation);
}

/** The start of a text, cut to a byte limit without splitting a character. */
export function excerpt(text: string, limitBytes = EVIDENCE_LIMIT_BYTES): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limitBytes) return text;
  return `${bytes.subarray(0, limitBytes).toString('utf8').replace(/\uFFFD$/, '')}…`;
}

/**
 * Runs a provider's answer through the operation's output contract: it must be
 * JSON, fit the strict schema (no extra keys), and pass the operation's
 * business checks — the rules the code consuming the result relies on.
 */
export function checkOutput(operation: Pick<OperationDefinition, 'output' | 'businessChecks' | 'alias'>, content: string): ContractCheck {
  // An alias answers text; with an output contract, that text must be JSON on contract. Either way its output is the text itself.
  if (operation.alias && !operation.alias.json) return { ok: true, output: { content } };
  if (operation.alias) {
    const checked = checkOutput({ output: operation.output, ...(operation.businessChecks ? { businessChecks: operation.businessChecks } : {}) }, content);
    return checked.ok ? { ok: true, output: { content } } : checked;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(content.trim());
  } catch {
    return { ok: false, violations: ['the output is not JSON'], excerpt: excerpt(content) };
  }
  const validate = validatorFor(operation);
  if (!validate(parsed)) {
    const violations = (validate.errors ?? []).map((error) => {
      const params = error.params as { additionalProperty?: string; missingProperty?: string };
      if (error.keyword === 'additionalProperties') return `unexpected key ${error.instancePath}/${params.additionalProperty}`;
      if (error.keyword === 'required') return `missing key ${error.instancePath}/${params.missingProperty}`;
      return `${error.instancePath || '/'} ${error.message}`;
    });
    return { ok: false, violations, excerpt: excerpt(content) };
  }
  const business = operation.businessChecks?.(parsed as never) ?? [];
  if (business.length > 0) return { ok: false, violations: business, excerpt: excerpt(content) };
  return { ok: true, output: parsed };
}
