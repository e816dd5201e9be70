/**
 * Adapter for OpenAI-compatible chat-completions APIs (OpenAI, vLLM, Ollama,
 * the simulator) through the official `openai` SDK, with its retries off: one
 * call, one HTTP request, one attempt.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { sdkTimeoutMs, startCallDeadline } from './call-deadline';
import { PLACEHOLDER_API_KEY, requestIdHeaders } from './request-id';
import { classifySdkError, type SdkErrorClasses } from './sdk-errors';
import { answerOf, openAiUsage } from './usage';
import {
  ProviderCallError,
  type CompletionAnswer,
  type CompletionRequest,
  type LookupResult,
  type ProviderAdapter,
} from './types';

const OPENAI_ERRORS: SdkErrorClasses = { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError };

/** Budget of one lookup request; reconciliation polls, so a slow lookup just fails this round. */
export const DEFAULT_LOOKUP_TIMEOUT_MS = 5_000;

export interface OpenAiCompatibleOptions {
  name: string;
  /** Base URL including the API version, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** The server answers `GET {baseUrl}/requests/{requestId}` (the simulator does). */
  lookup?: boolean;
  defaultHeaders?: Record<string, string>;
  lookupTimeoutMs?: number;
  /** Clock for `retry-after` dates; default Date.now. */
  now?: () => number;
}

/**
 * Creates the adapter; nothing is sent until `complete` or `lookup` is called.
 * Its `complete` throws ProviderCallError (classified per classify.ts), or
 * RangeError for a non-positive `timeoutMs` (before sending anything).
 */
export function createOpenAiCompatibleProvider(options: OpenAiCompatibleOptions): ProviderAdapter {
  const { name } = options;
  const now = options.now ?? Date.now;
  const client = new OpenAI({
    baseURL: options.baseUrl,
    apiKey: options.apiKey ?? PLACEHOLDER_API_KEY,
    // Explicit, so OPENAI_ORG_ID / OPENAI_PROJECT_ID in the environment never reach another server.
    organization: null,
    project: null,
    maxRetries: 0,
    defaultHeaders: options.defaultHeaders,
  });

  async function complete(request: CompletionRequest): Promise<CompletionAnswer> {
    const body: ChatCompletionCreateParamsNonStreaming = {
      model: request.model,
      messages: request.messages.map((message): ChatCompletionMessageParam => ({
        role: message.role,
        content: message.content,
      })),
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
      ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }),
    };
    const deadline = startCallDeadline(request.timeoutMs, request.signal);
    try {
      const raw: unknown = await client.chat.completions.create(body, {
        timeout: sdkTimeoutMs(request.timeoutMs),
        signal: deadline.signal,
        maxRetries: 0,
        headers: requestIdHeaders(request.requestId),
      });
      return answerOf(completionContent(raw), raw, openAiUsage(raw));
    } catch (error) {
      const failure = classifySdkError(error, OPENAI_ERRORS, deadline, now());
      throw new ProviderCallError({ ...failure, detail: `${name}: ${failure.detail}` }, { cause: error });
    } finally {
      deadline.clear();
    }
  }

  const adapter: ProviderAdapter = { name, kind: 'openai-compatible', baseUrl: options.baseUrl, complete };
  if (!options.lookup) return adapter;

  const lookupTimeoutMs = options.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS;
  const lookupHeaders: Record<string, string> = {
    ...options.defaultHeaders,
    accept: 'application/json',
    ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
  };
  return {
    ...adapter,
    lookup: (requestId) =>
      lookupRequest({ name, baseUrl: options.baseUrl, requestId, headers: lookupHeaders, timeoutMs: lookupTimeoutMs }),
  };
}

/**
 * The assistant text of a chat completion, or '' when the answer has none
 * (no choices, null content, a non-JSON body): not an error here, the output
 * contract upstream fails it as a contract violation.
 */
export function completionContent(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const choices = (body as { choices?: unknown }).choices;
  if (!Array.isArray(choices)) return '';
  const first: unknown = choices[0];
  const content = (first as { message?: { content?: unknown } } | undefined)?.message?.content;
  return typeof content === 'string' ? content : '';
}

/**
 * `GET {baseUrl}/requests/{requestId}` as the simulator serves it (SIM.md).
 * A 404 counts as "never received" only with a JSON error body: an HTML or
 * empty 404 more likely means the endpoint itself is missing, and answering
 * "not found" then would wrongly prove the request never ran.
 * @throws Error on a transport failure, a timeout or an unexpected answer.
 */
async function lookupRequest(args: {
  name: string;
  baseUrl: string;
  requestId: string;
  headers: Record<string, string>;
  timeoutMs: number;
}): Promise<LookupResult> {
  const { name, requestId } = args;
  const url = `${args.baseUrl.replace(/\/+$/, '')}/requests/${encodeURIComponent(requestId)}`;
  const where = `lookup of ${requestId} at ${name}`;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { headers: args.headers, signal: AbortSignal.timeout(args.timeoutMs) });
    text = await response.text();
  } catch (cause) {
    throw new Error(`${where} failed: ${String(cause)}`, { cause });
  }
  const body = parseJson(text);
  if (response.status === 404) {
    if (body === undefined) throw new Error(`${where}: HTTP 404 without a JSON body; is lookup supported at ${url}?`);
    return { found: false };
  }
  if (response.status !== 200) throw new Error(`${where}: unexpected HTTP ${response.status}`);
  const record = body as { status?: unknown; output?: unknown } | undefined;
  if (record?.status === 'executing') return { found: true, status: 'executing' };
  if (record?.status === 'completed') {
    return { found: true, status: 'completed', ...answerOf(completionContent(record.output), record.output, openAiUsage(record.output)) };
  }
  throw new Error(`${where}: unexpected answer ${text.slice(0, 200)}`);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
