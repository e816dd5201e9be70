/**
 * Verification per entry: an OpenAI-compatible answer says nothing of the
 * Anthropic entry beside it, so each alias is verified through each entry on
 * its own, by that protocol's official client library — the one its callers
 * use. Each probe of the alias is sent as a caller would send it, as a job of
 * the probe principal: the client must read an answer on the alias's
 * contract that names its job, the usage it reads must be the winning
 * attempt's as metered, the same key again must give the same answer,
 * replayed, with no new attempt, and the same key streamed must give the same
 * text through the client's stream helper. The outcome is recorded
 * (entry_verifications) and shown by GET /v1/providers and the console.
 */
import Anthropic from '@anthropic-ai/sdk';
import { VERSION as ANTHROPIC_VERSION } from '@anthropic-ai/sdk/version';
import canonicalize from 'canonicalize';
import { createHash, randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { VERSION as OPENAI_VERSION } from 'openai/version';
import { checkOutput, excerpt } from '../../contracts/output';
import { Entry, EntryCheck, recordEntryVerification, type EntryCheckResult, type EntryProbe, type EntryVerification } from '../../ledger/entry-verifications';
import { loadJobDetailsById } from '../../ledger/job-details';
import type { Queryable } from '../../ledger/queryable';
import type { RegisteredOperation } from '../../operations/operation';
import type { ChatMessage } from '../../providers/types';
import { ONCEFLOW_VERSION } from '../../version';

export interface EntryVerifyDeps {
  db: Queryable;
  operations: ReadonlyMap<string, RegisteredOperation>;
  /** How the clients reach the entries (the app's own routes: fetchThrough). */
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** The probe principal's key. */
  apiKey: string;
  /** The probe principal: its jobs are the probes'. */
  principal: string;
  /** The most one client call may take, its retries of a 409 included. */
  timeoutMs: number;
}

/** The client library each entry is verified with. */
export const ENTRY_CLIENTS: Readonly<Record<Entry, string>> = { openai: `openai@${OPENAI_VERSION}`, anthropic: `@anthropic-ai/sdk@${ANTHROPIC_VERSION}` };

/** What a verification of an alias holds for: its name, schema version, input and output contracts. */
export function aliasDigest(alias: Pick<RegisteredOperation, 'name' | 'schemaVersion' | 'input' | 'output'>): string {
  const canonical = canonicalize([alias.name, alias.schemaVersion, alias.input, alias.output])!;
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}

/** The aliases (and entries) a filter names; empty when it names none. */
export function entryTargets(operations: ReadonlyMap<string, RegisteredOperation>, filter: { alias?: string; entry?: Entry } = {}): Array<{ alias: RegisteredOperation; entry: Entry }> {
  const aliases = [...operations.values()].filter((operation) => operation.alias && (!filter.alias || operation.name === filter.alias));
  const entries = Object.values(Entry).filter((entry) => !filter.entry || entry === filter.entry);
  return aliases.flatMap((alias) => entries.map((entry) => ({ alias, entry })));
}

/** Verifies every alias through every entry (or those the filter names), recording each. */
export async function verifyEntries(deps: EntryVerifyDeps, filter: { alias?: string; entry?: Entry } = {}): Promise<EntryVerification[]> {
  const recorded: EntryVerification[] = [];
  for (const { alias, entry } of entryTargets(deps.operations, filter)) {
    const probes: EntryProbe[] = [];
    for (const probe of alias.probes ?? []) probes.push(await runProbe(deps, alias, entry, probe.name, (probe.input as { messages: ChatMessage[] }).messages));
    const passed = probes.length > 0 && probes.every((probe) => Object.values(EntryCheck).every((check) => probe.checks[check]?.passed === true));
    recorded.push(
      await recordEntryVerification(deps.db, { alias: alias.name, entry, aliasDigest: aliasDigest(alias), client: ENTRY_CLIENTS[entry], onceflowVersion: ONCEFLOW_VERSION, passed, probes }),
    );
  }
  return recorded;
}

/** One call of an entry's client, as the checks read it. */
interface Answered {
  /** The whole parsed answer, as the client gives it. */
  data: unknown;
  text: string;
  id: string;
  usage: { input: unknown; output: unknown };
  headers: Headers;
}

/** An entry's client, reduced to what a probe does: ask, and ask streamed. */
interface ProbeClient {
  idOf(jobId: string): string;
  ask(key: string): Promise<Answered>;
  askStreamed(key: string): Promise<string>;
}

function clientFor(deps: EntryVerifyDeps, alias: RegisteredOperation, entry: Entry, messages: ChatMessage[]): ProbeClient {
  const common = { apiKey: deps.apiKey, fetch: deps.fetch as never, maxRetries: 5, timeout: deps.timeoutMs };
  const headers = (key: string) => ({ headers: { 'Idempotency-Key': key } });
  if (entry === Entry.openai) {
    const client = new OpenAI({ ...common, baseURL: 'http://onceflow.internal/openai/v1' });
    const body = { model: alias.name, messages, temperature: 0, ...(alias.alias?.json ? { response_format: { type: 'json_object' as const } } : {}) };
    return {
      idOf: (jobId) => `chatcmpl-${jobId}`,
      ask: async (key) => {
        const { data, response } = await client.chat.completions.create(body, headers(key)).withResponse();
        return { data, text: data.choices[0]?.message.content ?? '', id: data.id, usage: { input: data.usage?.prompt_tokens, output: data.usage?.completion_tokens }, headers: response.headers };
      },
      askStreamed: async (key) => (await client.chat.completions.stream(body, headers(key)).finalChatCompletion()).choices[0]?.message.content ?? '',
    };
  }
  const client = new Anthropic({ ...common, baseURL: 'http://onceflow.internal/anthropic' });
  const system = messages.filter((message) => message.role === 'system').map((message) => message.content);
  const maximum = (alias.input as { properties?: { maxTokens?: { maximum?: number } } }).properties?.maxTokens?.maximum;
  const body = {
    model: alias.name,
    max_tokens: Math.min(maximum ?? 1024, 1024),
    ...(system.length ? { system: system.join('\n\n') } : {}),
    messages: messages.filter((message) => message.role !== 'system').map((message) => ({ role: message.role as 'user' | 'assistant', content: message.content })),
    temperature: 0,
  };
  const textOf = (content: Array<{ type: string; text?: string }>) => content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('');
  return {
    idOf: (jobId) => `msg_${jobId}`,
    ask: async (key) => {
      const { data, response } = await client.messages.create(body, headers(key)).withResponse();
      return { data, text: textOf(data.content), id: data.id, usage: { input: data.usage?.input_tokens, output: data.usage?.output_tokens }, headers: response.headers };
    },
    askStreamed: async (key) => textOf((await client.messages.stream(body, headers(key)).finalMessage()).content),
  };
}

const pass = (detail: string): EntryCheckResult => ({ passed: true, detail });
const fail = (detail: string): EntryCheckResult => ({ passed: false, detail });
const errorDetail = (err: unknown) => excerpt(`${(err as Error).name ?? 'Error'}: ${(err as Error).message ?? String(err)}`, 500);

async function runProbe(deps: EntryVerifyDeps, alias: RegisteredOperation, entry: Entry, name: string, messages: ChatMessage[]): Promise<EntryProbe> {
  const started = Date.now();
  const idempotencyKey = `onceflow-verify-${randomUUID()}`;
  const probe: EntryProbe = { name, idempotencyKey, checks: {}, ms: 0 };
  const done = () => ({ ...probe, ms: Date.now() - started });
  const client = clientFor(deps, alias, entry, messages);

  let first: Answered;
  try {
    first = await client.ask(idempotencyKey);
  } catch (err) {
    probe.checks.answer = fail(`the client raised ${errorDetail(err)}`);
    return done();
  }
  const jobId = first.headers.get('onceflow-job-id') ?? '';
  const attemptId = first.headers.get('onceflow-attempt-id') ?? '';
  const job = await jobOf(deps.db, jobId);
  probe.jobId = jobId;
  probe.attemptId = attemptId;
  if (job?.provider) probe.provider = job.provider;
  probe.checks.answer = answerCheck(deps, alias, client, first, jobId, attemptId, job);
  probe.checks.usage = !job
    ? fail('no job to compare the usage with')
    : first.usage.input === job.inputTokens && first.usage.output === job.outputTokens
      ? pass(`${job.inputTokens} in, ${job.outputTokens} out: the winning attempt's`)
      : fail(`the client read ${String(first.usage.input)} in, ${String(first.usage.output)} out; the winning attempt metered ${String(job.inputTokens)} in, ${String(job.outputTokens)} out`);

  try {
    const again = await client.ask(idempotencyKey);
    const attemptsAfter = job ? (await jobOf(deps.db, jobId))?.attempts : undefined;
    const problems = [
      ...(canonicalize(again.data) === canonicalize(first.data) ? [] : ['another answer than the first']),
      ...(again.headers.get('idempotent-replayed') === 'true' ? [] : ['no Idempotent-Replayed: true']),
      ...(again.headers.get('onceflow-job-id') === jobId ? [] : [`job ${again.headers.get('onceflow-job-id') ?? 'none'}, not ${jobId}`]),
      ...(job && attemptsAfter === job.attempts ? [] : [`${String(attemptsAfter)} attempts after it, ${String(job?.attempts)} before`]),
    ];
    probe.checks.replay = problems.length ? fail(`the same key again gave ${problems.join('; ')}`) : pass('the same key again: the same answer, replayed, no new attempt');
  } catch (err) {
    probe.checks.replay = fail(`the same key again raised ${errorDetail(err)}`);
  }

  try {
    const streamed = await client.askStreamed(idempotencyKey);
    probe.checks.stream =
      streamed === first.text ? pass(`the stream helper read the same ${first.text.length} characters`) : fail(`the stream helper read ${JSON.stringify(excerpt(streamed, 120))}, not the answer ${JSON.stringify(excerpt(first.text, 120))}`);
  } catch (err) {
    probe.checks.stream = fail(`the stream raised ${errorDetail(err)}`);
  }
  return done();
}

function answerCheck(deps: EntryVerifyDeps, alias: RegisteredOperation, client: ProbeClient, answer: Answered, jobId: string, attemptId: string, job: ProbeJob | undefined): EntryCheckResult {
  if (!job) return fail(`the answer names job ${JSON.stringify(jobId)}, which does not exist`);
  const problems = [
    ...(job.principal === deps.principal && job.operation === alias.name ? [] : [`its job is ${job.principal}'s ${job.operation}, not the probe's ${alias.name}`]),
    ...(job.status === 'succeeded' && job.completedBy === attemptId ? [] : [`its job is ${job.status}, won by ${job.completedBy ?? 'none'}, not attempt ${attemptId || 'none'}`]),
    ...(answer.id === client.idOf(jobId) ? [] : [`its id is ${JSON.stringify(answer.id)}, not ${client.idOf(jobId)}`]),
    ...(answer.text === job.content ? [] : ["its text is not the winning attempt's"]),
  ];
  if (problems.length) return fail(problems.join('; '));
  const contract = checkOutput(alias, answer.text);
  if (!contract.ok) return fail(`off contract: ${contract.violations.join('; ')}`);
  return pass(`job ${jobId}, won by ${attemptId} (${job.provider ?? 'unknown provider'}); on contract`);
}

interface ProbeJob {
  principal: string;
  operation: string;
  status: string;
  completedBy: string | null;
  content: string | undefined;
  provider: string | undefined;
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  attempts: number;
}

/** The probe's job as the ledger's job reader shows it: its winner, the winner's usage, how many attempts it has. */
async function jobOf(db: Queryable, jobId: string): Promise<ProbeJob | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(jobId)) return undefined;
  const found = await loadJobDetailsById(db, jobId);
  if (!found) return undefined;
  const { job, details } = found;
  const attempts = details.attempts as Array<{ id: string; provider?: string; usage?: { inputTokens?: number; outputTokens?: number } }>;
  const winner = attempts.find((attempt) => attempt.id === job.completedBy);
  const content = (job.result as { content?: unknown } | null)?.content;
  return {
    principal: job.principalId,
    operation: job.operation,
    status: job.status,
    completedBy: job.completedBy,
    content: typeof content === 'string' ? content : undefined,
    provider: winner?.provider,
    inputTokens: winner?.usage?.inputTokens,
    outputTokens: winner?.usage?.outputTokens,
    attempts: attempts.length,
  };
}

/**
 * A fetch that sends each request to the app's own routes in process
 * (Fastify's inject): the same routing, authentication, parsing and rendering
 * as a request over a socket, with no port to find and nothing on the network.
 */
export function fetchThrough(app: { inject(options: object): PromiseLike<{ statusCode: number; headers: Record<string, unknown>; rawPayload: Buffer }> }): EntryVerifyDeps['fetch'] {
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const payload = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const answered = await app.inject({ method: request.method, url: `${url.pathname}${url.search}`, headers: Object.fromEntries(request.headers), ...(payload ? { payload } : {}) });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answered.headers)) {
      for (const one of Array.isArray(value) ? value : [value]) if (one !== undefined) headers.append(name, String(one));
    }
    const empty = answered.statusCode === 204 || answered.statusCode === 304;
    return new Response(empty ? null : answered.rawPayload, { status: answered.statusCode, headers });
  };
}
