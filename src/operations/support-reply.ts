import { Type } from '@sinclair/typebox';
import type { OperationDefinition } from './operation';

/**
 * The demo operation: draft a reply to a customer's support message, then send
 * it (the effect lands with the effects ledger).
 */
const SupportReplyInput = Type.Object(
  {
    ticketId: Type.String({ minLength: 1, maxLength: 64 }),
    customerMessage: Type.String({ minLength: 1, maxLength: 4000 }),
    channel: Type.Union([Type.Literal('email'), Type.Literal('chat')]),
  },
  { additionalProperties: false },
);

const SupportReplyOutput = Type.Object(
  {
    reply: Type.String({ minLength: 1, maxLength: 4000 }),
    escalate: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const supportReply = {
  name: 'support.reply',
  schemaVersion: 1,
  description: "Draft a reply to a customer's support message and send it on the ticket's channel.",
  input: SupportReplyInput,
  output: SupportReplyOutput,
  businessChecks: (output) => {
    const violations: string[] = [];
    if (output.reply.trim().length === 0) violations.push('reply is blank');
    if (/\{\{[^}]*\}\}/.test(output.reply)) violations.push('reply contains an unfilled template placeholder');
    return violations;
  },
  // The reply is sent to the customer once: the message is the job's side effect.
  effects: ['message.send'],
  finalize: (output, receipts) => ({ ...output, messageId: receipts['message.send']?.messageId }),
  prompt: {
    system:
      'You are a support agent. Answer with one JSON object and nothing else: ' +
      '{"reply": string, "escalate": boolean}. Set escalate to true when a human must follow up.',
    user: 'Ticket {{ticketId}} ({{channel}}). The customer wrote:\n{{customerMessage}}',
  },
  defaultRoute: ['sim-primary', 'sim-backup'],
  probes: [
    { name: 'damaged parcel', input: { ticketId: 'P-1', customerMessage: 'My order arrived with a broken screen. What now?', channel: 'email' } },
    { name: 'where is my order', input: { ticketId: 'P-2', customerMessage: 'It has been ten days and my parcel has not moved. Any news?', channel: 'chat' } },
    { name: 'refund request', input: { ticketId: 'P-3', customerMessage: 'I was charged twice for the same order. Please refund one charge.', channel: 'email' } },
  ],
  example: { ticketId: 'T-1001', customerMessage: 'My order arrived damaged. What can I do?', channel: 'email' },
} satisfies OperationDefinition<typeof SupportReplyInput, typeof SupportReplyOutput>;
