/**
 * The plumbing both simulators share: reading JSON bodies, answering JSON,
 * listening, and a lifecycle that can tear everything down at once, because
 * the simulators deliberately leave sockets hanging and timers pending.
 */
import http from 'node:http';

/** Largest request body a simulator accepts; prompts are small. */
export const MAX_BODY_BYTES = 1_048_576;

/** A request body that could not be read as JSON. */
export class BodyError extends Error {
  override readonly name = 'BodyError';

  constructor(
    readonly status: 400 | 413,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Reads the whole request body and parses it as JSON.
 * @throws BodyError 413 if larger than MAX_BODY_BYTES, 400 if not JSON.
 */
export async function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) {
      throw new BodyError(413, `request body exceeds ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new BodyError(400, 'request body is not valid JSON', { cause });
  }
}

/** Answers `status` with `body` as JSON, unless the client is already gone. */
export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.writableEnded) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(payload)),
  });
  res.end(payload);
}

/**
 * Resets the connection (TCP RST) without answering: to the client, the
 * request may or may not have been acted upon.
 */
export function resetConnection(req: http.IncomingMessage): void {
  req.socket.resetAndDestroy();
}

/** True if `value` is a plain JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first value of a request header, or undefined if absent or empty. */
export function headerValue(req: http.IncomingMessage, name: string): string | undefined {
  const raw = req.headers[name.toLowerCase()];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined || value === '' ? undefined : value;
}

/**
 * Owns one HTTP server with its connections and pending timers, so `close()`
 * returns promptly even with hanging requests and jest can exit cleanly.
 */
export class ServerLifecycle {
  private readonly timers = new Set<NodeJS.Timeout>();
  private closing: Promise<void> | undefined;

  constructor(readonly server: http.Server) {}

  /** True once close() was called; pending work must not answer any more. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** Runs `fn` after `ms`, unless the server is closed first. */
  after(ms: number, fn: () => void): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  /**
   * Starts listening.
   * @throws the listen error, e.g. `EADDRINUSE` if the port is taken.
   */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error): void => reject(error);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        const address = this.server.address();
        if (address === null || typeof address === 'string') {
          reject(new Error(`unexpected listen address ${String(address)}`));
          return;
        }
        resolve(address.port);
      });
    });
  }

  /** Stops listening, cancels pending timers and destroys every open socket. Idempotent. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.closing = new Promise<void>((resolve) => {
      if (!this.server.listening) {
        resolve();
        return;
      }
      this.server.close(() => resolve());
    });
    // Also ends connections with a request still waiting (hang, delay), which close() alone would wait for.
    this.server.closeAllConnections();
    return this.closing;
  }
}

/**
 * An HTTP server whose requests go to `route`; a route that throws is
 * answered 500 through `fail` (each simulator has its own error body).
 * Returns the lifecycle that listens, schedules and tears it all down.
 */
export function createSimServer(
  route: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>,
  fail: (res: http.ServerResponse, status: number, message: string) => void,
): ServerLifecycle {
  const server = http.createServer();
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    route(req, res).catch((error: unknown) => {
      fail(res, 500, `simulator failure: ${String(error)}`);
    });
  });
  return new ServerLifecycle(server);
}
