import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileContracts } from '../contracts/output';
import { createAnthropicProvider } from '../providers/anthropic';
import { createOpenAiCompatibleProvider } from '../providers/openai-compatible';
import type { ProviderAdapter } from '../providers/types';
import { warmConnections } from '../warm-up/rehearsal';
import type { ActivityDeps } from './deps';

/** What the loopback server answers, by path: a chat completion, a message, or a plain JSON body. */
const LOOPBACK_ANSWERS: Record<string, object> = {
  '/v1/chat/completions': {
    id: 'warm-up',
    object: 'chat.completion',
    created: 0,
    model: 'warm-up',
    choices: [{ index: 0, message: { role: 'assistant', content: 'warm-up' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  },
  '/v1/messages': {
    id: 'warm-up',
    type: 'message',
    role: 'assistant',
    model: 'warm-up',
    content: [{ type: 'text', text: 'warm-up' }],
    stop_reason: 'end_turn',
    usage: { input_tokens: 1, output_tokens: 1 },
  },
};

/**
 * How often the warm-up sends its requests on loopback: the first real call
 * to a provider, with its message, took 9 to 12 ms after one round, 5 after
 * ten, and 3 once warm (the rest of a first call is its new connection).
 */
const LOOPBACK_ROUNDS = 10;

/** What a warm-up took through first use: the provider kinds, each with what its SDK parsed from the loopback's answer. */
export interface WarmUpReport {
  providerKinds: Record<string, string>;
}

/**
 * What a worker does once, before its first job, so that job costs what the
 * hundredth does: the output contracts are compiled; database connections
 * opened and taken through a job's statements (warmConnections: rolled
 * back, nothing stays); the HTTP client that effects use (Node's fetch) and
 * the SDK of each kind of provider the routes use taken through
 * LOOPBACK_ROUNDS requests each to a server of its own, on loopback, that
 * lives only for it: a twin of the provider's adapter, pointed there, sends
 * a completion and parses the answer as a real call does. Run inside the warm-up workflow, it also
 * takes the workflow sandbox, the message codecs and a local activity's round
 * trip through their first use. It leaves no ledger row and reaches no
 * provider and no downstream.
 */
export function createWarmUpActivities(deps: Pick<ActivityDeps, 'db' | 'operations' | 'providers'>) {
  return {
    async warmUp(): Promise<WarmUpReport> {
      compileContracts(deps.operations.values());
      const [, providerKinds] = await Promise.all([
        warmConnections(deps.db),
        onLoopback(async (origin) => {
          let kinds: Record<string, string> = {};
          for (let round = 0; round < LOOPBACK_ROUNDS; round++) kinds = await warmUpClients(origin, deps.providers.values());
          return kinds;
        }),
      ]);
      return { providerKinds };
    },
  };
}

/** One JSON POST through fetch, then one completion through a twin of each kind of provider adapter, all to `origin`. */
async function warmUpClients(origin: string, providers: Iterable<ProviderAdapter>): Promise<Record<string, string>> {
  const response = await fetch(`${origin}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'warm-up' },
    body: '{"warmUp":true}',
    signal: AbortSignal.timeout(5000),
  });
  await response.json();
  const kinds: Record<string, string> = {};
  for (const kind of new Set([...providers].map((provider) => provider.kind))) {
    const twin = kind === 'anthropic' ? createAnthropicProvider({ name: 'warm-up', baseUrl: origin }) : createOpenAiCompatibleProvider({ name: 'warm-up', baseUrl: `${origin}/v1` });
    const answer = await twin.complete({ model: 'warm-up', messages: [{ role: 'system', content: 'warm-up' }, { role: 'user', content: 'warm-up' }], requestId: 'warm-up', timeoutMs: 5000, maxTokens: 1 });
    kinds[kind] = answer.content;
  }
  return kinds;
}

/** Runs `use` against a server on loopback that answers every POST from LOOPBACK_ANSWERS, then the server is gone. */
async function onLoopback<T>(use: (origin: string) => Promise<T>): Promise<T> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const path = (request.url ?? '/').split('?')[0]!;
      response.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(LOOPBACK_ANSWERS[path] ?? { ok: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
