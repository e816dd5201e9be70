import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkConfiguration } from '../../src/check/check-configuration';
import { formatProblem } from '../../src/operations/problems';

/** `line:column` (1-based) of the `nth` occurrence of `needle` in `text`. */
function at(text: string, needle: string, nth = 1): string {
  let index = -1;
  for (let seen = 0; seen < nth; seen++) {
    index = text.indexOf(needle, index + 1);
    if (index < 0) throw new Error(`${needle} is not in the text ${nth} times`);
  }
  const before = text.slice(0, index).split('\n');
  return `${before.length}:${before[before.length - 1]!.length + 1}`;
}

const OPERATIONS = `operations:
  - name: ticket.answer
    description: Answer a ticket and post the answer as a comment.
    versions:
      - schemaVersion: 1
        input: { type: object, additionalProperties: false, required: [ticketId], properties: { ticketId: { type: string } } }
        example: { ticketId: T-1 }
    output: { type: object, additionalProperties: false, required: [answer], properties: { answer: { type: string } } }
    prompt: { system: Answer briefly., user: "Ticket {{ticketId}}" }
    route: [local, sim-elsewhere]
    effects: [ticket.comment, message.send, webhook.notify]
    result:
      fields:
        commentId: { effect: ticket.comment, field: commentId }
        commentUrl: { effect: ticket.comment, field: url }
        messageRef: { effect: message.send, field: id }
  - name: ticket.close
    description: Close a ticket.
    versions:
      - schemaVersion: 1
        input: { type: object, additionalProperties: false, required: [ticketId], properties: { ticketId: { type: string } } }
        example: { ticketId: T-1 }
    output: { type: object, additionalProperties: false, required: [closed], properties: { closed: { type: boolean } } }
    prompt: { system: Answer with closed., user: "Ticket {{ticketId}}" }
    route: [openai]
  - module: ./triage.ts
effects:
  - name: ticket.comment
    url: \${TICKETS_URL}/api/tickets/{{input.ticketId}}/comments
    headers: { Authorization: "Bearer \${TICKETS_TOKEN}", X-Tenant: "\${TICKETS_TENANT}" }
    body: { text: "Answer: {{outputs.answer}}", job: "{{job.id}}" }
    receipt: { commentId: /id }
    lookup: { url: "https://tickets.example/api/comments?key={{job.key}}" }
    deduplicates: false
`;

const PROVIDERS = `providers:
  local:
    kind: openai-compatible
    baseUrl: \${LOCAL_LLM_URL}/v1
    defaultModel: qwen
  openai:
    kind: openai-compatible
    baseUrl: https://api.openai.com/v1
    apiKeyEnv: OPENAI_API_KEY
    prices:
      gpt-4o-mini: { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: USD }
routes:
  ticket.close:
    - { provider: openai, model: gpt-4o }
`;

describe('onceflow check', () => {
  let dir: string;
  let operationsFile: string;
  let providersFile: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'onceflow-check-'));
    operationsFile = path.join(dir, 'ops.yaml');
    providersFile = path.join(dir, 'providers.yaml');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reports every mistake of both files in one run, each with its line and column', async () => {
    // Arrange
    writeFileSync(operationsFile, OPERATIONS);
    writeFileSync(providersFile, PROVIDERS);
    writeFileSync(path.join(dir, 'triage.ts'), "export default { name: 'ticket.triage' as string };\n");
    const env = { ONCEFLOW_OPERATIONS_FILE: operationsFile, ONCEFLOW_PROVIDERS_FILE: providersFile, TICKETS_TENANT: 'acme' };

    // Act
    const checked = await checkConfiguration({ env, typeScriptModules: false });

    // Assert
    const ops = (needle: string): string => `${operationsFile}:${at(OPERATIONS, needle)}`;
    const providers = (needle: string): string => `${providersFile}:${at(PROVIDERS, needle)}`;
    expect(checked.problems.map(formatProblem)).toEqual([
      `${ops('sim-elsewhere')}: /operations/0/route/1: provider "sim-elsewhere" is not declared in ${providersFile} (declared: local, openai)`,
      `${ops('webhook.notify')}: /operations/0/effects/2: effect "webhook.notify" has no adapter in this deployment: ONCEFLOW_WEBHOOK_URL is not set`,
      `${ops('field: url')}: /operations/0/result/fields/commentUrl/field: "url" is not a field of the receipt of ticket.comment (its fields: commentId)`,
      `${ops('field: id')}: /operations/0/result/fields/messageRef/field: "id" is not a field of the receipt of message.send (its fields: messageId)`,
      expect.stringMatching(new RegExp(`^${escapeRegExp(ops('module:'))}: /operations/2/module: \\./triage\\.ts is TypeScript, and this process loads JavaScript only`)),
      `${ops('${TICKETS_URL}')}: /effects/0/url: environment variable TICKETS_URL is not set`,
      `${ops('${TICKETS_TOKEN}')}: /effects/0/headers/Authorization: environment variable TICKETS_TOKEN is not set`,
      `${ops('{{outputs.answer}}')}: /effects/0/body/text: {{outputs.answer}} names nothing a job has; placeholders may name input, output, job.id, job.operation and key`,
      `${ops('{{job.key}}')}: /effects/0/lookup/url: {{job.key}} names nothing a job has; placeholders may name input, output, job.id, job.operation and key`,
      `${providers('local:')}: /providers/local/prices: has no price for model qwen, which the route of ticket.answer uses`,
      `${providers('${LOCAL_LLM_URL}')}: /providers/local/baseUrl: environment variable LOCAL_LLM_URL is not set`,
      `${providers('OPENAI_API_KEY')}: /providers/openai/apiKeyEnv: environment variable OPENAI_API_KEY is not set`,
      `${providers('prices:')}: /providers/openai/prices: has no price for model gpt-4o, which the route of ticket.close uses`,
    ]);
    expect(checked.operations).toBeUndefined();
  });

  it('passes the demo operations with the built-in providers, naming what it checked', async () => {
    // Act
    const checked = await checkConfiguration({ env: {}, typeScriptModules: false });

    // Assert
    expect(checked.problems).toEqual([]);
    expect([...checked.operations!.registry.keys()]).toEqual(['support.reply', 'ticket.summarize', 'support-chat']);
    expect(checked.summary).toMatch(/^ok: .*operations[/\\]demo\.yaml \(support\.reply, ticket\.summarize, support-chat; 0 HTTP effects\), built-in providers \(sim-primary, sim-backup; every route model priced\), 2 environment variables; input schemas not compared with a database$/);
  });

  it('finds nothing once each mistake is fixed and the environment sets every variable, and hands on the operations', async () => {
    // Arrange
    const fixed = OPERATIONS.replace('[local, sim-elsewhere]', '[local]')
      .replace(', webhook.notify]', ']')
      .replace(/ {8}commentUrl: .*\n {8}messageRef: .*\n/, '')
      .replace('  - module: ./triage.ts\n', '')
      .replace('{{outputs.answer}}', '{{output.answer}}')
      .replace('{{job.key}}', '{{key}}');
    writeFileSync(operationsFile, fixed);
    writeFileSync(providersFile, PROVIDERS.replace('defaultModel: qwen\n', 'defaultModel: qwen\n    prices:\n      qwen: { inputPerMillion: "0", outputPerMillion: "0", currency: USD }\n').replace('model: gpt-4o }', 'model: gpt-4o-mini }'));
    const env = {
      ONCEFLOW_OPERATIONS_FILE: operationsFile,
      ONCEFLOW_PROVIDERS_FILE: providersFile,
      TICKETS_URL: 'https://tickets.example',
      TICKETS_TOKEN: 't0ken',
      TICKETS_TENANT: 'acme',
      LOCAL_LLM_URL: 'http://127.0.0.1:8000',
      OPENAI_API_KEY: 'sk-test',
    };

    // Act
    const checked = await checkConfiguration({ env, typeScriptModules: false });

    // Assert
    expect(checked.problems.map(formatProblem)).toEqual([]);
    expect([...checked.operations!.registry.keys()]).toEqual(['ticket.answer', 'ticket.close']);
    expect(checked.summary).toBe(`ok: ${operationsFile} (ticket.answer, ticket.close; 1 HTTP effect), ${providersFile} (local, openai; every route model priced), 5 environment variables; input schemas not compared with a database`);
  });
});

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
