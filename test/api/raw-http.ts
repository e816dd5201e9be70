import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The response as JSON, or undefined when the body is not JSON. */
  json(): any;
}

/** Parses one HTTP/1.1 response from the start of `text`, or undefined when it is not complete yet. */
export function parseResponse(text: string): RawResponse | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] = headers[name] === undefined ? line.slice(colon + 1).trim() : `${headers[name]}, ${line.slice(colon + 1).trim()}`;
  }
  const length = Number(headers['content-length'] ?? 0);
  const raw = Buffer.from(text.slice(end + 4), 'latin1');
  if (raw.length < length) return undefined;
  const body = raw.subarray(0, length).toString('utf8');
  return { status: Number(statusLine?.split(' ')[1]), headers, body, json: () => JSON.parse(body) };
}

/** A raw client connection: write bytes when you like, read what the server answered. */
export class RawConnection {
  readonly socket: net.Socket;
  private received = '';
  readonly closed: Promise<void>;

  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (chunk) => (this.received += chunk.toString('latin1')));
    this.socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => this.socket.on('close', () => resolve()));
  }

  async connected(): Promise<this> {
    if (this.socket.connecting) await new Promise((resolve) => this.socket.once('connect', resolve));
    return this;
  }

  write(text: string): void {
    this.socket.write(Buffer.from(text, 'latin1'));
  }

  /** Resolves with the first complete response, or rejects after timeoutMs. */
  async response(timeoutMs = 10_000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = parseResponse(this.received);
      if (parsed) return parsed;
      if (this.socket.destroyed && !this.socket.readableLength) throw new Error(`connection closed without a complete response: ${JSON.stringify(this.received)}`);
      if (Date.now() > deadline) throw new Error(`no complete response in ${timeoutMs} ms: ${JSON.stringify(this.received)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Everything the server sent so far. */
  get text(): string {
    return this.received;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Sends one request as raw bytes and reads the answer. */
export async function rawRequest(port: number, text: string): Promise<RawResponse> {
  const connection = await new RawConnection(port).connected();
  try {
    connection.write(text);
    return await connection.response();
  } finally {
    connection.close();
  }
}
