/**
 * The simulated AI provider (SIM.md): a real HTTP server speaking the
 * OpenAI-compatible chat-completions protocol, failing on demand as chosen by
 * `@sim(<provider>:<behaviour>)` directives in the messages, and exposing what
 * it executed through `GET /v1/requests/{requestId}` for reconciliation.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { describeBehaviour, simBehaviourFor, type SimBehaviour } from './directives';
import {
  buildCompletion,
  messagesText,
  type CompletionStyle,
  type SimChatCompletion,
  type SimChatMessage,
} from './completion';
import {
  BodyError,
  createSimServer,
  headerValue,
  isJsonObject,
  readJsonBody,
  resetConnection,
  sendJson,
} from './sim-http';
import { urlHost } from '../url-host';

export type { SimChatCompletion, SimChatMessage } from './completion';

/** Where a recorded request stands, as the lookup endpoint reports it. */
export const SIM_REQUEST_STATUS = {
  executing: 'executing',
  completed: 'completed',
} as const;
export type SimRequestStatus = (typeof SIM_REQUEST_STATUS)[keyof typeof SIM_REQUEST_STATUS];

/** One request the provider received and acted upon (started executing). */
export interface SimRequestRecord {
  /** The `Idempotency-Key` header, else `x-request-id`, else generated. */
  readonly requestId: string;
  readonly status: SimRequestStatus;
  readonly behaviour: SimBehaviour;
  readonly model: string;
  readonly messages: readonly SimChatMessage[];
  /** ISO-8601. */
  readonly receivedAt: string;
  /** ISO-8601, null while executing. */
  readonly completedAt: string | null;
  /** The response body it produced, null while executing. */
  readonly output: SimChatCompletion | null;
}

/** Body of `GET /v1/requests/{requestId}`. */
export interface SimRequestLookup {
  readonly requestId: string;
  readonly status: SimRequestStatus;
  readonly output: SimChatCompletion | null;
}

/** A running simulated provider. */
export interface SimProvider {
  readonly name: string;
  /** Base URL ending in `/v1`: what an OpenAI SDK takes as `baseURL`. */
  readonly url: string;
  readonly port: number;
  /** Snapshot of every recorded request, in arrival order. */
  requests(): SimRequestRecord[];
  /** Stops the server, destroying hanging connections and pending timers. */
  close(): Promise<void>;
}

/** Model ids listed by `GET /v1/models`; chat completions accept any model. */
export const SIM_MODELS = ['sim-small', 'sim-large'] as const;

export interface SimProviderOptions {
  /** Provider name, matched by `@sim(<name>:...)` and shown in replies. */
  name: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a random free port. */
  port?: number;
}

type MutableRecord = { -readonly [K in keyof SimRequestRecord]: SimRequestRecord[K] };

/**
 * Starts a simulated provider.
 * @throws the listen error (e.g. `EADDRINUSE`) if the port cannot be bound.
 */
export async function startSimProvider(options: SimProviderOptions): Promise<SimProvider> {
  const { name } = options;
  const host = options.host ?? '127.0.0.1';
  const records: MutableRecord[] = [];
  const lifecycle = createSimServer(route, sendError);

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const { pathname } = new URL(req.url ?? '/', 'http://sim.invalid');
    if (req.method === 'POST' && pathname === '/v1/chat/completions') {
      await chatCompletion(req, res);
      return;
    }
    if (req.method === 'GET' && pathname === '/v1/models') {
      const data = SIM_MODELS.map((id) => ({ id, object: 'model', created: 0, owned_by: 'onceflow-sim' }));
      sendJson(res, 200, { object: 'list', data });
      return;
    }
    const lookup = /^\/v1\/requests\/([^/]+)$/.exec(pathname);
    if (req.method === 'GET' && lookup) {
      lookupRequest(res, decodeURIComponent(lookup[1] ?? ''));
      return;
    }
    sendError(res, 404, `no route for ${req.method ?? '?'} ${pathname}`);
  }

  async function chatCompletion(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let parsed: { model: string; messages: SimChatMessage[] };
    try {
      parsed = parseChatRequest(await readJsonBody(req));
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      sendError(res, error.status, error.message);
      return;
    }
    const requestId =
      headerValue(req, 'idempotency-key') ??
      headerValue(req, 'x-request-id') ??
      `req_${randomBytes(12).toString('hex')}`;
    const behaviour = simBehaviourFor(name, messagesText(parsed.messages));

    // Faults that execute nothing, so nothing is recorded and lookup stays 404.
    if (behaviour.kind === 'status') {
      // A chosen Retry-After is sent with any status; a 429 without one says 1 s, as before.
      const retryAfter = behaviour.retryAfterS ?? (behaviour.code === 429 ? 1 : undefined);
      const headers: Record<string, string> = retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) };
      sendError(res, behaviour.code, `simulated ${describeBehaviour(behaviour)} from ${name}`, headers);
      return;
    }
    if (behaviour.kind === 'refuse') {
      // A plain close (FIN), unlike `reset`'s RST: the request was read only to find this directive.
      req.socket.destroy();
      return;
    }

    const record: MutableRecord = {
      requestId,
      status: SIM_REQUEST_STATUS.executing,
      behaviour,
      model: parsed.model,
      messages: parsed.messages,
      receivedAt: new Date().toISOString(),
      completedAt: null,
      output: null,
    };
    records.push(record);
    const answer = (): void => {
      sendJson(res, 200, complete(record, styleOf(behaviour)), { 'x-request-id': requestId });
    };

    switch (behaviour.kind) {
      case 'ok':
      case 'extra-key':
      case 'prose':
        answer();
        return;
      case 'reset':
        complete(record, 'json');
        resetConnection(req);
        return;
      case 'hang':
        // Never answers: the socket stays open until the client gives up or close().
        return;
      case 'delay':
      case 'late':
        // Same mechanism, two intents: `delay` probes the attempt timeout,
        // `late` outlives it. Either way the work completes even if the client left.
        lifecycle.after(behaviour.ms, answer);
        return;
    }
  }

  function complete(record: MutableRecord, style: CompletionStyle): SimChatCompletion {
    const now = Date.now();
    const output = buildCompletion({
      provider: name,
      requestId: record.requestId,
      model: record.model,
      messages: record.messages,
      style,
      createdAtMs: now,
    });
    record.status = SIM_REQUEST_STATUS.completed;
    record.completedAt = new Date(now).toISOString();
    record.output = output;
    return output;
  }

  function lookupRequest(res: http.ServerResponse, requestId: string): void {
    const matching = records.filter((r) => r.requestId === requestId);
    // A key sent twice: report the work that got done, if any did.
    const record = matching.find((r) => r.status === SIM_REQUEST_STATUS.completed) ?? matching[0];
    if (!record) {
      sendError(res, 404, `no request ${requestId} was received by ${name}`);
      return;
    }
    const body: SimRequestLookup = { requestId, status: record.status, output: record.output };
    sendJson(res, 200, body);
  }

  const port = await lifecycle.listen(host, options.port ?? 0);
  return {
    name,
    url: `http://${urlHost(host)}:${port}/v1`,
    port,
    requests: () => records.map((r) => structuredClone(r)),
    close: () => lifecycle.close(),
  };
}

function styleOf(behaviour: SimBehaviour): CompletionStyle {
  if (behaviour.kind === 'extra-key') return 'extra-key';
  if (behaviour.kind === 'prose') return 'prose';
  return 'json';
}

/**
 * Validates the parts of a chat-completion request the simulator uses.
 * @throws BodyError 400 when `model` or `messages` is missing or malformed.
 */
function parseChatRequest(body: unknown): { model: string; messages: SimChatMessage[] } {
  if (!isJsonObject(body)) throw new BodyError(400, 'request body must be a JSON object');
  const { model, messages } = body;
  if (typeof model !== 'string' || model === '') {
    throw new BodyError(400, "'model' must be a non-empty string");
  }
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new BodyError(400, "'messages' must be a non-empty array");
  }
  return {
    model,
    messages: messages.map((message, index) => {
      if (!isJsonObject(message) || typeof message.role !== 'string') {
        throw new BodyError(400, `'messages[${index}]' must be an object with a string 'role'`);
      }
      return { role: message.role, content: contentText(message.content) };
    }),
  };
}

// Content is a string, or an array of parts of which only text parts matter here.
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    return content
      .map((part) => (isJsonObject(part) && typeof part.text === 'string' ? part.text : ''))
      .filter((text) => text !== '')
      .join('\n');
  }
  return JSON.stringify(content);
}

function sendError(
  res: http.ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { message, type: errorType(status), code: errorCode(status) } }, headers);
}

// The `type` values the OpenAI API uses, so SDK error classes map as for the real thing.
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function errorCode(status: number): string {
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limit_exceeded';
  if (status === 413) return 'request_too_large';
  if (status >= 500) return 'server_error';
  return 'invalid_request';
}
