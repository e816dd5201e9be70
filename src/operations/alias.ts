/**
 * Model aliases (the operations file's `aliases:`): a name clients send as
 * `model` to the OpenAI-compatible and Anthropic entries. An alias is an
 * operation like any other — route, failover gate, probes, billing,
 * hedging, deadline, jobs and attempts — whose input is a conversation in
 * one canonical form (whichever entry it came through) and whose answer is
 * the assistant's text. With an `output` contract, that text must be JSON
 * fitting it (and the checks).
 */
import type { ChatMessage } from '../providers/types';
import { compileChecks } from './declared';
import type { BillingPolicy, DeclaredCheck } from './define';
import type { DeadlinePolicy, DeclarationOrigin, HedgePolicy, JsonSchema, OperationDefinition } from './operation';

/** An alias as the operations file declares it. */
export interface AliasSpec {
  name: string;
  description?: string;
  route: string[];
  probes: Array<{ name: string; messages: ChatMessage[] }>;
  output?: JsonSchema;
  checks?: DeclaredCheck[];
  limits?: { maxTokens?: number; maxMessages?: number };
  billing?: BillingPolicy;
  retry?: { hedge?: HedgePolicy };
  deadline?: DeadlinePolicy;
}

/** A job of an alias: the conversation, and what the caller asked of the answer. */
export interface AliasInput {
  messages: ChatMessage[];
  /** The most output tokens (max_tokens). */
  maxTokens?: number;
  temperature?: number;
}

/** What an alias's attempt answers: the assistant's text, exactly as the provider returned it. */
export interface AliasOutput {
  content: string;
}

export const DEFAULT_ALIAS_MAX_MESSAGES = 256;
/** The most characters of one message (a bound on what one job stores). */
export const ALIAS_MAX_MESSAGE_CHARS = 200_000;

/** The input schema of an alias's jobs (schema version 1), within its limits. */
export function aliasInputSchema(limits: AliasSpec['limits'] = {}): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['messages'],
    properties: {
      messages: {
        type: 'array',
        minItems: 1,
        maxItems: limits.maxMessages ?? DEFAULT_ALIAS_MAX_MESSAGES,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['role', 'content'],
          properties: { role: { enum: ['system', 'user', 'assistant'] }, content: { type: 'string', maxLength: ALIAS_MAX_MESSAGE_CHARS } },
        },
      },
      maxTokens: { type: 'integer', minimum: 1, ...(limits.maxTokens ? { maximum: limits.maxTokens } : {}) },
      temperature: { type: 'number', minimum: 0, maximum: 2 },
    },
  };
}

/** The contract of an alias without `output`: any text. */
const TEXT_OUTPUT: JsonSchema = { type: 'object', additionalProperties: false, required: ['content'], properties: { content: { type: 'string' } } };

/** The operation an alias is. */
export function aliasDefinition(spec: AliasSpec, origin: DeclarationOrigin): OperationDefinition<AliasInput, AliasOutput> {
  const probes = spec.probes.map((probe) => ({ name: probe.name, input: { messages: probe.messages } }));
  const example = probes[0]!.input;
  const input = aliasInputSchema(spec.limits);
  const checks = spec.output && spec.checks?.length ? compileChecks(spec.checks) : undefined;
  return {
    name: spec.name,
    description: spec.description ?? `the model alias ${spec.name}`,
    schemaVersion: 1,
    input,
    example,
    versions: [{ schemaVersion: 1, input, example, origin }],
    output: spec.output ?? TEXT_OUTPUT,
    // No template: the conversation is the prompt (aliasMessages).
    prompt: { system: '', user: '' },
    defaultRoute: [...spec.route],
    origin,
    alias: { json: spec.output !== undefined },
    ...(checks ? { businessChecks: checks } : {}),
    ...(spec.billing ? { billing: spec.billing } : {}),
    ...(spec.deadline ? { deadline: { ...spec.deadline } } : {}),
    ...(spec.retry?.hedge ? { retry: { hedge: { ...spec.retry.hedge } } } : {}),
    probes,
  };
}

/** The conversation of an alias's job, as the provider is sent it. */
export function aliasMessages(input: Record<string, unknown>): ChatMessage[] {
  return ((input as unknown as AliasInput).messages ?? []).map((message) => ({ role: message.role, content: message.content }));
}

/** How an alias's caller asked the answer to be made (what the provider call carries). */
export function aliasSampling(input: Record<string, unknown>): { temperature?: number; maxTokens?: number } {
  const { temperature, maxTokens } = input as unknown as AliasInput;
  return { ...(temperature !== undefined ? { temperature } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}) };
}
