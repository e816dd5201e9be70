import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSimStack, type SimStack } from '../../src/sim/stack';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { partEnv, startPart, stopPart } from '../harness/parts';

const KEY = 'k_own_operation_alice';
const TOKEN = 'tickets-secret-token';

/** The user's own endpoint: a ticketing API that records every comment posted to it. */
interface Delivery {
  ticketId: string;
  headers: IncomingHttpHeaders;
  body: { text: string; job: string };
}

function startTicketing(): Promise<{ server: Server; url: string; deliveries: Delivery[] }> {
  const deliveries: Delivery[] = [];
  const server = createServer((request, response) => {
    const match = /^\/api\/tickets\/([^/]+)\/comments$/.exec(request.url ?? '');
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      if (request.method !== 'POST' || !match) {
        response.writeHead(404).end();
        return;
      }
      deliveries.push({ ticketId: decodeURIComponent(match[1]!), headers: request.headers, body: JSON.parse(raw) as Delivery['body'] });
      response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `c-${deliveries.length}` }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, deliveries })));
}

const operationsFile = (ticketingUrl: string): string => `
operations:
  - name: ticket.answer
    description: Answer a customer's question on a ticket and post the answer as a comment.
    versions:
      - schemaVersion: 1
        input:
          type: object
          additionalProperties: false
          required: [ticketId, question]
          properties:
            ticketId: { type: string, minLength: 1, maxLength: 32 }
            question: { type: string, minLength: 1, maxLength: 2000 }
        example: { ticketId: TK-1, question: Can I change my delivery address? }
    output:
      type: object
      additionalProperties: false
      required: [reply, escalate]
      properties:
        reply: { type: string, minLength: 1 }
        escalate: { type: boolean }
    checks:
      - { field: /reply, nonBlank: true, message: reply is blank }
    prompt:
      system: 'Answer with one JSON object: {"reply": string, "escalate": boolean}.'
      user: "Ticket {{ticketId}} asks: {{question}}"
    route: [sim-primary, sim-backup]
    effects: [ticket.comment]
    result:
      fields:
        commentId: { effect: ticket.comment, field: commentId }
effects:
  - name: ticket.comment
    url: ${ticketingUrl}/api/tickets/{{input.ticketId}}/comments
    headers: { Authorization: "Bearer \${TICKETS_TOKEN}" }
    idempotencyHeader: X-Request-Key
    body: { text: "{{output.reply}}", job: "{{job.id}}" }
    receipt: { commentId: /id }
    deduplicates: false
`;

/**
 * What a new user does, by the README: declare their own operation and an
 * HTTP effect to their own endpoint in a file, start the API and a worker
 * with it, submit, and find one delivery per job at the endpoint.
 */
describe('an operation and a downstream declared in a file', () => {
  let db: TestDatabase;
  let sims: SimStack;
  let ticketing: Awaited<ReturnType<typeof startTicketing>>;
  let dir: string;
  let api: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let apiUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    sims = await startSimStack();
    ticketing = await startTicketing();
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-own-op-'));
    const file = path.join(dir, 'operations.yaml');
    writeFileSync(file, operationsFile(ticketing.url));
    const env: NodeJS.ProcessEnv = {
      ...partEnv({ databaseUrl: db.url, sims, name: 'own-operation', aliceKey: KEY }),
      ONCEFLOW_OPERATIONS_FILE: file,
      TICKETS_TOKEN: TOKEN,
    };
    worker = (await startPart('worker', env, /^worker: polling/)).proc;
    const started = await startPart('api', env, /^api: listening on (\S+)/);
    api = started.proc;
    apiUrl = started.match[1]!;
  }, 120_000);

  afterAll(async () => {
    await Promise.all([stopPart(api), stopPart(worker)]);
    await new Promise((resolve) => ticketing.server.close(resolve));
    await sims.close();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const submit = (idempotencyKey: string, input: Record<string, unknown>) =>
    fetch(`${apiUrl}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey, prefer: 'wait=30' },
      body: JSON.stringify({ operation: 'ticket.answer', input }),
    }).then(async (response) => ({ status: response.status, job: (await response.json()) as { id: string; status: string; result?: { reply: string; commentId: string } } }));

  it('runs each job once and posts one comment per job, with the key and the secret from the environment', async () => {
    // Arrange: three intents; the first is clicked three times at once.
    const intents = [
      { key: 'click-1', input: { ticketId: 'TK-1', question: 'Can I change my delivery address?' } },
      { key: 'click-2', input: { ticketId: 'TK-2', question: 'Do you ship to Norway?' } },
      { key: 'click-3', input: { ticketId: 'TK-3', question: 'Where is my invoice?' } },
    ];

    // Act
    const answers = await Promise.all([...intents, intents[0]!, intents[0]!].map((intent) => submit(intent.key, intent.input)));

    // Assert
    expect(answers.map((a) => a.job.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
    const ids = new Set(answers.map((a) => a.job.id));
    expect(ids.size).toBe(3);
    expect(ticketing.deliveries.map((d) => d.ticketId).sort()).toEqual(['TK-1', 'TK-2', 'TK-3']);
    for (const answer of answers) {
      const delivery = ticketing.deliveries.find((d) => d.body.job === answer.job.id)!;
      expect(delivery.headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(delivery.headers['x-request-key']).toEqual(expect.any(String));
      expect(delivery.body.text).toBe(answer.job.result!.reply);
      expect(answer.job.result!.commentId).toMatch(/^c-\d$/);
    }
  }, 90_000);

  it('answers a retry of a finished job from the ledger, without a second comment', async () => {
    // Act
    const replay = await submit('click-2', { ticketId: 'TK-2', question: 'Do you ship to Norway?' });

    // Assert
    expect(replay.status).toBe(200);
    expect(replay.job.status).toBe('succeeded');
    expect(ticketing.deliveries.filter((d) => d.ticketId === 'TK-2')).toHaveLength(1);
  });
});
