/**
 * The OpenAI-compatible entry: `POST /openai/v1/chat/completions`, so that
 * `new OpenAI({ baseURL: 'http://host/openai/v1', apiKey })` works. What it
 * carries: `model` (an alias), `messages` (system, developer, user and
 * assistant text), `max_tokens` / `max_completion_tokens`, `temperature`,
 * `response_format` (text; JSON for an alias with an output contract),
 * `stream` and `stream_options.include_usage`; `user`, `metadata` and `store`
 * are accepted and ignored. Any other field is a 400 naming it.
 */
import type { FastifyInstance } from 'fastify';
import type { ChatMessage } from '../../providers/types';
import type { ProblemError } from '../problems';
import { admitEntryRequest, invalid, notCarried, sendEvents, type EntryAnswer, type EntryRequest, type EntrySettings } from './entry';

const IGNORED = new Set(['user', 'metadata', 'store']);
const CARRIED = new Set(['model', 'messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'response_format', 'stream', 'stream_options', 'n']);

type Body = Record<string, unknown>;

/** A message's text: a string, or text parts only. */
function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(`${at}.content`, 'must be a string or an array of text parts');
  return content
    .map((part, index) => {
      const type = (part as { type?: unknown } | null)?.type;
      if (type !== 'text') throw notCarried(`${at}.content.${index}.type`, `only text parts are carried (this one is ${JSON.stringify(type)})`);
      const text = (part as { text?: unknown }).text;
      if (typeof text !== 'string') throw invalid(`${at}.content.${index}.text`, 'must be a string');
      return text;
    })
    .join('');
}

/** The request, as the alias's canonical input. @throws ProblemError 400 naming the field. */
export function parseChatCompletion(body: Body): EntryRequest {
  for (const field of Object.keys(body)) if (!CARRIED.has(field) && !IGNORED.has(field)) throw notCarried(field);
  if (typeof body.model !== 'string' || body.model === '') throw invalid('model', 'must name a model alias');
  if (body.n !== undefined && body.n !== 1) throw notCarried('n', 'one job has one answer (n: 1)');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalid('messages', 'must be a non-empty array');
  const messages: ChatMessage[] = body.messages.map((message, index) => {
    const at = `messages.${index}`;
    if (typeof message !== 'object' || message === null) throw invalid(at, 'must be an object');
    const { role, content, name, ...rest } = message as Body;
    const extra = Object.keys(rest)[0];
    if (extra) throw notCarried(`${at}.${extra}`);
    if (name !== undefined && typeof name !== 'string') throw invalid(`${at}.name`, 'must be a string');
    if (role === 'tool' || role === 'function') throw notCarried(`${at}.role`, 'tool results are not carried across protocols');
    if (role !== 'system' && role !== 'developer' && role !== 'user' && role !== 'assistant') throw invalid(`${at}.role`, 'must be system, developer, user or assistant');
    return { role: role === 'developer' ? 'system' : role, content: textOf(content, at) };
  });
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)) throw invalid(body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens', 'must be a whole number of at least 1');
  if (body.temperature !== undefined && body.temperature !== null && typeof body.temperature !== 'number') throw invalid('temperature', 'must be a number');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw invalid('stream', 'must be a boolean');
  const format = (body.response_format as { type?: unknown } | undefined)?.type;
  if (body.response_format !== undefined && format !== 'text' && format !== 'json_object' && format !== 'json_schema') throw invalid('response_format.type', 'must be text, json_object or json_schema');
  const options = body.stream_options as { include_usage?: unknown } | undefined;
  if (options !== undefined && (typeof options !== 'object' || options === null || Object.keys(options).some((key) => key !== 'include_usage'))) throw notCarried('stream_options', 'only include_usage is carried');
  return {
    model: body.model,
    input: { messages, ...(maxTokens !== undefined ? { maxTokens: maxTokens as number } : {}), ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}) },
    stream: body.stream === true,
    wantsJson: format === 'json_object' || format === 'json_schema',
    fieldNames: { maxTokens: body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens' },
  };
}

function completion(answer: EntryAnswer) {
  return {
    id: `chatcmpl-${answer.jobId}`,
    object: 'chat.completion',
    created: answer.created,
    model: answer.model,
    choices: [{ index: 0, message: { role: 'assistant', content: answer.content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: answer.inputTokens, completion_tokens: answer.outputTokens, total_tokens: answer.inputTokens + answer.outputTokens },
  };
}

/** The stored answer as the protocol's chunks: the role, the whole text, the finish, the usage when asked, [DONE]. */
function chunks(answer: EntryAnswer, includeUsage: boolean): string[] {
  const head = { id: `chatcmpl-${answer.jobId}`, object: 'chat.completion.chunk', created: answer.created, model: answer.model };
  const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
  const usage = completion(answer).usage;
  return [
    data({ ...head, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] }),
    data({ ...head, choices: [{ index: 0, delta: { content: answer.content }, logprobs: null, finish_reason: null }] }),
    data({ ...head, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] }),
    ...(includeUsage ? [data({ ...head, choices: [], usage })] : []),
    'data: [DONE]\n\n',
  ];
}

const ERROR_TYPES: Record<number, string> = { 400: 'invalid_request_error', 401: 'invalid_request_error', 403: 'permission_error', 404: 'invalid_request_error', 409: 'conflict_error', 413: 'invalid_request_error', 415: 'invalid_request_error', 429: 'rate_limit_error' };

/** A problem in OpenAI's error shape (the SDK raises its own error class by the status). */
export function openAiError(problem: ProblemError): unknown {
  const param = (problem.extras.errors?.[0]?.pointer ?? '').replace(/^\//, '').replace(/\//g, '.') || null;
  const code = typeof problem.extras.code === 'string' ? problem.extras.code : problem.problemType;
  return { error: { message: problem.message, type: ERROR_TYPES[problem.status] ?? (problem.status >= 500 ? 'server_error' : 'invalid_request_error'), param, code } };
}

export async function registerOpenAiEntry(app: FastifyInstance, settings: EntrySettings): Promise<void> {
  app.post(
    '/chat/completions',
    {
      config: { rateLimit: {} },
      schema: {
        // Not Onceflow's own API (openapi.json): the OpenAI and Anthropic protocols, docs/entries.md.
        hide: true,
        operationId: 'openAiChatCompletions',
        tags: ['entries'],
        summary: 'OpenAI-compatible chat completions of a model alias',
        description:
          'A job of the alias the body names as model, keyed by the principal, the alias and the Idempotency-Key header (required). The answer is the winning attempt\'s completion; a replay returns it byte for byte with Idempotent-Replayed: true. 409 with Retry-After while the job runs (the SDK retries with the same key and attaches). Errors are {"error": {message, type, param, code}}. See docs/entries.md.',
        body: { type: 'object' },
      },
    },
    async (request, reply) => {
      const parsed = parseChatCompletion(request.body as Body);
      const answer = await admitEntryRequest(settings, request, reply, parsed);
      if (!parsed.stream) return reply.status(200).send(completion(answer));
      const includeUsage = (request.body as { stream_options?: { include_usage?: boolean } }).stream_options?.include_usage === true;
      return sendEvents(reply, chunks(answer, includeUsage));
    },
  );
}
