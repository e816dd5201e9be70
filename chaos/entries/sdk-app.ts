/**
 * The round's app: it calls the entries with the official `openai` and
 * `@anthropic-ai/sdk` clients, their own retries on, as an app written for
 * them does. When the SDK gives up (its retries spent on a dead API, a job
 * still running), the app calls again with the same Idempotency-Key until
 * the trial's deadline: one intent, one key, however many requests.
 *
 * Every HTTP answer the SDK got is recorded through its `fetch` option, and
 * the first answers of an intent may be cut there, after Onceflow sent them
 * (the app sees a reset connection, the SDK retries).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { sleep } from '../context';
import { messageOf, type EntryIntentPlan } from './plan';

/** One HTTP answer the SDK got (or did not). */
export interface RawExchange {
  label: string;
  key: string;
  startedAt: number;
  endedAt: number;
  /** The HTTP status; 0 when no answer came (a refused or reset connection). */
  status: number;
  /** The answer came, and the suite dropped it before the SDK read it. */
  cut: boolean;
  jobId?: string;
  replayed: boolean;
  /** A JSON answer's bytes, as sent. */
  body?: string;
}

/** What one SDK call (the SDK's own retries included) returned to the app. */
export interface SdkCall {
  label: string;
  key: string;
  protocol: 'openai' | 'anthropic';
  stream: boolean;
  /** This call sent the intent's other message on its key. */
  conflicting: boolean;
  startedAt: number;
  endedAt: number;
  answer?: { id: string; text: string; inputTokens?: number; outputTokens?: number };
  error?: { name: string; status?: number; message: string };
}

export interface AppRecord {
  exchanges: RawExchange[];
  calls: SdkCall[];
}

/** Per request: how long the SDK waits for an answer, and how often it retries by itself. */
const SDK_TIMEOUT_MS = 10_000;
const SDK_MAX_RETRIES = 6;

export class EntriesApp {
  readonly record: AppRecord = { exchanges: [], calls: [] };
  /** Answers still to cut, per key. */
  private readonly cuts = new Map<string, number>();

  constructor(
    private readonly apiUrl: string,
    private readonly apiKey: string,
  ) {}

  cutFirst(key: string, count: number): void {
    if (count > 0) this.cuts.set(key, count);
  }

  private fetchFor(label: string, key: string) {
    return async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const exchange: RawExchange = { label, key, startedAt: Date.now(), endedAt: 0, status: 0, cut: false, replayed: false };
      this.record.exchanges.push(exchange);
      let response: Response;
      try {
        response = await fetch(url, init);
      } catch (err) {
        exchange.endedAt = Date.now();
        throw err;
      }
      exchange.status = response.status;
      exchange.replayed = response.headers.get('idempotent-replayed') === 'true';
      const jobId = response.headers.get('onceflow-job-id');
      if (jobId) exchange.jobId = jobId;
      const left = this.cuts.get(key) ?? 0;
      if (left > 0) {
        this.cuts.set(key, left - 1);
        await response.arrayBuffer().catch(() => undefined);
        exchange.cut = true;
        exchange.endedAt = Date.now();
        throw new TypeError('fetch failed: the connection was reset (the chaos suite cut the answer)');
      }
      if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) exchange.body = await response.clone().text();
      exchange.endedAt = Date.now();
      return response;
    };
  }

  private openai(label: string, key: string): OpenAI {
    return new OpenAI({ baseURL: `${this.apiUrl}/openai/v1`, apiKey: this.apiKey, maxRetries: SDK_MAX_RETRIES, timeout: SDK_TIMEOUT_MS, fetch: this.fetchFor(label, key) });
  }

  private anthropic(label: string, key: string): Anthropic {
    return new Anthropic({ baseURL: `${this.apiUrl}/anthropic`, apiKey: this.apiKey, maxRetries: SDK_MAX_RETRIES, timeout: SDK_TIMEOUT_MS, fetch: this.fetchFor(label, key) });
  }

  /** One SDK call, recorded; never throws. */
  async call(intent: EntryIntentPlan, label: string, options: { text?: string; stream?: boolean } = {}): Promise<SdkCall> {
    const stream = options.stream ?? intent.stream;
    const text = options.text ?? messageOf(intent);
    const call: SdkCall = { label, key: intent.key, protocol: intent.protocol, stream, conflicting: options.text !== undefined, startedAt: Date.now(), endedAt: 0 };
    const headers = { headers: { 'Idempotency-Key': intent.key } };
    try {
      if (intent.protocol === 'openai') {
        const client = this.openai(label, intent.key);
        const body = { model: intent.alias, messages: [{ role: 'user' as const, content: text }] };
        const completion = stream
          ? await client.chat.completions.stream({ ...body, stream_options: { include_usage: true } }, headers).finalChatCompletion()
          : await client.chat.completions.create(body, headers);
        call.answer = { id: completion.id, text: completion.choices[0]?.message.content ?? '', ...(completion.usage ? { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens } : {}) };
      } else {
        const client = this.anthropic(label, intent.key);
        const body = { model: intent.alias, max_tokens: 512, messages: [{ role: 'user' as const, content: text }] };
        const message = stream ? await client.messages.stream(body, headers).finalMessage() : await client.messages.create(body, headers);
        const textOf = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
        call.answer = { id: message.id, text: textOf, inputTokens: message.usage.input_tokens, outputTokens: message.usage.output_tokens };
      }
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      call.error = { name: (err as Error).constructor?.name ?? 'Error', ...(typeof status === 'number' ? { status } : {}), message: (err as Error).message ?? String(err) };
    }
    call.endedAt = Date.now();
    this.record.calls.push(call);
    return call;
  }

  /**
   * Calls until the SDK returns an answer, or an error no repeat can change
   * (the job failed or was cancelled: x-should-retry false), or the deadline.
   */
  async untilAnswered(intent: EntryIntentPlan, label: string, deadline: number): Promise<SdkCall> {
    for (;;) {
      const call = await this.call(intent, label);
      if (call.answer || isFinal(call) || Date.now() > deadline) return call;
      await sleep(300);
    }
  }
}

/** A final refusal: the job failed (502) or was cancelled (409 not still running), or the request itself was refused. */
export function isFinal(call: SdkCall): boolean {
  const status = call.error?.status;
  if (status === undefined) return false;
  if (status === 409) return !/still running|not ended yet/i.test(call.error!.message);
  return status === 502 || (status >= 400 && status < 500 && status !== 408 && status !== 429);
}
