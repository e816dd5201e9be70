import type { InputVersion, RegisteredOperation } from '../operations/operation';
import type { OperationRegistry } from '../operations/registry';
import { ResponseHeaders } from './schemas';
import { ACCEPTED_STRING_PATTERN } from './strings';

/**
 * The OpenAPI document is the contract. Routes declare their own schemas,
 * success responses and the error statuses they answer; this module says
 * what each error status means, and finishes the document where a route
 * cannot: the submit body as one branch per registered operation (from each
 * operation's own input schema), links between operations, and /docs.
 */

type Json = Record<string, any>;

/** What each error status means, on any route that answers it, and the headers it carries. */
const PROBLEM_STATUSES: Record<number, { description: string; headers?: Record<string, object> }> = {
  400: {
    description:
      'The request is not valid: malformed JSON, a field that breaks its schema (errors names each), a string with NUL or a lone surrogate, a forbidden key (__proto__), a missing or malformed Idempotency-Key, an invalid Prefer: wait, a header sent twice, a path that is not valid percent-encoding, or a query of GET /v1/jobs that mixes finding by key with listing, lists without status, or carries a cursor this API did not give out',
  },
  401: { description: 'Missing or wrong API key', headers: { 'WWW-Authenticate': ResponseHeaders.wwwAuthenticate } },
  403: { description: 'The key may not do this: operator-only routes (listing jobs included) for a tenant key, submitting a job with an operator key' },
  404: { description: "No such job (or another principal's: tenants are walls), attempt, effect, route step, operation or route version" },
  408: { description: 'The request (headers and body) did not arrive within the request timeout' },
  409: { description: 'Conflict with the current state (see the problem type)' },
  413: { description: 'The body is over the body limit' },
  414: { description: 'A path parameter is longer than 100 characters' },
  415: { description: 'The body is not application/json' },
  429: { description: 'Too many requests for this principal, or too many failed authentications from this address', headers: { 'Retry-After': ResponseHeaders.retryAfter } },
  500: { description: 'An unexpected failure; nothing says a retry would go differently' },
  503: { description: 'A dependency is unavailable, or this instance is shutting down: retrying later is safe', headers: { 'Retry-After': ResponseHeaders.retryAfterIfAny } },
};

/** Statuses every documented route can answer, whatever it does. */
export const ALWAYS_POSSIBLE = [500, 503];

/** The response object of an error status: problem+json, with its meaning and headers. */
export function problemResponse(status: number, problemRef = 'Problem#'): Json {
  const meaning = PROBLEM_STATUSES[status];
  if (!meaning) throw new Error(`no meaning documented for status ${status}`);
  return {
    description: meaning.description,
    ...(meaning.headers ? { headers: meaning.headers } : {}),
    content: { 'application/problem+json': { schema: { $ref: problemRef } } },
  };
}

/**
 * A JSON schema with the string rule stated everywhere a client writes a
 * string: a pattern on strings and on the names of open objects' properties.
 */
export function withAcceptedStrings(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withAcceptedStrings);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    // Values, not subschemas: leave them as they are.
    out[key] = ['const', 'enum', 'examples', 'default', 'example'].includes(key) ? value : key === 'properties' || key === 'patternProperties' || key === '$defs' ? mapValues(value, withAcceptedStrings) : withAcceptedStrings(value);
  }
  if (out.type === 'string' && out.const === undefined && out.enum === undefined && out.format === undefined) {
    if (out.pattern === undefined) out.pattern = ACCEPTED_STRING_PATTERN;
    else out.allOf = [...(out.allOf ?? []), { pattern: ACCEPTED_STRING_PATTERN }];
  }
  if (out.type === 'object' && out.additionalProperties !== false && out.propertyNames === undefined) out.propertyNames = { pattern: ACCEPTED_STRING_PATTERN };
  return out;
}

/** A route's response as the document writes it: each header as {description, schema, required}. */
function asDocumented(response: Json): Json {
  if (!response.headers) return response;
  const headers = mapValues(response.headers, (header) => {
    const { description, 'x-required': required, ...schema } = header as Json;
    return { description, schema, ...(required ? { required: true } : {}) };
  });
  return { ...response, headers };
}

const mapValues = (object: Json, fn: (value: unknown) => unknown): Json => Object.fromEntries(Object.entries(object).map(([key, value]) => [key, fn(value)]));

/**
 * The submit body of one input version. The newest may leave schemaVersion
 * out; an older one must name it, so no body fits two versions.
 */
function submitBranch(operation: RegisteredOperation, version: InputVersion, newest: boolean): Json {
  return {
    type: 'object',
    title: newest ? operation.name : `${operation.name} v${version.schemaVersion}`,
    description: `${operation.description} (schema version ${version.schemaVersion}${newest ? ', the newest' : ''})`,
    required: newest ? ['operation', 'input'] : ['operation', 'schemaVersion', 'input'],
    additionalProperties: false,
    properties: {
      operation: { type: 'string', const: operation.name },
      schemaVersion: { type: 'integer', const: version.schemaVersion, description: newest ? 'optional: the newest version is the default' : 'required: this is not the newest version' },
      input: withAcceptedStrings(JSON.parse(JSON.stringify(version.input))),
    },
    examples: [{ operation: operation.name, ...(newest ? {} : { schemaVersion: version.schemaVersion }), input: version.example }],
  };
}

/** The component name of an operation's submit body. */
const submitComponent = (operation: string): string => `SubmitJob.${operation}`;

/** Links a client (or a fuzzer) follows from a submitted job to reading and cancelling it. */
const JOB_LINKS = {
  GetJobById: { operationId: 'getJob', parameters: { id: '$response.body#/id' }, description: 'the job, by its id' },
  FindJobByKey: {
    operationId: 'findJob',
    parameters: { operation: '$response.body#/operation', idempotencyKey: '$response.body#/idempotencyKey' },
    description: 'the same job, by its scope',
  },
  CancelJob: { operationId: 'cancelJob', parameters: { id: '$response.body#/id' }, description: 'cancel the job while it is not terminal' },
};

/**
 * Finishes the generated document (@fastify/swagger's transformObject).
 * Pure: returns a new document.
 */
export function finishDocument(generated: Json, operations: OperationRegistry): Json {
  const document: Json = structuredClone(generated);
  document.tags = [
    { name: 'jobs', description: 'Submit intents and read the jobs they became' },
    { name: 'operators', description: 'Operator keys only: settle what Onceflow cannot decide alone, and watch providers' },
    { name: 'service', description: 'Health, readiness, metrics and this document; no authentication' },
  ];

  // The submit body: one branch per operation, discriminated by `operation`;
  // an operation with several input versions branches again by `schemaVersion`.
  document.components.schemas ??= {};
  const mapping: Record<string, string> = {};
  for (const operation of operations.values()) {
    const name = submitComponent(operation.name);
    mapping[operation.name] = `#/components/schemas/${name}`;
    const newestFirst = [...operation.versions].reverse();
    if (newestFirst.length === 1) {
      document.components.schemas[name] = submitBranch(operation, newestFirst[0]!, true);
      continue;
    }
    for (const version of newestFirst) document.components.schemas[`${name}.v${version.schemaVersion}`] = submitBranch(operation, version, version.schemaVersion === operation.schemaVersion);
    document.components.schemas[name] = {
      title: operation.name,
      description: `${operation.description} (schema versions ${operation.versions.map((version) => version.schemaVersion).join(', ')}; without schemaVersion, the newest)`,
      oneOf: newestFirst.map((version) => ({ $ref: `#/components/schemas/${name}.v${version.schemaVersion}` })),
    };
  }
  const submit = document.paths['/v1/jobs'].post;
  submit.requestBody.content['application/json'].schema = {
    oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'operation', mapping },
  };
  for (const status of ['200', '202']) submit.responses[status].links = JOB_LINKS;

  for (const path of Object.values<Json>(document.paths)) {
    for (const operation of Object.values<Json>(path)) {
      // A body that may be null may also be left out.
      const body = operation.requestBody?.content?.['application/json']?.schema;
      if (body?.anyOf?.some((branch: Json) => branch.type === 'null')) operation.requestBody.required = false;
      for (const response of Object.values<Json>(operation.responses ?? {})) {
        for (const header of Object.values<Json>(response.headers ?? {})) {
          if (header.schema?.['x-required']) {
            header.required = true;
            delete header.schema['x-required'];
          }
        }
      }
    }
  }

  // Swagger UI's own routes are not in the document; its page is.
  document.paths['/docs'] = {
    get: {
      operationId: 'docs',
      summary: 'This document, rendered (Swagger UI)',
      tags: ['service'],
      security: [],
      responses: {
        200: { description: 'an HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
        ...Object.fromEntries(ALWAYS_POSSIBLE.map((status) => [String(status), asDocumented(problemResponse(status, '#/components/schemas/Problem'))])),
      },
    },
  };
  return document;
}
