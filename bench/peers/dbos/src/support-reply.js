/**
 * The support.reply job as a DBOS workflow: draft a reply with the provider
 * (one step, its answer checked against the output contract), then send it on
 * the ticket's channel (one step). DBOS checkpoints each step's result in
 * PostgreSQL, so a recovered workflow resumes after the last finished step.
 */
import { DBOS } from '@dbos-inc/dbos-sdk';
import { Ajv } from 'ajv';
import OpenAI from 'openai';

/**
 * @typedef {{ ticketId: string, customerMessage: string, channel: 'email' | 'chat' }} SupportReplyInput
 * @typedef {{ reply: string, escalate: boolean }} Draft
 * @typedef {Draft & { messageId: string }} SupportReplyResult
 */

export const inputSchema = {
  type: 'object',
  properties: {
    ticketId: { type: 'string', minLength: 1, maxLength: 64 },
    customerMessage: { type: 'string', minLength: 1, maxLength: 4000 },
    channel: { enum: ['email', 'chat'] },
  },
  required: ['ticketId', 'customerMessage', 'channel'],
  additionalProperties: false,
};

const outputSchema = {
  type: 'object',
  properties: {
    reply: { type: 'string', minLength: 1, maxLength: 4000 },
    escalate: { type: 'boolean' },
  },
  required: ['reply', 'escalate'],
  additionalProperties: false,
};

const SYSTEM_PROMPT =
  'You are a support agent. Answer with one JSON object and nothing else: ' +
  '{"reply": string, "escalate": boolean}. Set escalate to true when a human must follow up.';

/** @param {SupportReplyInput} input */
const userPrompt = (input) => `Ticket ${input.ticketId} (${input.channel}). The customer wrote:\n${input.customerMessage}`;

/** The provider's answer broke the output contract. */
export class ContractViolation extends Error {
  name = 'ContractViolation';
}

/** The messaging service did not accept the message. */
export class DeliveryFailed extends Error {
  name = 'DeliveryFailed';
}

/** @type {import('ajv').ValidateFunction<Draft>} */
const validateDraft = new Ajv({ strict: true, allErrors: true }).compile(outputSchema);

/**
 * The answer as a Draft: JSON, exactly the contract's keys, and the business checks.
 * @param {string} content
 * @returns {Draft}
 * @throws {ContractViolation}
 */
export function checkDraft(content) {
  /** @type {unknown} */
  let parsed;
  try {
    parsed = JSON.parse(content.trim());
  } catch {
    throw new ContractViolation('the output is not JSON');
  }
  if (!validateDraft(parsed)) {
    throw new ContractViolation((validateDraft.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`).join('; '));
  }
  const violations = [];
  if (parsed.reply.trim().length === 0) violations.push('reply is blank');
  if (/\{\{[^}]*\}\}/.test(parsed.reply)) violations.push('reply contains an unfilled template placeholder');
  if (violations.length > 0) throw new ContractViolation(violations.join('; '));
  return { reply: parsed.reply, escalate: parsed.escalate };
}

/**
 * Registers the workflow with DBOS (before DBOS.launch) and returns it.
 * Steps are not retried: one provider call, one delivery, as Onceflow's attempt makes.
 * @param {object} deps
 * @param {string} deps.providerUrl OpenAI-compatible base URL, including `/v1`.
 * @param {string} deps.downstreamUrl Base URL of the messaging service.
 * @param {string} [deps.model]
 * @param {number} [deps.timeoutMs] Budget of one provider call and of one delivery.
 * @returns {(input: SupportReplyInput) => Promise<SupportReplyResult>}
 */
export function registerSupportReply({ providerUrl, downstreamUrl, model = 'sim-small', timeoutMs = 30_000 }) {
  const provider = new OpenAI({
    baseURL: providerUrl,
    apiKey: 'unused',
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: timeoutMs,
  });
  const messagesUrl = `${downstreamUrl.replace(/\/+$/, '')}/v1/messages`;

  /** @param {SupportReplyInput} input @returns {Promise<Draft>} */
  async function draftReply(input) {
    const completion = await provider.chat.completions.create(
      {
        model,
        temperature: 0,
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: userPrompt(input) },
        ],
      },
      { headers: { 'Idempotency-Key': `${DBOS.workflowID}-provider.call` } },
    );
    return checkDraft(completion.choices[0]?.message?.content ?? '');
  }

  /** @param {SupportReplyInput} input @param {string} text @returns {Promise<string>} the messageId */
  async function sendMessage(input, text) {
    const response = await fetch(messagesUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `dbos-${DBOS.workflowID}-message.send` },
      body: JSON.stringify({ ticketId: input.ticketId, channel: input.channel, text }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) throw new DeliveryFailed(`the messaging service answered ${response.status}`);
    const receipt = /** @type {{ messageId?: unknown }} */ (await response.json());
    if (typeof receipt.messageId !== 'string') throw new DeliveryFailed('the receipt has no messageId');
    return receipt.messageId;
  }

  /** @param {SupportReplyInput} input @returns {Promise<SupportReplyResult>} */
  async function supportReply(input) {
    const draft = await DBOS.runStep(() => draftReply(input), { name: 'provider.call' });
    const messageId = await DBOS.runStep(() => sendMessage(input, draft.reply), { name: 'message.send' });
    return { ...draft, messageId };
  }

  return DBOS.registerWorkflow(supportReply, { name: 'support.reply' });
}
