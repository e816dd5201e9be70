/**
 * Adapter for Anthropic's Messages API through the official `@anthropic-ai/sdk`,
 * with its retries off. Anthropic offers no lookup by request id, so an unknown
 * attempt here is reconciled by the ledger or an operator.
 */
import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { sdkTimeoutMs, startCallDeadline } from './call-deadline';
import { PLACEHOLDER_API_KEY, requestIdHeaders } from './request-id';
import { classifySdkError, type SdkErrorClasses } from './sdk-errors';
import { anthropicUsage, answerOf } from './usage';
import { ProviderCallError, type CompletionAnswer, type CompletionRequest, type ProviderAdapter } from './types';

const ANTHROPIC_ERRORS: SdkErrorClasses = { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError };

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/** The Messages API requires `max_tokens`; used when neither the request nor the options set it. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 1024;

export interface AnthropicOptions {
  name: string;
  apiKey?: string;
  /** Without the `/v1` path; default https://api.anthropic.com. */
  baseUrl?: string;
  /** Default `max_tokens` for requests that set none. */
  maxTokens?: number;
  defaultHeaders?: Record<string, string>;
  /** Clock for `retry-after` dates; default Date.now. */
  now?: () => number;
}

/**
 * Creates the adapter; nothing is sent until `complete` is called. Its
 * `complete` throws ProviderCallError (classified per classify.ts), or
 * RangeError for a non-positive `timeoutMs` (before sending anything).
 */
export function createAnthropicProvider(options: AnthropicOptions): ProviderAdapter {
  const { name } = options;
  const now = options.now ?? Date.now;
  const defaultMaxTokens = options.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS;
  const client = new Anthropic({
    // Both explicit, so ANTHROPIC_* variables and credential profiles are never consulted behind the config's back.
    apiKey: options.apiKey ?? PLACEHOLDER_API_KEY,
    baseURL: options.baseUrl ?? ANTHROPIC_BASE_URL,
    maxRetries: 0,
    defaultHeaders: options.defaultHeaders,
  });

  async function complete(request: CompletionRequest): Promise<CompletionAnswer> {
    const { system, messages } = toMessagesApi(request);
    const body: MessageCreateParamsNonStreaming = {
      model: request.model,
      max_tokens: request.maxTokens ?? defaultMaxTokens,
      messages,
      ...(system === undefined ? {} : { system }),
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    };
    const deadline = startCallDeadline(request.timeoutMs, request.signal);
    try {
      const raw: unknown = await client.messages.create(body, {
        timeout: sdkTimeoutMs(request.timeoutMs),
        signal: deadline.signal,
        maxRetries: 0,
        headers: requestIdHeaders(request.requestId),
      });
      return answerOf(messageText(raw), raw, anthropicUsage(raw));
    } catch (error) {
      const failure = classifySdkError(error, ANTHROPIC_ERRORS, deadline, now());
      throw new ProviderCallError({ ...failure, detail: `${name}: ${failure.detail}` }, { cause: error });
    } finally {
      deadline.clear();
    }
  }

  return { name, kind: 'anthropic', baseUrl: options.baseUrl ?? ANTHROPIC_BASE_URL, complete };
}

/**
 * Splits chat messages the Messages API way: `system` messages become the
 * top-level `system` (joined by blank lines, in order), the rest stay in order.
 */
export function toMessagesApi(request: Pick<CompletionRequest, 'messages'>): {
  system: string | undefined;
  messages: MessageParam[];
} {
  const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content);
  const messages = request.messages.flatMap((m): MessageParam[] =>
    m.role === 'system' ? [] : [{ role: m.role, content: m.content }],
  );
  return { system: system.length === 0 ? undefined : system.join('\n\n'), messages };
}

/** The concatenated text blocks of a Messages API answer; '' when it has none. */
export function messageText(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const content = (body as { content?: unknown }).content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: unknown) => {
      const { type, text } = (block ?? {}) as { type?: unknown; text?: unknown };
      return type === 'text' && typeof text === 'string' ? text : '';
    })
    .join('');
}
