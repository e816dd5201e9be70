/**
 * The drills' own fault proxy: every request of a drill goes through it to the
 * downstream, so each is recorded as the downstream answered it, and one
 * answer can be lost *after* the downstream acted — the disconnect recovery
 * has to survive, made on demand without the downstream's help.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { urlHost } from '../../url-host';

/** One request the proxy saw, in arrival order. */
export interface ProxiedRequest {
  readonly method: string;
  /** Path and query, as the client sent them. */
  readonly path: string;
  /** The status the client was answered with; absent when it got no answer (dropped, target unreachable). */
  readonly status?: number;
  /** The status the target answered with, also when the client never saw it. */
  readonly targetStatus?: number;
  /** Its answer was dropped on purpose (dropNextAnswer). */
  readonly dropped: boolean;
  /** Why the target gave no answer: the transport error. */
  readonly error?: string;
}

/** A running fault proxy. */
export interface FaultProxy {
  /** Base URL without a path, e.g. `http://127.0.0.1:41234`: the origin to send the drills to. */
  readonly url: string;
  /** Stops listening, ending open connections, its own to the target too. Idempotent. */
  close(): Promise<void>;
  /**
   * The next request to arrive is forwarded, the target's whole answer read,
   * and then the client's connection reset without an answer. Each call drops
   * one more answer, in arrival order.
   */
  dropNextAnswer(): void;
  /** Snapshot of every request so far. */
  requests(): ProxiedRequest[];
}

export interface FaultProxyOptions {
  /** The downstream's origin (`https://payments.example`); requests keep their own path. */
  target: string;
  /** Where the proxy listens. Default 127.0.0.1, on a free port. */
  host?: string;
}

// Meant for one connection, not to be passed on (RFC 9110 §7.6.1); framing is redone from the buffered body.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/**
 * Starts a fault proxy in front of `target`. It follows no redirect: a 3xx is
 * an answer, passed on as it came.
 * @throws TypeError if `target` is not an http(s) origin (a path other than
 * `/`, a query or credentials would be ambiguous); the listen error if the
 * host cannot be bound.
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = targetOrigin(options.target);
  const host = options.host ?? '127.0.0.1';
  const client = target.protocol === 'https:' ? https : http;
  // Its own agent, so close() can end the connections to the target as well; a fresh connection each
  // request, so a kept-alive one the target has just closed can never pass for the target's failure.
  const agent = new client.Agent({ keepAlive: false });
  const seen: Array<{ -readonly [K in keyof ProxiedRequest]: ProxiedRequest[K] }> = [];
  let dropsPending = 0;

  const server = http.createServer((req, res) => {
    const record: (typeof seen)[number] = { method: req.method ?? 'GET', path: req.url ?? '/', dropped: false };
    seen.push(record);
    // Taken at arrival: "the next request" is the next to come in, not the next to finish.
    const drop = dropsPending > 0;
    if (drop) dropsPending -= 1;
    readAll(req).then(
      async (body) => {
        const answer = await forward(req, body);
        if ('error' in answer) {
          record.error = answer.error;
          // No answer came, so the client gets none; it cannot be told "refused" once connected.
          resetClient(req);
          return;
        }
        record.targetStatus = answer.status;
        if (drop) {
          record.dropped = true;
          resetClient(req);
          return;
        }
        record.status = answer.status;
        res.writeHead(answer.status, answer.statusMessage, answer.headers);
        res.end(answer.body);
      },
      () => req.socket.destroy(),
    );
  });

  /** Sends one request on to the target and reads its whole answer; a transport failure is returned, not thrown. */
  function forward(req: http.IncomingMessage, body: Buffer): Promise<TargetAnswer | { error: string }> {
    const headers = passedOn(req.headers);
    headers.host = target.host;
    // The client's framing is redone for the buffered body; a request that had none gets none.
    if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) headers['content-length'] = String(body.length);
    return new Promise((resolve) => {
      const outgoing = client.request(
        { protocol: target.protocol, hostname: target.hostname.replace(/^\[|\]$/g, ''), port: target.port, method: req.method, path: req.url, headers, agent },
        (incoming) => {
          readAll(incoming).then(
            (answerBody) => {
              const answerHeaders = passedOn(incoming.headers);
              if (incoming.headers['transfer-encoding'] !== undefined) answerHeaders['content-length'] = String(answerBody.length);
              resolve({ status: incoming.statusCode ?? 502, statusMessage: incoming.statusMessage ?? '', headers: answerHeaders, body: answerBody });
            },
            (error: Error) => resolve({ error: transportError(error) }),
          );
        },
      );
      outgoing.on('error', (error) => resolve({ error: transportError(error) }));
      outgoing.end(body);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost(host)}:${port}`,
    dropNextAnswer: () => void (dropsPending += 1),
    requests: () => seen.map((record) => ({ ...record })),
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      });
      return closing;
    },
  };
}

interface TargetAnswer {
  status: number;
  statusMessage: string;
  headers: http.OutgoingHttpHeaders;
  body: Buffer;
}

/** @throws TypeError unless `raw` is an absolute http(s) URL naming only an origin. */
function targetOrigin(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new TypeError('the fault proxy target is not an absolute URL', { cause });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`the fault proxy target must be http or https, not ${url.protocol}`);
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new TypeError('the fault proxy target must be an origin only (scheme, host, port): requests keep their own path');
  }
  return url;
}

/** The headers a proxy passes on: all but the hop-by-hop ones, and those the Connection header names. */
function passedOn(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(String(headers.connection ?? '').split(',').map((name) => name.trim().toLowerCase()));
  const kept: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named.has(name)) kept[name] = value;
  }
  return kept;
}

function readAll(stream: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
    // An answer cut short ends with 'aborted'/'close' before 'end' on older streams.
    stream.on('close', () => {
      if (!stream.complete) reject(new Error('the connection closed before the whole message came'));
    });
  });
}

/** TCP RST, no answer: to the client, the request may or may not have been acted upon. */
function resetClient(req: http.IncomingMessage): void {
  // Already gone (the client left, or close() ended it): nothing to reset.
  if (!req.socket.destroyed) req.socket.resetAndDestroy();
}

function transportError(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ? `${code}: ${error.message}` : error.message;
}
