import canonicalize from 'canonicalize';
import type { DeclaredCheck, DeclaredResult } from './define';

/** The value at a JSON pointer, or undefined when the path is not there. */
export function valueAt(document: unknown, pointer: string): unknown {
  let value: unknown = document;
  for (const token of pointerTokens(pointer)) {
    if (value === null || typeof value !== 'object' || !Object.prototype.hasOwnProperty.call(value, token)) return undefined;
    value = (value as Record<string, unknown>)[token];
  }
  return value;
}

/** The reference tokens of a JSON pointer (RFC 6901), unescaped. */
export function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer.slice(1).split('/').map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** One reference token, escaped for a JSON pointer. */
export const escapeToken = (token: string | number): string => String(token).replace(/~/g, '~0').replace(/\//g, '~1');

const length = (value: unknown): number | undefined => (typeof value === 'string' ? [...value].length : Array.isArray(value) ? value.length : undefined);

/**
 * The business checks of a declaration as one function, in declared order.
 * A rule other than nonBlank passes a field that is absent (the output
 * contract says what is required).
 * @throws SyntaxError when a forbid pattern is not a regular expression (the loader reports it first).
 */
export function compileChecks(checks: readonly DeclaredCheck[]): (output: unknown) => string[] {
  const rules = checks.map((check): ((output: unknown) => boolean) => {
    if ('nonBlank' in check) return (output) => {
      const value = valueAt(output, check.field);
      return typeof value === 'string' && value.trim() !== '';
    };
    if ('forbid' in check) {
      const pattern = new RegExp(check.forbid);
      return (output) => {
        const value = valueAt(output, check.field);
        return typeof value !== 'string' || !pattern.test(value);
      };
    }
    if ('enum' in check) {
      const allowed = new Set(check.enum.map((value) => canonicalize(value)));
      return (output) => {
        const value = valueAt(output, check.field);
        return value === undefined || allowed.has(canonicalize(value));
      };
    }
    const { min = 0, max = Infinity } = check.length;
    return (output) => {
      const size = length(valueAt(output, check.field));
      return size === undefined || (size >= min && size <= max);
    };
  });
  return (output) => checks.filter((_check, index) => !rules[index]!(output)).map((check) => check.message);
}

/** A declared result as a finalize function: the output's fields (unless output: false), then the receipt fields. */
export function compileResult(result: DeclaredResult): (output: unknown, receipts: Record<string, Record<string, unknown>>) => unknown {
  const fields = Object.entries(result.fields ?? {});
  return (output, receipts) => {
    const built: Record<string, unknown> = result.output === false ? {} : { ...(output as Record<string, unknown>) };
    for (const [name, from] of fields) {
      const value = receipts[from.effect]?.[from.field];
      if (value !== undefined) built[name] = value;
    }
    return built;
  };
}
