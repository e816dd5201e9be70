/** Small HTTP helpers shared by the simulator tests (real requests over loopback). */

/** A fetch Response whose JSON body the tests inspect freely. */
export type JsonResponse = Omit<Response, 'json'> & { json(): Promise<any> };

export interface ChatMessage {
  role: string;
  content: string;
}

/** Sends one chat-completion request with global fetch. */
export function postChat(
  providerUrl: string,
  messages: ChatMessage[] | string,
  options: { key?: string; signal?: AbortSignal; headers?: Record<string, string> } = {},
): Promise<JsonResponse> {
  const body = {
    model: 'sim-small',
    messages: typeof messages === 'string' ? [{ role: 'user', content: messages }] : messages,
  };
  return fetch(`${providerUrl}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.key === undefined ? {} : { 'idempotency-key': options.key }),
      ...options.headers,
    },
    body: JSON.stringify(body),
    signal: options.signal,
  });
}

/** GETs `url` and returns its status and parsed JSON body. */
export async function getJson(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.json() };
}

/** Posts one delivery to the simulated downstream. */
export function postMessage(
  downstreamUrl: string,
  message: { ticketId: string; channel?: string; text: string },
  key: string | undefined,
  signal?: AbortSignal,
): Promise<JsonResponse> {
  return fetch(`${downstreamUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: JSON.stringify({ channel: 'email', ...message }),
    signal,
  });
}

/**
 * Awaits a request that must fail at the connection level and returns the
 * low-level cause code (`ECONNRESET`, `UND_ERR_SOCKET`, ...).
 */
export async function connectionFailure(request: Promise<JsonResponse>): Promise<string | undefined> {
  const error: unknown = await request.then(
    (response) => {
      throw new Error(`expected a connection failure, got HTTP ${response.status}`);
    },
    (failure: unknown) => failure,
  );
  if (error instanceof Error && error.message.startsWith('expected a connection failure')) throw error;
  return ((error as { cause?: { code?: string } }).cause ?? {}).code;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
