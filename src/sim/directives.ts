/**
 * Fault directives for the simulators (SIM.md). A fault is chosen by text
 * inside the request itself, so the whole real code path runs unchanged.
 *
 * - `@sim(<provider>:<behaviour>)` selects how a simulated AI provider answers.
 * - `@sink(<behaviour>)` selects how the simulated downstream answers a delivery.
 *
 * Keywords and provider names are matched case-insensitively. A directive whose
 * behaviour is unknown or malformed (`delay=abc`, `status=42`) is ignored as if
 * it were not there, so a typo degrades to `ok` rather than to a surprise.
 */

/** How a simulated provider answers one chat-completion request. */
export type SimBehaviour =
  | { readonly kind: 'ok' }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'hang' }
  | { readonly kind: 'late'; readonly ms: number }
  /** `retryAfterS`: the Retry-After the answer carries (`status=429,retry-after=2`); without it a 429 says 1. */
  | { readonly kind: 'status'; readonly code: number; readonly retryAfterS?: number }
  | { readonly kind: 'refuse' }
  | { readonly kind: 'reset' }
  | { readonly kind: 'extra-key' }
  | { readonly kind: 'prose' };

/** How the simulated downstream answers one delivery. */
export type SinkBehaviour =
  | { readonly kind: 'ok' }
  | { readonly kind: 'reset' }
  | { readonly kind: 'status'; readonly code: number }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'reset-once' };

/** One well-formed `@sim(...)` directive, in the order it appeared. */
export interface SimDirective {
  /** Provider name as written, or `*` for every provider. */
  readonly provider: string;
  readonly behaviour: SimBehaviour;
  /** The directive exactly as it appeared in the text. */
  readonly raw: string;
}

/** The behaviour used when no directive applies. */
export const OK: { readonly kind: 'ok' } = Object.freeze({ kind: 'ok' });

/** Any provider: the wildcard written as `@sim(*:<behaviour>)`. */
export const ANY_PROVIDER = '*';

// Newlines are excluded so an unclosed `@sim(` cannot swallow the rest of a prompt.
const SIM_PATTERN = /@sim\(([^()\r\n]*)\)/gi;
const SINK_PATTERN = /@sink\(([^()\r\n]*)\)/gi;

// setTimeout clamps anything larger to 1 ms, which would turn `hang`-like
// intentions into instant answers; refuse such values instead.
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Every well-formed `@sim(...)` directive in `text`, in text order.
 * Directives with an unknown behaviour are left out.
 */
export function parseSimDirectives(text: string): SimDirective[] {
  const directives: SimDirective[] = [];
  for (const match of text.matchAll(SIM_PATTERN)) {
    const inner = match[1] ?? '';
    const colon = inner.indexOf(':');
    if (colon < 0) continue;
    const provider = inner.slice(0, colon).trim();
    const behaviour = parseSimBehaviour(inner.slice(colon + 1));
    if (provider === '' || behaviour === undefined) continue;
    directives.push({ provider, behaviour, raw: match[0] });
  }
  return directives;
}

/**
 * The behaviour `provider` must show for a request whose text is `text`.
 *
 * Rule: a directive naming the provider beats any `*` directive; among
 * directives of the same kind the first in text order wins; with none, `ok`.
 * So `@sim(*:hang) @sim(sim-backup:ok)` hangs every provider except sim-backup.
 */
export function simBehaviourFor(provider: string, text: string): SimBehaviour {
  const directives = parseSimDirectives(text);
  const wanted = provider.toLowerCase();
  const named = directives.find((d) => d.provider.toLowerCase() === wanted);
  if (named) return named.behaviour;
  const wildcard = directives.find((d) => d.provider === ANY_PROVIDER);
  return wildcard ? wildcard.behaviour : OK;
}

/**
 * Parses the part after the colon of `@sim(<provider>:<behaviour>)`.
 * Returns undefined for an unknown or malformed behaviour.
 */
export function parseSimBehaviour(source: string): SimBehaviour | undefined {
  const { keyword, value } = splitKeyword(source);
  switch (keyword) {
    case 'ok':
    case 'hang':
    case 'refuse':
    case 'reset':
    case 'extra-key':
    case 'prose':
      return value === undefined ? { kind: keyword } : undefined;
    case 'delay':
    case 'late': {
      const ms = parseMs(value);
      return ms === undefined ? undefined : { kind: keyword, ms };
    }
    case 'status':
      return parseProviderStatus(value);
    default:
      return undefined;
  }
}

/**
 * `status=<code>` or `status=<code>,retry-after=<seconds>`: a chosen
 * Retry-After lets a test tell a client's backoff from the provider's wish.
 * Anything else after the comma makes the whole directive malformed.
 */
function parseProviderStatus(value: string | undefined): SimBehaviour | undefined {
  const [codePart, ...options] = (value ?? '').split(',');
  const code = parseStatusCode(codePart?.trim());
  if (code === undefined || options.length > 1) return undefined;
  if (options.length === 0) return { kind: 'status', code };
  const option = splitKeyword(options[0]!);
  const seconds = option.keyword === 'retry-after' && option.value !== undefined && /^\d{1,6}$/.test(option.value) ? Number(option.value) : undefined;
  return seconds === undefined ? undefined : { kind: 'status', code, retryAfterS: seconds };
}

/**
 * Every `@sink(...)` directive in `text`, verbatim and in text order, including
 * ones with behaviours this simulator does not know: the provider repeats them
 * in its reply and only the downstream decides what they mean.
 */
export function findSinkDirectives(text: string): string[] {
  return Array.from(text.matchAll(SINK_PATTERN), (match) => match[0]);
}

/**
 * The behaviour the downstream must show for a delivery whose text is `text`:
 * the first well-formed `@sink(...)` directive in text order, or `ok`.
 */
export function sinkBehaviourFor(text: string): SinkBehaviour {
  for (const match of text.matchAll(SINK_PATTERN)) {
    const behaviour = parseSinkBehaviour(match[1] ?? '');
    if (behaviour) return behaviour;
  }
  return OK;
}

/**
 * Parses the inside of `@sink(<behaviour>)`.
 * Returns undefined for an unknown or malformed behaviour.
 */
export function parseSinkBehaviour(source: string): SinkBehaviour | undefined {
  const { keyword, value } = splitKeyword(source);
  switch (keyword) {
    case 'ok':
    case 'reset':
    case 'reset-once':
      return value === undefined ? { kind: keyword } : undefined;
    case 'delay': {
      const ms = parseMs(value);
      return ms === undefined ? undefined : { kind: 'delay', ms };
    }
    case 'status': {
      const code = parseStatusCode(value);
      return code === undefined ? undefined : { kind: 'status', code };
    }
    default:
      return undefined;
  }
}

/** Short human-readable form of a behaviour, for logs and records. */
export function describeBehaviour(behaviour: SimBehaviour | SinkBehaviour): string {
  switch (behaviour.kind) {
    case 'delay':
    case 'late':
      return `${behaviour.kind}=${behaviour.ms}`;
    case 'status':
      return 'retryAfterS' in behaviour && behaviour.retryAfterS !== undefined ? `status=${behaviour.code},retry-after=${behaviour.retryAfterS}` : `status=${behaviour.code}`;
    default:
      return behaviour.kind;
  }
}

function splitKeyword(source: string): { keyword: string; value: string | undefined } {
  const trimmed = source.trim();
  const equals = trimmed.indexOf('=');
  if (equals < 0) return { keyword: trimmed.toLowerCase(), value: undefined };
  return {
    keyword: trimmed.slice(0, equals).trim().toLowerCase(),
    value: trimmed.slice(equals + 1).trim(),
  };
}

function parseMs(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const ms = Number(value);
  return ms <= MAX_TIMER_MS ? ms : undefined;
}

// 1xx codes are interim responses, not answers; a simulated fault must end the exchange.
function parseStatusCode(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{3}$/.test(value)) return undefined;
  const code = Number(value);
  return code >= 200 && code <= 599 ? code : undefined;
}
