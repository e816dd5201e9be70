import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ProblemError, ProblemType } from './problems';
import { unacceptedStrings } from './strings';

/**
 * Refuses strings Onceflow does not accept (strings.ts) in the path, the
 * query and the body, before schema validation and before any handler, so no
 * route can carry one to the database.
 * @throws ProblemError 400 naming each field.
 */
export function refuseUnacceptedStrings(request: FastifyRequest): void {
  const parts: Array<[string, unknown]> = [
    ['path', request.params],
    ['querystring', request.query],
    ['body', request.body],
  ];
  for (const [where, value] of parts) {
    const errors = unacceptedStrings(value);
    if (errors.length > 0) {
      throw new ProblemError(400, ProblemType.validation, 'Invalid request', `the ${where} is not valid: ${errors.map((e) => `${e.pointer || '/'} ${e.detail}`).join('; ')}`, { errors });
    }
  }
}

/** Installs the edge guards on every route of the app. */
export function installEdgeGuards(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => refuseUnacceptedStrings(request));
}

/**
 * Refuses a header that must appear once but was sent more than once (Node
 * joins some repeats into "A, B" and keeps only the first of others, so the
 * raw headers are counted).
 * @throws ProblemError 400 duplicate-header.
 */
export function refuseDuplicateHeader(request: FastifyRequest, name: string): void {
  const raw = request.raw.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === name.toLowerCase()) count++;
  if (count > 1) {
    throw new ProblemError(400, ProblemType.duplicateHeader, 'Duplicate header', `send exactly one ${name} header; this request had ${count}`);
  }
}
