import type { FastifyRequest } from 'fastify';
import { ProblemError, ProblemType } from '../api/problems';

/** The console's form bodies (application/x-www-form-urlencoded) and the fields its handlers read from them. */

export type Form = Record<string, string>;

/** A form body: each field's first value, on an object with no prototype. */
export function parseForm(text: string): Form {
  const form = Object.create(null) as Form;
  for (const [name, value] of new URLSearchParams(text)) if (!(name in form)) form[name] = value;
  return form;
}

/** The parsed form of a request, or an empty one when it had no body. */
export const formOf = (request: FastifyRequest): Form => (request.body && typeof request.body === 'object' ? (request.body as Form) : (Object.create(null) as Form));

/** A required text field, trimmed. @throws ProblemError 400 naming the field. */
export function requiredField(form: Form, name: string, maxLength: number): string {
  const value = typeof form[name] === 'string' ? form[name]!.trim() : '';
  if (value === '') throw invalidField(name, 'is required');
  if (value.length > maxLength) throw invalidField(name, `must be at most ${maxLength} characters`);
  return value;
}

/** A field that must be one of the values given. @throws ProblemError 400. */
export function choiceField<T extends string>(form: Form, name: string, choices: readonly T[]): T {
  const value = form[name];
  if (!choices.includes(value as T)) throw invalidField(name, `must be one of ${choices.join(', ')}`);
  return value as T;
}

export function invalidField(name: string, detail: string): ProblemError {
  return new ProblemError(400, ProblemType.validation, 'Invalid form', `${name} ${detail}`, { errors: [{ pointer: `/${name}`, detail }] });
}

/**
 * A receipt typed in the settle form: empty, or a JSON object of up to 32
 * names to strings, numbers, booleans or null (what the API's resolution
 * route accepts). @throws ProblemError 400.
 */
export function receiptField(form: Form): Record<string, unknown> | undefined {
  const text = (form.receipt ?? '').trim();
  if (text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidField('receipt', 'is not JSON: write an object such as {"messageId": "m-1"}');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidField('receipt', 'must be a JSON object');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 32) throw invalidField('receipt', 'has more than 32 names');
  for (const [name, item] of entries) {
    if (name === '' || name.length > 128 || name === '__proto__') throw invalidField('receipt', `has a name that is not accepted: ${JSON.stringify(name)}`);
    const scalar = item === null || typeof item === 'number' || typeof item === 'boolean' || (typeof item === 'string' && item.length <= 2000);
    if (!scalar) throw invalidField('receipt', `${name} must be a string (at most 2000 characters), a number, a boolean or null`);
  }
  return value as Record<string, unknown>;
}
