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

/**
 * Renders a URL template: each placeholder becomes its value as text, URL-encoded.
 * @throws TemplateValueError as renderTemplate.
 */
export function renderUrl(template: string, values: TemplateValues): string {
  return template.replace(PLACEHOLDER, (_whole, path: string) => encodeURIComponent(asText(valueAt(values, path), path)));
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
