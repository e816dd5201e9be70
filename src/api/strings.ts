import type { FieldError } from './problems';

/**
 * Which strings Onceflow accepts, decided once, at the edge: any Unicode text
 * except U+0000 (NUL) and lone surrogates. PostgreSQL stores neither (text
 * refuses NUL, jsonb refuses both escapes, and a lone surrogate would become
 * U+FFFD on the way to UTF-8), so a request carrying one is refused before it
 * reaches the database, naming the field, instead of failing there as a 500.
 */
const UNACCEPTED = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The rule as a JSON Schema pattern, for schemas and the document: no NUL.
 * Lone surrogates are not Unicode characters at all (RFC 8259 section 8.2
 * leaves them to the receiver), so a pattern cannot name them portably: most
 * validators, those of generated clients included, cannot even hold one. The
 * document says so in words (openapi.ts) and the edge refuses them.
 */
export const ACCEPTED_STRING_PATTERN = '^[^\\u0000]*$';

/** The rule in words, for the document. */
export const STRING_RULE =
  'Strings are any Unicode text except U+0000 (NUL): the schemas state it as a pattern. A lone surrogate (a \\ud800-\\udfff escape without its pair) is not Unicode text and is refused too. Either is a 400 naming the field.';

/** Why a string is not accepted, or undefined when it is. */
export function whyUnaccepted(value: string): string | undefined {
  const found = UNACCEPTED.exec(value);
  if (!found) return undefined;
  return found[0] === '\u0000' ? 'contains U+0000 (NUL), which Onceflow does not accept' : 'contains a lone surrogate (not a Unicode character), which Onceflow does not accept';
}

/** A JSON pointer's reference token (RFC 6901). */
export const pointerToken = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Every string in a parsed JSON value (object keys included, at any depth)
 * that Onceflow does not accept, as field errors with JSON pointers under `at`.
 */
export function unacceptedStrings(value: unknown, at = ''): FieldError[] {
  const errors: FieldError[] = [];
  visit(value, at, errors);
  return errors;
}

function visit(node: unknown, pointer: string, errors: FieldError[]): void {
  if (typeof node === 'string') {
    const why = whyUnaccepted(node);
    if (why) errors.push({ pointer, detail: why });
  } else if (Array.isArray(node)) {
    for (let index = 0; index < node.length; index++) visit(node[index], `${pointer}/${index}`, errors);
  } else if (node !== null && typeof node === 'object') {
    for (const [key, item] of Object.entries(node)) {
      const child = `${pointer}/${pointerToken(key)}`;
      const why = whyUnaccepted(key);
      if (why) errors.push({ pointer: child, detail: `is a key that ${why}` });
      visit(item, child, errors);
    }
  }
}
