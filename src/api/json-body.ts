import type { FastifyInstance } from 'fastify';
import { ProblemError, ProblemType, type FieldError } from './problems';
import { pointerToken } from './strings';

/**
 * Keys that could poison an object's prototype if a later copy assigned them
 * (`Object.assign`, a merge): `__proto__` anywhere, and `constructor` holding
 * a `prototype`, the same rule as Fastify's own parser, refused the same way,
 * but named as what they are instead of "not valid JSON".
 */
function forbiddenKeys(value: unknown, at = ''): FieldError[] {
  const errors: FieldError[] = [];
  const visit = (node: unknown, pointer: string): void => {
    if (Array.isArray(node)) {
      node.forEach((item, index) => visit(item, `${pointer}/${index}`));
    } else if (node !== null && typeof node === 'object') {
      for (const [key, item] of Object.entries(node)) {
        const child = `${pointer}/${pointerToken(key)}`;
        if (key === '__proto__') errors.push({ pointer: child, detail: 'is a forbidden key (__proto__ could change the prototype of an object)' });
        else if (key === 'constructor' && item !== null && typeof item === 'object' && Object.hasOwn(item, 'prototype')) {
          errors.push({ pointer: child, detail: 'is a forbidden key (a constructor with a prototype could change the prototype of an object)' });
        }
        visit(item, child);
      }
    }
  };
  visit(value, at);
  return errors;
}

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
  const errors = forbiddenKeys(value);
  if (errors.length > 0) {
    throw new ProblemError(400, ProblemType.validation, 'Forbidden key', `the body is not accepted: ${errors.map((e) => `${e.pointer} ${e.detail}`).join('; ')}`, { errors });
  }
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
