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

/** The assistant message content in the requested style. */
export function completionContent(
  provider: string,
  messages: readonly SimChatMessage[],
  style: CompletionStyle,
): string {
  const reply = replyText(provider, messages);
  const escalate = wantsEscalation(messages);
  switch (style) {
    case 'json':
      return JSON.stringify({ reply, escalate });
    case 'extra-key':
      return JSON.stringify({ reply, escalate, confidence: 0.9 });
    case 'prose':
      // Starts with a word, so no JSON parser can mistake it for an object.
      return `Sure! Here is my answer. ${reply} Let me know if there is anything else.`;
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
