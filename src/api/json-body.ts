import type { FastifyInstance } from 'fastify';
import { ProblemError, ProblemType, type FieldError } from './problems';
import { pointerToken } from './strings';

/**
 * Keys that could poison an object's prototype if a later copy assigned them
 * (`Object.assign`, a merge): `__proto__` anywhere, and `constructor` holding
 * a `prototype`, the same rule as Fastify's own parser, refused the same way,
 * but named as what they are instead of "not valid JSON".
 */
function forbiddenKeys(node: unknown, pointer: string, errors: FieldError[]): void {
  if (Array.isArray(node)) {
    for (let index = 0; index < node.length; index++) forbiddenKeys(node[index], `${pointer}/${index}`, errors);
  } else if (node !== null && typeof node === 'object') {
    for (const [key, item] of Object.entries(node)) {
      const child = `${pointer}/${pointerToken(key)}`;
      if (key === '__proto__') errors.push({ pointer: child, detail: 'is a forbidden key (__proto__ could change the prototype of an object)' });
      else if (key === 'constructor' && item !== null && typeof item === 'object' && Object.hasOwn(item, 'prototype')) {
        errors.push({ pointer: child, detail: 'is a forbidden key (a constructor with a prototype could change the prototype of an object)' });
      }
      forbiddenKeys(item, child, errors);
    }
  }
}

/**
 * Bodies parsed from text without a `\u` escape. Such text can hold no string
 * the strings rule refuses: the body is decoded from UTF-8, which never
 * yields a lone surrogate, and JSON.parse refuses a raw NUL; so the edge
 * guard need not walk them (a replay's body is walked once, by the digest).
 */
const escapeFree = new WeakSet<object>();

/** Whether a parsed body is known to hold only strings Onceflow accepts (see escapeFree). */
export const isEscapeFreeBody = (value: unknown): boolean => value !== null && typeof value === 'object' && escapeFree.has(value);

/**
 * Parses a JSON body. JSON.parse defines `__proto__` as an own property and
 * never touches a prototype; forbidden keys are then refused before anything
 * else sees the value.
 * @throws ProblemError 400 malformed-json, or 400 validation naming each forbidden key.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new ProblemError(400, ProblemType.malformedJson, 'Malformed JSON', 'the body is empty; send a JSON value or no Content-Type');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ProblemError(400, ProblemType.malformedJson, 'Malformed JSON', `the body is not valid JSON: ${(err as Error).message}`);
  }
  const plain = !text.includes('\\u');
  // A forbidden key is spelled out in the text, or hidden behind an escape.
  if (!plain || text.includes('__proto__') || text.includes('constructor')) {
    const errors: FieldError[] = [];
    forbiddenKeys(value, '', errors);
    if (errors.length > 0) {
      throw new ProblemError(400, ProblemType.validation, 'Forbidden key', `the body is not accepted: ${errors.map((e) => `${e.pointer} ${e.detail}`).join('; ')}`, { errors });
    }
  }
  if (plain && value !== null && typeof value === 'object') escapeFree.add(value);
  return value;
}

/** Replaces Fastify's JSON parser with parseJsonBody (the body limit still applies). */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
