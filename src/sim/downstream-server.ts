/**
 * The simulated messaging downstream (SIM.md): a real HTTP server that
 * records every delivery and, unless told to, does *not* deduplicate by
 * `Idempotency-Key`, so a duplicate send shows up as two messages. Faults are
 * chosen per delivery by `@sink(<behaviour>)` directives in the message text.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { sinkBehaviourFor, type SinkBehaviour } from './directives';
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
  /** Snapshot of every recorded delivery, in arrival order. */
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
}

/**
 * Starts a simulated downstream.
 * @throws the listen error (e.g. `EADDRINUSE`) if the port cannot be bound.
 */
export async function startSimDownstream(options: SimDownstreamOptions = {}): Promise<SimDownstream> {
  const host = options.host ?? '127.0.0.1';
  const dedupe = options.dedupe ?? false;
  const deliveries: Delivery[] = [];
  const lifecycle = createSimServer(route, sendError);

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    if (url.pathname === '/v1/messages' && req.method === 'POST') {
      await deliver(req, res);
      return;
    }
    if (url.pathname === '/v1/messages' && req.method === 'GET') {
      const ticketId = url.searchParams.get('ticketId');
      const messages = deliveries.filter((d) => ticketId === null || d.ticketId === ticketId);
      sendJson(res, 200, { messages });
      return;
    }
    const byKey = /^\/v1\/messages\/by-key\/([^/]+)$/.exec(url.pathname);
    if (byKey && req.method === 'GET') {
      const key = decodeURIComponent(byKey[1] ?? '');
      const first = deliveries.find((d) => d.idempotencyKey === key);
      if (first) sendJson(res, 200, receiptOf(first));
      else sendError(res, 404, `no delivery with Idempotency-Key ${key}`);
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

    const earlier = deliveries.find((d) => d.idempotencyKey === idempotencyKey);
    let status: 200 | 201;
    let receipt: DeliveryReceipt;
    if (dedupe && earlier) {
      status = 200;
      receipt = receiptOf(earlier);
    } else {
      const delivery: Delivery = {
        messageId: `msg_${randomBytes(8).toString('hex')}`,
        idempotencyKey,
        ...message,
        receivedAt: new Date().toISOString(),
      };
      deliveries.push(delivery);
      status = 201;
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

  const port = await lifecycle.listen(host, options.port ?? 0);
  return {
    url: `http://${urlHost(host)}:${port}`,
    port,
    deliveries: () => deliveries.map((d) => ({ ...d })),
    close: () => lifecycle.close(),
  };
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
