/**
 * The Anthropic-native entry: `POST /anthropic/v1/messages`, so that
 * `new Anthropic({ baseURL: 'http://host/anthropic', apiKey })` works (the
 * key comes as `x-api-key`). What it carries: `model` (an alias),
 * `max_tokens`, `system` (text), `messages` (user and assistant text),
 * `temperature`, `stream`; `metadata` is accepted and ignored. Any other
 * field (tools, images, stop sequences, sampling beyond temperature) is a
 * 400 naming it.
 */
import type { FastifyInstance } from 'fastify';
import type { ChatMessage } from '../../providers/types';
import type { ProblemError } from '../problems';
import { admitEntryRequest, invalid, notCarried, sendEvents, type EntryAnswer, type EntryRequest, type EntrySettings } from './entry';

const CARRIED = new Set(['model', 'max_tokens', 'system', 'messages', 'temperature', 'stream', 'metadata']);

type Body = Record<string, unknown>;

function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(at, 'must be a string or an array of text blocks');
  return content
    .map((block, index) => {
      const { type, text, ...rest } = (block ?? {}) as Body;
      if (type !== 'text') throw notCarried(`${at}.${index}.type`, `only text blocks are carried (this one is ${JSON.stringify(type)})`);
      const extra = Object.keys(rest)[0];
      if (extra) throw notCarried(`${at}.${index}.${extra}`);
      if (typeof text !== 'string') throw invalid(`${at}.${index}.text`, 'must be a string');
      return text;
    })
    .join('');
}

/** The request, as the alias's canonical input. @throws ProblemError 400 naming the field. */
export function parseMessages(body: Body): EntryRequest {
  for (const field of Object.keys(body)) if (!CARRIED.has(field)) throw notCarried(field);
  if (typeof body.model !== 'string' || body.model === '') throw invalid('model', 'must name a model alias');
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) throw invalid('max_tokens', 'is required: a whole number of at least 1');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalid('messages', 'must be a non-empty array');
  const system: ChatMessage[] = body.system === undefined ? [] : [{ role: 'system', content: textOf(body.system, 'system') }];
  const messages: ChatMessage[] = body.messages.map((message, index) => {
    const at = `messages.${index}`;
    const { role, content, ...rest } = (message ?? {}) as Body;
    const extra = Object.keys(rest)[0];
    if (extra) throw notCarried(`${at}.${extra}`);
    if (role !== 'user' && role !== 'assistant') throw invalid(`${at}.role`, 'must be user or assistant');
    return { role, content: textOf(content, `${at}.content`) };
  });
  if (body.temperature !== undefined && typeof body.temperature !== 'number') throw invalid('temperature', 'must be a number');
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw invalid('stream', 'must be a boolean');
  return {
    model: body.model,
    input: { messages: [...system, ...messages], maxTokens: body.max_tokens as number, ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}) },
    stream: body.stream === true,
    wantsJson: false,
    fieldNames: { maxTokens: 'max_tokens' },
  };
}

function message(answer: EntryAnswer) {
  return {
    id: `msg_${answer.jobId}`,
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content: [{ type: 'text', text: answer.content }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: answer.inputTokens, output_tokens: answer.outputTokens },
  };
}

/** The stored answer as the protocol's events: the message, one text block with the whole text, its end. */
function events(answer: EntryAnswer): string[] {
  const event = (type: string, value: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...value })}\n\n`;
  const whole = message(answer);
  return [
    event('message_start', { message: { ...whole, content: [], stop_reason: null, usage: { input_tokens: answer.inputTokens, output_tokens: 0 } } }),
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: answer.content } }),
    event('content_block_stop', { index: 0 }),
    event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: answer.outputTokens } }),
    event('message_stop', {}),
  ];
}

const ERROR_TYPES: Record<number, string> = { 400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 409: 'invalid_request_error', 413: 'request_too_large', 429: 'rate_limit_error', 503: 'overloaded_error' };

/** A problem in Anthropic's error shape (the SDK raises its own error class by the status). */
export function anthropicError(problem: ProblemError): unknown {
  return { type: 'error', error: { type: ERROR_TYPES[problem.status] ?? (problem.status >= 500 ? 'api_error' : 'invalid_request_error'), message: problem.message } };
}

export async function registerAnthropicEntry(app: FastifyInstance, settings: EntrySettings): Promise<void> {
  app.post(
    '/v1/messages',
    {
      config: { rateLimit: {} },
      schema: {
        // Not Onceflow's own API (openapi.json): the OpenAI and Anthropic protocols, docs/entries.md.
        hide: true,
        operationId: 'anthropicMessages',
        tags: ['entries'],
        summary: 'Anthropic-native messages of a model alias',
        description:
          'A job of the alias the body names as model, keyed by the principal (x-api-key or Authorization: Bearer), the alias and the Idempotency-Key header (required). The answer is the winning attempt\'s message; a replay returns it byte for byte with Idempotent-Replayed: true. 409 with Retry-After while the job runs (the SDK retries with the same key and attaches). Errors are {"type": "error", "error": {type, message}}. See docs/entries.md.',
        body: { type: 'object' },
      },
    },
    async (request, reply) => {
      const parsed = parseMessages(request.body as Body);
      const answer = await admitEntryRequest(settings, request, reply, parsed);
      if (!parsed.stream) return reply.status(200).send(message(answer));
      return sendEvents(reply, events(answer));
    },
  );
}
