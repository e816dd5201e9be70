import type { EffectContext } from './types';

/** `{{path}}`: a value of the job, put into a declared body or lookup URL when the effect runs. */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const LONE_PLACEHOLDER = /^\{\{\s*([^{}]*?)\s*\}\}$/;
/** What a placeholder may name: the job's input and output (or a path into them), its id and operation, and the key. */
const KNOWN_PATH = /^(key|job\.id|job\.operation|(input|output)(\.[^.\s]+)*)$/;

/** The values placeholders are read from. */
export type TemplateValues = Pick<EffectContext, 'input' | 'output' | 'jobId' | 'operation' | 'key'>;

/** A placeholder names a value this job does not have, or one that does not fit where it stands. */
export class TemplateValueError extends Error {
  override name = 'TemplateValueError';
}

/** The placeholders in a template (any JSON value) that name nothing a job has; empty when all are known. */
export function unknownPlaceholders(template: unknown): string[] {
  const unknown: string[] = [];
  visitStrings(template, (text) => {
    for (const [, path] of text.matchAll(PLACEHOLDER)) if (!KNOWN_PATH.test(path!)) unknown.push(path!);
  });
  return unknown;
}

/**
 * Renders a JSON template: a string that is one placeholder becomes the
 * value itself (number, object, ...); placeholders inside longer text become
 * text. Builds values, never JSON by concatenation.
 * @throws TemplateValueError when a placeholder names nothing, or an object stands inside text.
 */
export function renderTemplate(template: unknown, values: TemplateValues): unknown {
  if (typeof template === 'string') {
    const lone = LONE_PLACEHOLDER.exec(template);
    if (lone) return valueAt(values, lone[1]!);
    return template.replace(PLACEHOLDER, (_whole, path: string) => asText(valueAt(values, path), path));
  }
  if (Array.isArray(template)) return template.map((item) => renderTemplate(item, values));
  if (template !== null && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([name, item]) => [name, renderTemplate(item, values)]));
  }
  return template;
}

/** A URL whose origin the operations file fixed: only its path segments and query values vary with the job. */
export interface UrlTemplate {
  /** The scheme, host and port every rendered URL has. */
  readonly origin: string;
  /**
   * The URL for these values, each URL-encoded in its place.
   * @throws TemplateValueError as renderTemplate; and when a value cannot be
   * encoded (a lone surrogate), or makes a path segment empty, `.` or `..`
   * (it would remove or climb over a segment the declaration fixed).
   */
  render(values: TemplateValues): string;
}

/** `scheme://authority`, then the path, the query and the fragment. */
const URL_PARTS = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]*)([^?#]*)(?:\?([^#]*))?(#.*)?$/i;

/**
 * Checks a URL template (its `${ENV}` parts already read) and compiles it.
 * Invariant 14: where a request goes, and so where its secret headers go, is
 * the operator's, never the job's: a placeholder may stand in a path segment
 * or a query value, never in the scheme, host, port, user, a query name or
 * the fragment.
 * @throws the error `invalid(problem)` makes, for a placeholder elsewhere, or
 * a template that is not an absolute http(s) URL.
 */
export function compileUrlTemplate(template: string, what: string, invalid: (problem: string) => Error): UrlTemplate {
  // A URL parser reads `\` as `/`: it would make segments this check cannot see.
  if (template.includes('\\')) throw invalid(`${what} has a backslash; write / (or %5C for the character itself)`);
  // Each placeholder stands inside one part: a name holding / ? # & = would be split across them, and never filled.
  for (const [whole, name] of template.matchAll(PLACEHOLDER)) {
    if (/[/?#&=]/.test(name!)) throw invalid(`${what}: the placeholder ${whole} names a path with / ? # & or =, which cannot stand in a URL`);
  }
  const parts = URL_PARTS.exec(template);
  if (!parts) throw invalid(`${what} is not an absolute URL`);
  const [, authority, path, query, fragment] = parts as unknown as [string, string, string, string | undefined, string | undefined];
  const fixed = (text: string | undefined) => !text || !hasPlaceholder(text);
  const pairs = query === undefined ? undefined : query.split('&').map((pair) => (pair.includes('=') ? [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)] : [pair, undefined]) as [string, string | undefined]);
  if (!fixed(authority) || !fixed(fragment) || !(pairs ?? []).every(([name]) => fixed(name))) {
    throw invalid(`${what} has a placeholder outside the path segments and query values; the scheme, host and port (and query names) are fixed in the file`);
  }
  let origin: string;
  try {
    const parsed = new URL(template.replace(PLACEHOLDER, 'x'));
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalid(`${what} is not http or https`);
    origin = parsed.origin;
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    throw invalid(`${what} is not an absolute URL`);
  }
  // No path is the root path, as a parser reads it.
  const segments = (path || '/').split('/');
  // The parser keeps every segment the operator wrote: no fixed `.` or `..` (it would remove them, and the check at render relies on the count).
  if (segmentsOf(template.replace(PLACEHOLDER, 'x')) !== segments.length) throw invalid(`${what} has a . or .. path segment; write the path it stands for`);
  return {
    origin,
    render(values) {
      const renderedPath = segments
        .map((segment) => {
          if (!hasPlaceholder(segment)) return segment;
          const rendered = fill(segment, values);
          if (rendered === '' || rendered === '.' || rendered === '..') {
            throw new TemplateValueError(`the path segment ${segment} renders as "${rendered}", which would change the path the declaration fixed`);
          }
          return rendered;
        })
        .join('/');
      const renderedQuery = pairs?.map(([name, value]) => (value === undefined ? name : `${name}=${fill(value, values)}`)).join('&');
      const url = `${authority}${renderedPath}${renderedQuery === undefined ? '' : `?${renderedQuery}`}${fragment ?? ''}`;
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw new TemplateValueError('the URL it renders is not a valid URL');
      }
      // Checked on what the parser made of it, since a secret follows the URL: the declared host, and every
      // segment the template has (a value beside fixed text, `.` and `%2e`, is still a dot segment to a parser).
      if (parsed.origin !== origin) throw new TemplateValueError('the URL it renders names another host');
      if (parsed.pathname.split('/').length !== segments.length) throw new TemplateValueError('a value makes a . or .. path segment, which would change the path the declaration fixed');
      return url;
    },
  };
}

/** How many path segments a URL parser makes of a URL (its pathname split on /). */
function segmentsOf(url: string): number {
  try {
    return new URL(url).pathname.split('/').length;
  } catch {
    return -1;
  }
}

function hasPlaceholder(text: string): boolean {
  return new RegExp(PLACEHOLDER.source).test(text);
}

/** A URL part with each placeholder's value as text, URL-encoded. */
function fill(part: string, values: TemplateValues): string {
  return part.replace(PLACEHOLDER, (_whole, path: string) => {
    try {
      return encodeURIComponent(asText(valueAt(values, path), path));
    } catch (err) {
      if (err instanceof URIError) throw new TemplateValueError(`{{${path}}} holds text that cannot be put in a URL (a lone surrogate)`);
      throw err;
    }
  });
}

function valueAt(values: TemplateValues, path: string): unknown {
  if (path === 'key') return values.key;
  if (path === 'job.id') return values.jobId;
  if (path === 'job.operation') return values.operation;
  const [root, ...steps] = path.split('.');
  let current: unknown = root === 'input' ? values.input : root === 'output' ? values.output : undefined;
  for (const step of steps) {
    // Own properties only: a template never reaches into prototypes.
    current = current !== null && typeof current === 'object' && Object.hasOwn(current, step) ? (current as Record<string, unknown>)[step] : undefined;
  }
  if (current === undefined) throw new TemplateValueError(`{{${path}}} names nothing in this job`);
  return current;
}

function asText(value: unknown, path: string): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new TemplateValueError(`{{${path}}} is ${value === null ? 'null' : 'an object'}, which cannot stand inside text`);
}

function visitStrings(template: unknown, visit: (text: string) => void): void {
  if (typeof template === 'string') visit(template);
  else if (Array.isArray(template)) template.forEach((item) => visitStrings(item, visit));
  else if (template !== null && typeof template === 'object') Object.values(template).forEach((item) => visitStrings(item, visit));
}
