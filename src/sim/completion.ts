/**
 * The simulated provider's answers: pure functions of the provider name and
 * the messages, so the same messages always give the same output.
 */
import { createHash } from 'node:crypto';
import { findSinkDirectives } from './directives';

/** One chat message as the simulator sees it: its content flattened to text. */
export interface SimChatMessage {
  readonly role: string;
  readonly content: string;
}

/** What the assistant message content looks like. */
export type CompletionStyle = 'json' | 'extra-key' | 'prose';

/** An OpenAI chat-completion response body, as far as the simulator fills it. */
export interface SimChatCompletion {
  readonly id: string;
  readonly object: 'chat.completion';
  /** Unix time in seconds, as in the OpenAI protocol. */
  readonly created: number;
  readonly model: string;
  readonly choices: ReadonlyArray<{
    readonly index: number;
    readonly message: { readonly role: 'assistant'; readonly content: string };
    readonly finish_reason: 'stop';
  }>;
  readonly usage: {
    readonly prompt_tokens: number;
    readonly completion_tokens: number;
    readonly total_tokens: number;
    /** As OpenAI reports it: the simulator has no prompt cache, so always 0. */
    readonly prompt_tokens_details: { readonly cached_tokens: number };
  };
}

// refund, refunds, refunded, refunding: whole words, any case.
const REFUND_WORD = /\brefund(?:s|ed|ing)?\b/i;

/** All message contents joined in order: the text directives are read from. */
export function messagesText(messages: readonly SimChatMessage[]): string {
  return messages.map((m) => m.content).join('\n');
}

/** A short, stable fingerprint of the messages, shown as `[ref ...]` in replies. */
export function messagesRef(messages: readonly SimChatMessage[]): string {
  const canonical = JSON.stringify(messages.map((m) => [m.role, m.content]));
  return createHash('sha256').update(canonical).digest('hex').slice(0, 8);
}

/**
 * Whether the reply sets `escalate: true`: when a *user* message mentions a
 * refund. Only user messages count, so a system prompt that explains when to
 * escalate ("escalate refund requests") does not escalate every ticket.
 */
export function wantsEscalation(messages: readonly SimChatMessage[]): boolean {
  return messages.some((m) => m.role === 'user' && REFUND_WORD.test(m.content));
}

/**
 * The reply text: names the provider, carries the ref, and ends with every
 * distinct `@sink(...)` directive of the messages (first-appearance order), so
 * downstream faults can be chosen in the original request.
 */
export function replyText(provider: string, messages: readonly SimChatMessage[]): string {
  const body = wantsEscalation(messages)
    ? 'Thanks for reaching out — I have passed your refund request to a colleague who can approve it.'
    : 'Thanks for reaching out — we are on it.';
  const sinks = [...new Set(findSinkDirectives(messagesText(messages)))];
  const tail = sinks.length > 0 ? ` ${sinks.join(' ')}` : '';
  return `${provider}: ${body} [ref ${messagesRef(messages)}]${tail}`;
}

/** The type of one key a system prompt asks for: a JSON type, or one of some string literals. */
export type ShapeType = 'string' | 'boolean' | 'number' | readonly string[];

// One `{"key": type, ...}` in a system prompt; types: string, boolean, number, integer, or "a" | "b".
const SHAPE_BRACES = /\{([^{}]*)\}/g;
const SHAPE_PAIR = /^\s*"([^"]+)"\s*:\s*(string|boolean|number|integer|"[^"]*"(?:\s*\|\s*"[^"]*")*)\s*$/;

/**
 * The keys the request asks for, in order, with their types: read from the
 * first `{...}` of the system messages that lists only `"key": type` pairs.
 * Undefined when no system message names a shape.
 */
export function answerShape(messages: readonly SimChatMessage[]): Array<[string, ShapeType]> | undefined {
  for (const message of messages) {
    if (message.role !== 'system') continue;
    for (const braces of message.content.matchAll(SHAPE_BRACES)) {
      const pairs = (braces[1] ?? '').split(',').map((part) => SHAPE_PAIR.exec(part));
      if (pairs.length === 0 || pairs.some((pair) => !pair)) continue;
      return pairs.map((pair) => {
        const [, key, type] = pair!;
        if (type!.startsWith('"')) return [key!, [...type!.matchAll(/"([^"]*)"/g)].map((literal) => literal[1]!)];
        return [key!, type === 'integer' ? 'number' : (type as 'string' | 'boolean' | 'number')];
      });
    }
  }
  return undefined;
}

// support.reply's answer predates shapes; it stays as it was, byte for byte.
function isSupportReplyShape(shape: Array<[string, ShapeType]> | undefined): boolean {
  return !shape || (shape.length === 2 && shape[0]![0] === 'reply' && shape[0]![1] === 'string' && shape[1]![0] === 'escalate' && shape[1]![1] === 'boolean');
}

/**
 * The answer object: support.reply's `{reply, escalate}` when the system
 * prompt asks for it or names no shape; otherwise each key asked for, with a
 * string naming the provider, the key and the ref (and the `@sink(...)`
 * directives), `false` (or `true` on a refund), `0`, or the first of the
 * literals (the last on a refund, as escalate is true then).
 */
function answerObject(provider: string, messages: readonly SimChatMessage[]): Record<string, unknown> {
  const shape = answerShape(messages);
  const escalate = wantsEscalation(messages);
  if (isSupportReplyShape(shape)) return { reply: replyText(provider, messages), escalate };
  const sinks = [...new Set(findSinkDirectives(messagesText(messages)))];
  const tail = sinks.length > 0 ? ` ${sinks.join(' ')}` : '';
  const answer: Record<string, unknown> = {};
  for (const [key, type] of shape!) {
    if (type === 'string') answer[key] = `${provider}: ${key} of the request [ref ${messagesRef(messages)}]${tail}`;
    else if (type === 'boolean') answer[key] = escalate;
    else if (type === 'number') answer[key] = 0;
    else answer[key] = escalate ? type[type.length - 1] : type[0];
  }
  return answer;
}

/** The assistant message content in the requested style. */
export function completionContent(
  provider: string,
  messages: readonly SimChatMessage[],
  style: CompletionStyle,
): string {
  const answer = answerObject(provider, messages);
  switch (style) {
    case 'json':
      return JSON.stringify(answer);
    case 'extra-key':
      return JSON.stringify({ ...answer, confidence: 0.9 });
    case 'prose': {
      // Starts with a word, so no JSON parser can mistake it for an object.
      const text = Object.values(answer).find((value) => typeof value === 'string') ?? JSON.stringify(answer);
      return `Sure! Here is my answer. ${String(text)} Let me know if there is anything else.`;
    }
  }
}

/** Builds the full response body for one request. */
export function buildCompletion(args: {
  provider: string;
  requestId: string;
  model: string;
  messages: readonly SimChatMessage[];
  style: CompletionStyle;
  createdAtMs: number;
}): SimChatCompletion {
  const content = completionContent(args.provider, args.messages, args.style);
  const promptTokens = estimateTokens(messagesText(args.messages));
  const completionTokens = estimateTokens(content);
  return {
    id: `chatcmpl-${createHash('sha256').update(args.requestId).digest('hex').slice(0, 24)}`,
    object: 'chat.completion',
    created: Math.floor(args.createdAtMs / 1000),
    model: args.model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  };
}

// Roughly four characters per token: good enough for cost dashboards in a demo.
function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}
