import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/errors';
import { ProblemError, ProblemType, type FieldError } from './problems';

/**
 * Every error the API answers, whatever raised it (a route, Fastify's router
 * or body parser, Node's HTTP parser), is problem+json (RFC 9457). A 5xx says
 * whether trying again can help: 503 with Retry-After when a dependency was
 * unavailable, 500 when nothing says a retry would go differently.
 */

function validationErrors(error: FastifyError): FieldError[] {
  return (error.validation ?? []).map((issue) => {
    const params = issue.params as { missingProperty?: string; additionalProperty?: string };
    const child = params.missingProperty ?? params.additionalProperty;
    const detail = issue.keyword === 'required' ? 'is required' : issue.keyword === 'additionalProperties' ? 'is not a known field' : issue.message ?? 'is not valid';
    return { pointer: `${issue.instancePath}${child ? `/${child}` : ''}`, detail };
  });
}

const unavailable = (): ProblemError =>
  new ProblemError(503, ProblemType.unavailable, 'Temporarily unavailable', 'a dependency of the service is unavailable; retrying later with the same Idempotency-Key is safe', {
    headers: { 'retry-after': '1' },
  });

/** Maps anything thrown while serving a request to the problem it answers; 5xx details stay in the log. */
export function toProblemError(error: FastifyError): ProblemError {
  if (error instanceof ProblemError) return error;
  if (error.validation) {
    const where = error.validationContext ?? 'body';
    const errors = validationErrors(error);
    return new ProblemError(400, ProblemType.validation, 'Invalid request', `the ${where} is not valid: ${errors.map((e) => `${e.pointer || '/'} ${e.detail}`).join('; ')}`, { errors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ProblemError(413, ProblemType.payloadTooLarge, 'Payload too large', error.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ProblemError(415, ProblemType.unsupportedMediaType, 'Unsupported media type', 'send the body as application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ProblemError(400, ProblemType.malformedJson, 'Malformed JSON', error.message);
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return new ProblemError(400, ProblemType.malformedJson, 'Malformed JSON', 'the body is not valid JSON');
  }
  if (error.statusCode === 429) return new ProblemError(429, ProblemType.rateLimited, 'Too many requests', error.message);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new ProblemError(error.statusCode, ProblemType.badRequest, STATUS_CODES[error.statusCode] ?? 'Bad request', error.message);
  }
  if (isDatabaseUnavailable(error)) return unavailable();
  return new ProblemError(500, ProblemType.internal, 'Internal error', 'the request failed on our side for a reason the service did not expect; it has been logged', {}, { cause: error });
}

/** Sends a problem as the reply. */
export function sendProblem(reply: FastifyReply, problem: ProblemError): FastifyReply {
  for (const [name, value] of Object.entries(problem.extras.headers ?? {})) reply.header(name, value);
  return reply.status(problem.status).type('application/problem+json').send(problem.toProblem());
}

/**
 * Fastify's router errors, raised before any route runs (Fastify's
 * `frameworkErrors` option): a path that is not valid percent-encoding (400)
 * and a path parameter over the length limit (414).
 */
export function frameworkProblem(error: FastifyError, maxParamLength: number): ProblemError {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return new ProblemError(400, ProblemType.badUrl, 'Bad URL', 'the path is not valid percent-encoded UTF-8');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ProblemError(414, ProblemType.uriTooLong, 'URI too long', `a path parameter is longer than ${maxParamLength} characters`);
    default:
      return new ProblemError(500, ProblemType.internal, 'Internal error', 'the request failed on our side for a reason the service did not expect; it has been logged', {}, { cause: error });
  }
}

/** The problem for an error Node's HTTP parser raised on a connection (Fastify's `clientErrorHandler`). */
export function clientErrorProblem(error: NodeJS.ErrnoException): ProblemError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ProblemError(408, ProblemType.requestTimeout, 'Request timeout', 'the request (headers and body) did not arrive in time');
    case 'HPE_HEADER_OVERFLOW':
      return new ProblemError(431, ProblemType.headersTooLarge, 'Request header fields too large', 'the request headers are over the size limit');
    case 'HPE_INVALID_METHOD':
      return new ProblemError(501, ProblemType.notImplemented, 'Not implemented', 'the request method is not one this server knows');
    default:
      return new ProblemError(400, ProblemType.badRequest, 'Bad request', 'the request is not valid HTTP/1.1');
  }
}

/**
 * Answers a connection-level error with problem+json where a response is
 * still possible (no response started on the socket), then closes it.
 */
export function handleClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection is gone: there is no one to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const problem = clientErrorProblem(error);
  this.log.debug({ err: error }, 'client error');
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const body = JSON.stringify(problem.toProblem());
    socket.write(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n` +
        'Content-Type: application/problem+json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(error);
}

/**
 * Registers problem+json error handling on the app. `answerFirst` may answer
 * instead (a request with no route is a 404 or 405, whatever its body).
 */
export function installErrorHandler(
  app: FastifyInstance,
  onProblem: (problem: ProblemError, request: FastifyRequest, error: unknown) => void,
  answerFirst: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined,
): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const answered = answerFirst(request, reply);
    if (answered) return answered;
    const problem = toProblemError(error);
    onProblem(problem, request, error);
    return sendProblem(reply, problem);
  });
}
