/**
 * The simulated messaging downstream (SIM.md): a real HTTP server that
 * records every delivery and, unless told to, does *not* deduplicate by
 * `Idempotency-Key`, so a duplicate send shows up as two messages. Faults are
 * chosen per delivery by `@sink(<behaviour>)` directives in the message text;
 * a lie about its own claims (downstream-lies.ts) is chosen at start.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { sinkBehaviourFor, type SinkBehaviour } from './directives';
import { DEFAULT_LOOKUP_LAG_MS, DownstreamLie, STORED_KEY_LENGTH, isDownstreamLie } from './downstream-lies';
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

/** One recorded delivery. */
export interface Delivery {
  /** Random per delivery: two deliveries with one key are visibly two messages. */
  readonly messageId: string;
  readonly idempotencyKey: string;
  readonly ticketId: string;
  readonly channel: string;
  readonly text: string;
  /** ISO-8601. */
  readonly receivedAt: string;
}

/** What the downstream returns for a delivery, and what recovery looks up by key. */
export interface DeliveryReceipt {
  readonly messageId: string;
  readonly idempotencyKey: string;
  readonly ticketId: string;
  /** ISO-8601. */
  readonly receivedAt: string;
}

/** A running simulated downstream. */
export interface SimDownstream {
  /** Base URL without a path, e.g. `http://127.0.0.1:7310`. */
  readonly url: string;
  readonly port: number;
  /** The claim it breaks, if any. */
  readonly lie: DownstreamLie | undefined;
  /** How long a delivery stays out of the lookup under `lookup-slow-to-show`. */
  readonly lookupLagMs: number;
  /** Snapshot of every recorded delivery, in arrival order: the truth, whatever the lie. */
  deliveries(): Delivery[];
  /** Stops the server, destroying open connections and pending timers. */
  close(): Promise<void>;
}

export interface SimDownstreamOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a random free port. */
  port?: number;
  /** Answer a repeated key with the first receipt instead of a new message. Default false. */
  dedupe?: boolean;
  /** A claim to break (docs/simulators.md). Default none: honest. */
  lie?: DownstreamLie;
  /** With `lookup-slow-to-show`: how long a delivery stays out of the lookup. Default DEFAULT_LOOKUP_LAG_MS. */
  lookupLagMs?: number;
  /** Epoch milliseconds, for `receivedAt` and the lookup lag. Default Date.now. */
  now?: () => number;
}

/** One delivery as stored, with when the lookup may show it. */
interface Stored {
  readonly delivery: Delivery;
  readonly visibleAtMs: number;
}

/**
 * Starts a simulated downstream.
 * @throws TypeError for an unknown `lie`; RangeError if `lookupLagMs` is not a
 * whole number of milliseconds (0 or more); the listen error (e.g.
 * `EADDRINUSE`) if the port cannot be bound.
 */
export async function startSimDownstream(options: SimDownstreamOptions = {}): Promise<SimDownstream> {
  const host = options.host ?? '127.0.0.1';
  const { lie, now = Date.now } = options;
  if (lie !== undefined && !isDownstreamLie(lie)) throw new TypeError(`the downstream knows no lie ${String(lie)}`);
  const lookupLagMs = options.lookupLagMs ?? DEFAULT_LOOKUP_LAG_MS;
  if (!Number.isSafeInteger(lookupLagMs) || lookupLagMs < 0) throw new RangeError(`lookupLagMs must be a whole number of milliseconds, 0 or more (got ${lookupLagMs})`);
  // The liar about dedupe answers like a deduplicating downstream, whatever `dedupe` says; it only never does it.
  const dedupe = (options.dedupe ?? false) && lie !== DownstreamLie.dedupeRecordsTwice;
  const stored: Stored[] = [];
  // Made up once per key, so asking twice cannot give the lie away.
  const madeUp = new Map<string, DeliveryReceipt>();
  const lifecycle = createSimServer(route, sendError);

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    if (url.pathname === '/v1/messages' && req.method === 'POST') {
      await deliver(req, res);
      return;
    }
    if (url.pathname === '/v1/messages' && req.method === 'GET') {
      const ticketId = url.searchParams.get('ticketId');
      const messages = stored.map((s) => s.delivery).filter((d) => ticketId === null || d.ticketId === ticketId);
      sendJson(res, 200, { messages });
      return;
    }
    const byKey = /^\/v1\/messages\/by-key\/([^/]+)$/.exec(url.pathname);
    if (byKey && req.method === 'GET') {
      lookUp(res, decodeURIComponent(byKey[1] ?? ''));
      return;
    }
    sendError(res, 404, `no route for ${req.method ?? '?'} ${url.pathname}`);
  }

  async function deliver(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let message: { ticketId: string; channel: string; text: string };
    try {
      message = parseMessage(await readJsonBody(req));
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      sendError(res, error.status, error.message);
      return;
    }
    const idempotencyKey = headerValue(req, 'idempotency-key');
    if (idempotencyKey === undefined) {
      sendError(res, 400, 'the Idempotency-Key header is required');
      return;
    }
    const behaviour: SinkBehaviour = sinkBehaviourFor(message.text);
    if (behaviour.kind === 'status') {
      sendError(res, behaviour.code, `simulated status=${behaviour.code}`);
      return;
    }

    // What it keeps of the key is what it deduplicates on, and what its receipt echoes.
    const storedKey = lie === DownstreamLie.lookupTransformedKey ? idempotencyKey.slice(0, STORED_KEY_LENGTH) : idempotencyKey;
    const earlier = stored.find((s) => s.delivery.idempotencyKey === storedKey)?.delivery;
    let status: 200 | 201;
    let receipt: DeliveryReceipt;
    if (dedupe && earlier) {
      status = 200;
      receipt = receiptOf(earlier);
    } else {
      const receivedAtMs = now();
      const delivery: Delivery = {
        messageId: newMessageId(),
        idempotencyKey: storedKey,
        ...message,
        receivedAt: new Date(receivedAtMs).toISOString(),
      };
      // 0: visible at once, whatever an injected clock does next.
      stored.push({ delivery, visibleAtMs: lie === DownstreamLie.lookupSlowToShow ? receivedAtMs + lookupLagMs : 0 });
      // The dedupe liar's repeat says 200, as a deduplicated one would, over its second message.
      status = earlier && lie === DownstreamLie.dedupeRecordsTwice ? 200 : 201;
      receipt = receiptOf(delivery);
    }

    switch (behaviour.kind) {
      case 'ok':
        sendJson(res, status, receipt);
        return;
      case 'reset':
        resetConnection(req);
        return;
      case 'reset-once':
        // "Once" per key: only the delivery that found no earlier one is reset.
        if (earlier) sendJson(res, status, receipt);
        else resetConnection(req);
        return;
      case 'delay':
        lifecycle.after(behaviour.ms, () => sendJson(res, status, receipt));
        return;
    }
  }

  /** The receipt recovery looks up: the first delivery made with `key` (compared as given), or 404, unless the downstream lies. */
  function lookUp(res: http.ServerResponse, key: string): void {
    const notFound = () => sendError(res, 404, `no delivery with Idempotency-Key ${key}`);
    if (lie === DownstreamLie.lookupNeverFound) return notFound();
    const atMs = now();
    const first = stored.find((s) => s.delivery.idempotencyKey === key && s.visibleAtMs <= atMs);
    if (first) return sendJson(res, 200, receiptOf(first.delivery));
    if (lie !== DownstreamLie.lookupFoundForAnything) return notFound();
    let receipt = madeUp.get(key);
    if (!receipt) {
      receipt = { messageId: newMessageId(), idempotencyKey: key, ticketId: 'unknown', receivedAt: new Date(atMs).toISOString() };
      madeUp.set(key, receipt);
    }
    sendJson(res, 200, receipt);
  }

  const port = await lifecycle.listen(host, options.port ?? 0);
  return {
    url: `http://${urlHost(host)}:${port}`,
    port,
    lie,
    lookupLagMs,
    deliveries: () => stored.map((s) => ({ ...s.delivery })),
    close: () => lifecycle.close(),
  };
}

/** Random: two deliveries with one key are visibly two messages. */
function newMessageId(): string {
  return `msg_${randomBytes(8).toString('hex')}`;
}

function receiptOf(delivery: Delivery): DeliveryReceipt {
  const { messageId, idempotencyKey, ticketId, receivedAt } = delivery;
  return { messageId, idempotencyKey, ticketId, receivedAt };
}

/**
 * Validates a delivery body.
 * @throws BodyError 400 unless it is `{ ticketId, channel, text }`, all strings.
 */
function parseMessage(body: unknown): { ticketId: string; channel: string; text: string } {
  if (
    !isJsonObject(body) ||
    typeof body.ticketId !== 'string' ||
    body.ticketId === '' ||
    typeof body.channel !== 'string' ||
    typeof body.text !== 'string'
  ) {
    throw new BodyError(400, 'body must be { "ticketId": string, "channel": string, "text": string }');
  }
  return { ticketId: body.ticketId, channel: body.channel, text: body.text };
}

function sendError(res: http.ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: { message, status } });
}
