/**
 * Usage as providers report it, read from their response bodies. A body
 * without usage gives undefined: the attempt then says its usage is not
 * known, and the job goes on (a provider that reports nothing never blocks).
 */

/** What one answered request consumed, as the provider said. */
export interface ProviderUsage {
  /** Every input token, those served from the prompt cache included. */
  inputTokens: number;
  outputTokens: number;
  /** The part of inputTokens served from the prompt cache, where the provider says. */
  cachedTokens?: number;
  /** The model that answered, as the provider names it. */
  model?: string;
  /** The provider's own id of the response. */
  providerRequestId?: string;
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function withIdentity(usage: ProviderUsage, body: Record<string, unknown>): ProviderUsage {
  const model = text(body.model);
  const id = text(body.id);
  return { ...usage, ...(model ? { model } : {}), ...(id ? { providerRequestId: id } : {}) };
}

/** An OpenAI chat completion's `usage` (prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens). */
export function openAiUsage(body: unknown): ProviderUsage | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  const usage = record.usage as Record<string, unknown> | undefined;
  const inputTokens = count(usage?.prompt_tokens);
  const outputTokens = count(usage?.completion_tokens);
  if (inputTokens === undefined || outputTokens === undefined) return undefined;
  const cachedTokens = count((usage?.prompt_tokens_details as Record<string, unknown> | undefined)?.cached_tokens);
  return withIdentity({ inputTokens, outputTokens, ...(cachedTokens === undefined ? {} : { cachedTokens }) }, record);
}

/**
 * An Anthropic message's `usage`. Anthropic counts cache reads and cache
 * writes apart from input_tokens; here they are added in, so inputTokens
 * means the same for every provider.
 */
export function anthropicUsage(body: unknown): ProviderUsage | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  const usage = record.usage as Record<string, unknown> | undefined;
  const input = count(usage?.input_tokens);
  const outputTokens = count(usage?.output_tokens);
  if (input === undefined || outputTokens === undefined) return undefined;
  const cacheRead = count(usage?.cache_read_input_tokens) ?? 0;
  const cacheWrite = count(usage?.cache_creation_input_tokens) ?? 0;
  return withIdentity({ inputTokens: input + cacheRead + cacheWrite, outputTokens, cachedTokens: cacheRead }, record);
}

/** An answer with its usage, when there is one (no `usage: undefined` key). */
export function answerOf(content: string, raw: unknown, usage: ProviderUsage | undefined): { content: string; raw: unknown; usage?: ProviderUsage } {
  return { content, raw, ...(usage ? { usage } : {}) };
}
