/**
 * A tiny real HTTP server on loopback for provider tests: records every request
 * (headers and parsed body) and answers with whatever the test's handler does.
 */
import http from 'node:http';
import type { CompletionRequest } from '../../src/providers/types';
import { ProviderCallError, type CallFailure } from '../../src/providers/types';

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: any;
}

export interface FakeServer {
  /** `http://127.0.0.1:<port>`, no path. */
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export type FakeHandler = (request: RecordedRequest, res: http.ServerResponse) => void;

/** Starts the server on a random loopback port. */
export async function startFakeServer(handler: FakeHandler): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: text === '' ? undefined : JSON.parse(text),
      };
      requests.push(recorded);
      handler(recorded, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Hanging responses would otherwise keep close() waiting.
        server.closeAllConnections();
      }),
  };
}

/** Answers `status` with a JSON body and optional headers. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), ...headers });
  res.end(payload);
}

let counter = 0;

/** A fresh request with a unique requestId; override any field. */
export function completionRequest(content: string, overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  counter += 1;
  return {
    model: 'sim-small',
    messages: [{ role: 'user', content }],
    requestId: `att-${process.pid}-${Date.now()}-${counter}`,
    timeoutMs: 5_000,
    ...overrides,
  };
}

/** Awaits a call that must throw a ProviderCallError and returns its classification. */
export async function failureOf(call: Promise<unknown>): Promise<CallFailure> {
  const error: unknown = await call.then(
    (answer) => {
      throw new Error(`expected a ProviderCallError, got an answer: ${JSON.stringify(answer)}`);
    },
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ProviderCallError)) throw error;
  return error.failure;
}

/** The port of a server that just closed: connecting to it is refused. */
export async function closedPort(): Promise<number> {
  const server = await startFakeServer(() => undefined);
  await server.close();
  return server.port;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
