import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { HttpEffectDeclaration } from './http-declaration';
import { createRedactor, resolveEnv } from './http-env';
import { downstreamFetch } from './downstream-fetch';
import { classifyTransportFailure, defaultFailureKind, statusFailure, type FailureResult } from './http-outcome';
import { statusLists } from './http-statuses';
import { compileUrlTemplate, renderTemplate, TemplateValueError, unknownPlaceholders, type UrlTemplate } from './http-template';
import { isJsonPointer, readJsonPointer } from './json-pointer';
import { EFFECT_NAME_MAX_LENGTH, EFFECT_NAME_PATTERN, type EffectAdapter, type EffectContext, type LookupResult, type PerformResult, type VerifiableEffect } from './types';

/** A declared effect cannot be built: the message names the effect and the problem, never a secret's value. */
export class HttpEffectDeclarationError extends Error {
  override name = 'HttpEffectDeclarationError';
  constructor(
    readonly effect: string,
    problem: string,
  ) {
    super(`effect ${effect}: ${problem}`);
  }
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** Scalars only: a receipt is one level of names to strings, numbers, booleans or null. */
type Receipt = Record<string, string | number | boolean | null>;

/**
 * An effect adapter for a downstream declared in the operations file: one
 * HTTP call a try, with the job's idempotency key in a header, its answer
 * classified by the declared status lists (over the defaults of
 * http-outcome.ts), its receipt read by JSON pointers, and a receipt lookup
 * by key when one is declared. `${ENV}` parts of the URLs and headers are
 * read here, once; their values are masked in every detail and error.
 *
 * Body placeholders are checked at creation against what a job has (input,
 * output, job.id, job.operation, key); a path into the input or output that
 * a job turns out not to have is found at perform time, and the try is
 * rejected without sending anything.
 *
 * @throws HttpEffectDeclarationError when the declaration is unusable: an unset
 * variable, a URL or header that is not valid, an unknown placeholder, a status
 * entry that is no code or range or stands in two lists, a pointer that is not
 * a JSON pointer.
 */
export function createHttpEffect(declaration: HttpEffectDeclaration, env: NodeJS.ProcessEnv = process.env, sendTo?: { origin: string; headers: Record<string, string> }): EffectAdapter {
  const name = String(declaration.name);
  const invalid = (problem: string) => new HttpEffectDeclarationError(name, problem);
  if (name.length > EFFECT_NAME_MAX_LENGTH || !new RegExp(EFFECT_NAME_PATTERN).test(name)) {
    throw invalid('the name must be lowercase words joined by dots, dashes or underscores (e.g. ticket.comment)');
  }
  if (typeof declaration.deduplicates !== 'boolean') throw invalid('deduplicates must be true or false');
  const secrets: string[] = [];
  const fromEnv = (text: string): string => {
    const resolved = resolveEnv(text, env, (variable) => invalid(`the environment variable ${variable} is not set`));
    secrets.push(...resolved.values);
    return resolved.text;
  };

  const method = declaration.method ?? 'POST';
  if (!['POST', 'PUT', 'PATCH'].includes(method)) throw invalid(`method ${String(method)} is not POST, PUT or PATCH`);
  // The URL may name the job's values in its path and query (`/tickets/{{input.ticketId}}/comments`), URL-encoded when sent.
  const url = checkedUrl(fromEnv(declaration.url), 'the URL', invalid);
  const headers = { ...checkedHeaders(declaration.headers ?? {}, fromEnv, invalid), ...sendTo?.headers };
  const idempotencyHeader = declaration.idempotencyHeader ?? DEFAULT_IDEMPOTENCY_HEADER;
  checkedHeaders({ [idempotencyHeader]: 'key' }, (text) => text, invalid);
  const timeoutMs = declaration.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw invalid('timeoutMs must be a whole number of milliseconds above 0');

  // Without a declared body, the webhook's: who asks, and what the AI step answered.
  const bodyTemplate = declaration.body === undefined ? { jobId: '{{job.id}}', operation: '{{job.operation}}', output: '{{output}}' } : declaration.body;
  const unknown = unknownPlaceholders(bodyTemplate);
  if (unknown.length) throw invalid(`the body names ${unknown.map((path) => `{{${path}}}`).join(', ')}; placeholders may name input, output, job.id, job.operation and key`);
  const declaredKindOf = statusLists(declaration.statuses ?? {}, invalid);
  const statusKindOf = (status: number): PerformResult['kind'] => {
    const declared = declaredKindOf(status);
    if (declared !== undefined) return declared === 'notPerformed' ? 'not_performed' : declared;
    return status >= 200 && status <= 299 ? 'done' : defaultFailureKind(status);
  };
  const receiptPointers = checkedPointers(declaration.receipt, 'receipt', invalid);

  const lookup = declaration.lookup ? checkedLookup(declaration.lookup, receiptPointers, fromEnv, invalid) : undefined;
  const redact = createRedactor(secrets);
  const masked = (result: FailureResult): FailureResult => ({ ...result, detail: redact(result.detail) });
  const signalFor = (context: EffectContext): AbortSignal => AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(context.signal ? [context.signal] : [])]);

  /** A rendered URL, sent to the drills' origin instead when this adapter is a drill's (verify.url, the fault proxy). */
  const rebased = (rendered: string): string => {
    if (!sendTo) return rendered;
    const moved = new URL(rendered);
    const to = new URL(sendTo.origin);
    moved.protocol = to.protocol;
    moved.host = to.host;
    return moved.toString();
  };

  async function perform(context: EffectContext): Promise<PerformResult> {
    let body: string;
    let target: string;
    try {
      target = rebased(url.render(context));
    } catch (err) {
      if (!(err instanceof TemplateValueError)) throw err;
      // Nothing was sent: a definite no, with what was missing.
      return { kind: 'rejected', class: 'url_template', detail: redact(`the URL could not be built: ${err.message}`) };
    }
    try {
      body = JSON.stringify(renderTemplate(bodyTemplate, context));
    } catch (err) {
      if (!(err instanceof TemplateValueError)) throw err;
      return { kind: 'rejected', class: 'body_template', detail: `the body could not be built: ${err.message}` };
    }
    const requestHeaders = new Headers(headers);
    if (!requestHeaders.has('content-type')) requestHeaders.set('content-type', 'application/json');
    requestHeaders.set(idempotencyHeader, context.key);
    let response: Response;
    try {
      response = await downstreamFetch(target, { method, headers: requestHeaders, body, signal: signalFor(context) });
    } catch (err) {
      return masked(classifyTransportFailure(err));
    }
    const kind = statusKindOf(response.status);
    if (kind !== 'done') {
      await response.body?.cancel();
      return masked(statusFailure(kind, response.status, response.headers.get('retry-after')));
    }
    if (!receiptPointers) {
      await response.body?.cancel();
      return { kind: 'done', receipt: { status: response.status } };
    }
    // The downstream said it acted: from here on, a receipt that cannot be read leaves the effect ambiguous, never failed.
    const answer = await readJson(response);
    if (answer.kind === 'cut') return { kind: 'ambiguous', class: 'connection_lost', detail: redact(`the answer was cut: ${answer.detail}`) };
    const receipt = answer.kind === 'json' ? pickReceipt(answer.value, receiptPointers) : 'the answer is not JSON';
    if (typeof receipt === 'string') return { kind: 'ambiguous', class: 'bad_receipt', detail: `answered ${response.status}, but ${receipt}` };
    return { kind: 'done', receipt };
  }

  /** @throws Error when nothing can be concluded: the downstream could not be asked, or answered outside the found and notFound lists. */
  async function lookupReceipt(declared: CheckedLookup, key: string, context: EffectContext): Promise<LookupResult> {
    const fail = (problem: string) => new Error(redact(`effect ${name}: receipt lookup ${problem}`));
    let target: string;
    try {
      target = rebased(declared.url.render({ ...context, key }));
    } catch (err) {
      if (err instanceof TemplateValueError) throw fail(`URL could not be built: ${err.message}`);
      throw err;
    }
    let response: Response;
    try {
      response = await downstreamFetch(target, { method: declared.method, headers, signal: signalFor(context) });
    } catch (err) {
      throw fail(`failed: ${classifyTransportFailure(err).detail}`);
    }
    const kind = declared.statusOf(response.status);
    if (kind !== 'found') {
      await response.body?.cancel();
      if (kind === 'notFound') return { found: false };
      throw fail(`answered ${response.status}`);
    }
    if (!declared.receipt) {
      await response.body?.cancel();
      return { found: true, receipt: { status: response.status } };
    }
    const answer = await readJson(response);
    if (answer.kind === 'cut') throw fail(`answer was cut: ${answer.detail}`);
    const receipt = answer.kind === 'json' ? pickReceipt(answer.value, declared.receipt) : 'the answer is not JSON';
    if (typeof receipt === 'string') throw fail(`answered ${response.status}, but ${receipt}`);
    return { found: true, receipt };
  }

  const drill = checkedVerify(declaration.verify, fromEnv, invalid);
  const verifiable: VerifiableEffect = {
    declarationDigest: declarationDigest(declaration),
    host: new URL(url.origin).host,
    drillOrigin: drill.origin ?? url.origin,
    probes: drill.probes,
    ...(drill.malformed ? { malformed: drill.malformed } : {}),
    via: (origin) => createHttpEffect(declaration, env, { origin, headers: drill.headers }),
  };
  return {
    name,
    repeatSafe: declaration.deduplicates,
    perform,
    ...(lookup ? { lookup: (key: string, context: EffectContext) => lookupReceipt(lookup, key, context) } : {}),
    // A claim to check: a lookup, or deduplication.
    ...(lookup || declaration.deduplicates ? { verifiable } : {}),
  };
}

/** The declaration's digest: what a verification holds for (its timeout changes nothing a drill shows). */
export function declarationDigest(declaration: HttpEffectDeclaration): string {
  const { timeoutMs: _timeoutMs, ...claims } = declaration;
  return createHash('sha256').update(canonicalize(claims) ?? '').digest('hex');
}

/** The declaration's `verify:` block, checked: its target's origin, headers and probes. */
function checkedVerify(verify: HttpEffectDeclaration['verify'], fromEnv: (text: string) => string, invalid: (problem: string) => Error) {
  const headers = checkedHeaders(verify?.headers ?? {}, fromEnv, invalid);
  let origin: string | undefined;
  if (verify?.url !== undefined) {
    try {
      const parsed = new URL(fromEnv(verify.url));
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError('not http(s)');
      origin = parsed.origin;
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      throw invalid('verify.url is not an absolute http or https URL');
    }
  }
  const probes = (verify?.probes ?? []).map((probe) => ({ name: String(probe.name), input: probe.input ?? {}, output: probe.output ?? {} }));
  const malformed = verify?.malformed ? { name: 'malformed', input: verify.malformed.input ?? {}, output: verify.malformed.output ?? {} } : undefined;
  return { headers, origin, probes, malformed };
}

interface CheckedLookup {
  url: UrlTemplate;
  method: 'GET' | 'POST';
  statusOf(status: number): 'found' | 'notFound' | undefined;
  /** The lookup's own pointers, else the perform's. */
  receipt?: Record<string, string>;
}

function checkedLookup(
  lookup: NonNullable<HttpEffectDeclaration['lookup']>,
  performReceipt: Record<string, string> | undefined,
  fromEnv: (text: string) => string,
  invalid: (problem: string) => Error,
): CheckedLookup {
  const url = checkedUrl(fromEnv(lookup.url), 'the lookup URL', invalid);
  const method = lookup.method ?? 'GET';
  if (method !== 'GET' && method !== 'POST') throw invalid(`lookup method ${String(method)} is not GET or POST`);
  const statusOf = statusLists({ found: lookup.found ?? ['2xx'], notFound: lookup.notFound ?? ['404'] }, invalid, 'lookup');
  const receipt = checkedPointers(lookup.receipt, 'lookup.receipt', invalid) ?? performReceipt;
  return { url, method, statusOf, ...(receipt ? { receipt } : {}) };
}

/**
 * A URL template, checked without its value in the message (it may hold a
 * secret): placeholders that name what a job has, and only where they cannot
 * move the request to another host.
 */
function checkedUrl(url: string, what: string, invalid: (problem: string) => Error): UrlTemplate {
  const unknown = unknownPlaceholders(url);
  if (unknown.length) throw invalid(`${what} names ${unknown.map((path) => `{{${path}}}`).join(', ')}; placeholders may name input, output, job.id, job.operation and key`);
  return compileUrlTemplate(url, what, invalid);
}

/** Header names and values are checked as fetch would, without the value in the message. */
function checkedHeaders(declared: Record<string, string>, fromEnv: (text: string) => string, invalid: (problem: string) => Error): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [header, value] of Object.entries(declared)) {
    headers[header] = fromEnv(String(value));
    try {
      new Headers([[header, headers[header]!]]);
    } catch {
      throw invalid(`header ${header} has a name or value that HTTP does not allow`);
    }
  }
  return headers;
}

function checkedPointers(pointers: Record<string, string> | undefined, what: string, invalid: (problem: string) => Error): Record<string, string> | undefined {
  if (pointers === undefined) return undefined;
  for (const [field, pointer] of Object.entries(pointers)) {
    if (typeof pointer !== 'string' || !isJsonPointer(pointer)) throw invalid(`${what}.${field} is not a JSON pointer (e.g. /id)`);
  }
  return pointers;
}

type ReadAnswer = { kind: 'json'; value: unknown } | { kind: 'not_json' } | { kind: 'cut'; detail: string };

async function readJson(response: Response): Promise<ReadAnswer> {
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    return { kind: 'cut', detail: classifyTransportFailure(err).detail };
  }
  try {
    return { kind: 'json', value: JSON.parse(text) as unknown };
  } catch {
    return { kind: 'not_json' };
  }
}

/** The receipt the pointers name, or what is wrong with the answer. */
function pickReceipt(answer: unknown, pointers: Record<string, string>): Receipt | string {
  const receipt: Receipt = {};
  for (const [field, pointer] of Object.entries(pointers)) {
    const value = readJsonPointer(answer, pointer);
    if (value === undefined) return `the answer has nothing at ${pointer || '(the whole answer)'} for receipt field ${field}`;
    if (value !== null && typeof value === 'object') return `the answer's ${pointer || '(whole answer)'} for receipt field ${field} is not a string, number, boolean or null`;
    receipt[field] = value as Receipt[string];
  }
  return receipt;
}
