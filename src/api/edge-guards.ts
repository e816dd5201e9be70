import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ProblemError, ProblemType } from './problems';
import { isEscapeFreeBody } from './json-body';
import { unacceptedStrings } from './strings';

/**
 * Refuses strings Onceflow does not accept (strings.ts) in the path, the
 * query and the body, before schema validation and before any handler, so no
 * route can carry one to the database.
 * @throws ProblemError 400 naming each field.
 */
export function refuseUnacceptedStrings(request: FastifyRequest): void {
  refuseIn('path', request.params);
  refuseIn('querystring', request.query);
  if (!isEscapeFreeBody(request.body)) refuseIn('body', request.body);
}

function refuseIn(where: string, value: unknown): void {
  const errors = unacceptedStrings(value);
  if (errors.length > 0) {
    throw new ProblemError(400, ProblemType.validation, 'Invalid request', `the ${where} is not valid: ${errors.map((e) => `${e.pointer || '/'} ${e.detail}`).join('; ')}`, { errors });
  }
}

/** Installs the edge guards on every route of the app (a plain hook: no promise per request). */
export function installEdgeGuards(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      refuseUnacceptedStrings(request);
    } catch (err) {
      return done(err as Error);
    }
    done();
  });
}

/**
 * Refuses a header that must appear once but was sent more than once (Node
 * joins some repeats into "A, B" and keeps only the first of others, so the
 * raw headers are counted).
 * @throws ProblemError 400 duplicate-header.
 */
export function refuseDuplicateHeader(request: FastifyRequest, name: string): void {
  const raw = request.raw.rawHeaders;
  const lower = name.toLowerCase();
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === lower.length && raw[i]!.toLowerCase() === lower) count++;
  if (count > 1) {
    throw new ProblemError(400, ProblemType.duplicateHeader, 'Duplicate header', `send exactly one ${name} header; this request had ${count}`);
  }
}
