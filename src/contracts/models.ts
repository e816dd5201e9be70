import type { ChatMessage } from '../providers/types';

// js-tiktoken ships CommonJS builds, but its type declarations are ES modules only.
type Lite = typeof import('js-tiktoken/lite', { with: { 'resolution-mode': 'import' } });
type Ranks = typeof import('js-tiktoken/ranks/cl100k_base', { with: { 'resolution-mode': 'import' } });
/* eslint-disable @typescript-eslint/no-require-imports */
const { Tiktoken } = require('js-tiktoken/lite') as Lite;
// The CommonJS rank files export the ranks object itself (no default).
const cl100k = require('js-tiktoken/ranks/cl100k_base') as Ranks['default'];
const o200k = require('js-tiktoken/ranks/o200k_base') as Ranks['default'];
/* eslint-enable @typescript-eslint/no-require-imports */
type Tiktoken = InstanceType<Lite['Tiktoken']>;

export type Encoding = 'o200k_base' | 'cl100k_base';

export interface ModelProfile {
  /** Tokens the model accepts, prompt and answer together. */
  contextWindow: number;
  /** Tokens kept free for the answer. */
  reservedForOutput: number;
  encoding: Encoding;
}

/**
 * What Onceflow knows of models, by name pattern, first match wins. The
 * encodings ship inside js-tiktoken (nothing is downloaded). Models whose
 * tokenizer is not published (Anthropic's) are counted with cl100k_base and a
 * margin; the simulators have small windows on purpose, so the window check
 * can be seen to work.
 */
export const MODEL_PROFILES: ReadonlyArray<[RegExp, ModelProfile]> = [
  [/^sim-small$/, { contextWindow: 2_048, reservedForOutput: 512, encoding: 'cl100k_base' }],
  [/^sim-large$/, { contextWindow: 8_192, reservedForOutput: 1_024, encoding: 'cl100k_base' }],
  [/^(gpt-4o|gpt-4\.1|gpt-5|o1|o3|o4)/, { contextWindow: 128_000, reservedForOutput: 4_096, encoding: 'o200k_base' }],
  [/^(gpt-4|gpt-3\.5)/, { contextWindow: 8_192, reservedForOutput: 1_024, encoding: 'cl100k_base' }],
  [/^claude-/, { contextWindow: 200_000, reservedForOutput: 4_096, encoding: 'cl100k_base' }],
];

/** For a model nobody described: a conservative window. */
export const DEFAULT_PROFILE: ModelProfile = { contextWindow: 8_192, reservedForOutput: 1_024, encoding: 'cl100k_base' };

export function profileOf(model: string, profiles = MODEL_PROFILES): ModelProfile {
  return profiles.find(([pattern]) => pattern.test(model))?.[1] ?? DEFAULT_PROFILE;
}

const encoders = new Map<Encoding, Tiktoken>();

/** The tokenizer of an encoding, built once per process. */
export function encoder(encoding: Encoding): Tiktoken {
  let found = encoders.get(encoding);
  if (!found) {
    found = new Tiktoken(encoding === 'o200k_base' ? o200k : cl100k);
    encoders.set(encoding, found);
  }
  return found;
}

/**
 * Builds the tokenizers of these models now and counts one prompt with each
 * (a tokenizer takes a noticeable moment to build, and its first count, which
 * compiles its pre-tokenizing expression, about 1.5 ms more than the next), so
 * a worker's first job does not pay for either.
 */
export function warmUpTokenizers(models: string[]): void {
  for (const model of new Set(models)) countPromptTokens([{ role: 'user', content: 'Warm-up: 1 prompt, counted once.\n' }], profileOf(model).encoding);
}

/**
 * Tokens of a chat prompt by the model's tokenizer, with the per-message
 * framing chat formats add. A message's text is counted as text: one that
 * spells a special token (`<|endoftext|>`, from a customer) is the ordinary
 * tokens the provider reads it as, never a special token, and never an error.
 */
export function countPromptTokens(messages: ChatMessage[], encoding: Encoding): number {
  const tokenizer = encoder(encoding);
  const count = (text: string) => tokenizer.encode(text, [], []).length;
  return messages.reduce((sum, message) => sum + 4 + inPieces(message.content).reduce((tokens, piece) => tokens + count(piece), 0), 3);
}

/**
 * The most tokens a chat prompt can count as, without its tokenizer: the
 * framing, and one token per UTF-8 byte of each message's text. A byte-level
 * BPE (cl100k_base, o200k_base) gives every token at least one byte of the
 * text, special tokens included (they are counted as text), so the count of
 * countPromptTokens, piece by piece, is never more.
 */
export function promptTokenBound(messages: ChatMessage[]): number {
  return messages.reduce((sum, message) => sum + 4 + Buffer.byteLength(message.content, 'utf8'), 3);
}

/** The longest run of one kind of character (letters, punctuation, spaces) a count takes whole, in code points. */
export const LONGEST_COUNTED_RUN = 64;

/** Runs longer than LONGEST_COUNTED_RUN: letters (with their marks), other non-space non-digit characters, spaces. */
const LONG_RUN = new RegExp(`[\\p{L}\\p{M}]{${LONGEST_COUNTED_RUN + 1},}|[^\\s\\p{L}\\p{M}\\p{N}]{${LONGEST_COUNTED_RUN + 1},}|\\s{${LONGEST_COUNTED_RUN + 1},}`, 'gu');

/**
 * A text as it is counted: whole, except that a run longer than
 * LONGEST_COUNTED_RUN (4,000 CJK characters without punctuation, a pasted
 * line of one letter) is cut into pieces of that many code points. The
 * tokenizer's merges take time quadratic in the length of such a run (about
 * 13 s of the worker's main thread for 4,000 CJK characters with o200k, 0.15 s
 * in pieces). The pieces count the same as the whole or a little more (up to
 * 4 % more in the samples measured; a long run of spaces more, in few
 * tokens), so a prompt that fits still fits; text whose runs are shorter
 * (words, sentences with their punctuation) counts exactly as before.
 */
export function inPieces(text: string): string[] {
  const pieces: string[] = [];
  let from = 0;
  for (const run of text.matchAll(LONG_RUN)) {
    if (run.index! > from) pieces.push(text.slice(from, run.index));
    const points = Array.from(run[0]);
    for (let at = 0; at < points.length; at += LONGEST_COUNTED_RUN) pieces.push(points.slice(at, at + LONGEST_COUNTED_RUN).join(''));
    from = run.index! + run[0].length;
  }
  if (from < text.length || pieces.length === 0) pieces.push(text.slice(from));
  return pieces;
}
