/**
 * HTML built by typed template functions: every interpolated value is
 * escaped unless it is already Html (made by `html` itself or by `raw` on
 * text this module's callers wrote). Escaping covers element text and quoted
 * attribute values alike.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as it may stand in an element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char]!);
}

/** A value as HTML: Html as it is, a list item by item, nothing for null, undefined and false, anything else escaped. */
function render(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** The template tag: `html\`<td>${name}</td>\`` escapes name. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Markup written by this program (never data): SVG paths, fixed fragments. */
export const raw = (markup: string): Html => new Html(markup);

/** A path under /console with its query, each part encoded. */
export function consolePath(path: string, query: Record<string, string | undefined> = {}): string {
  const entries = Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '');
  return `/console${path}${entries.length > 0 ? `?${new URLSearchParams(entries)}` : ''}`;
}

/** A JSON value, indented, for a <pre>. Long values are cut, saying how much was left out. */
export function jsonText(value: unknown, maxChars = 4000): string {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return text.length > maxChars ? `${text.slice(0, maxChars)}\n… (${text.length - maxChars} more characters)` : text;
}

/** How long ago, in words an operator reads at a glance: 42 s, 7 min, 3 h 5 min, 2 d 4 h. */
export function durationText(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 24) return `${h} h ${min % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** A timestamp as UTC, to the second. */
export const timeText = (date: Date | string | null | undefined): string =>
  date ? new Date(date).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—';
