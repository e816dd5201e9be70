/** What every adapter sends with every completion, whichever SDK carries it. */

/** Sent as the API key to servers that want none (local vLLM, Ollama, the simulator). */
export const PLACEHOLDER_API_KEY = 'not-needed';

/** The headers that carry the attempt's id, so the provider can deduplicate and be asked about it later. */
export function requestIdHeaders(requestId: string): Record<string, string> {
  return { 'Idempotency-Key': requestId, 'X-Request-Id': requestId };
}
