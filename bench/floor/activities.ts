import { Context } from '@temporalio/activity';
import OpenAI from 'openai';

export interface FloorActivities {
  draftAndSend(input: { ticketId: string; customerMessage: string; channel: string }): Promise<string>;
}

const SYSTEM_PROMPT = 'You are a support agent. Answer with one JSON object and nothing else: {"reply": string, "escalate": boolean}.';

/**
 * The provider call and the message, as Onceflow's one local activity makes
 * them (the same `openai` client with its retries off, `fetch` with the
 * message's idempotency key), without the ledger; `done` hears of each job
 * as it ends, as Onceflow's API hears of the terminal write.
 */
export function createFloorActivities(deps: { providerUrl: string; downstreamUrl: string; done: (workflowId: string, outcome: { messageId: string } | { error: Error }) => void }): FloorActivities {
  const provider = new OpenAI({ baseURL: deps.providerUrl, apiKey: 'unused', organization: null, project: null, maxRetries: 0, timeout: 30_000 });
  const messagesUrl = `${deps.downstreamUrl.replace(/\/+$/, '')}/v1/messages`;
  return {
    async draftAndSend(input) {
      const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
      try {
        const messageId = await draftAndSendOnce(workflowId, input);
        deps.done(workflowId, { messageId });
        return messageId;
      } catch (err) {
        deps.done(workflowId, { error: err as Error });
        throw err;
      }
    },
  };

  async function draftAndSendOnce(workflowId: string, input: { ticketId: string; customerMessage: string; channel: string }): Promise<string> {
      const completion = await provider.chat.completions.create(
        {
          model: 'sim-small',
          temperature: 0,
          messages: [
            { role: 'system', content: SYSTEM_PROMPT },
            { role: 'user', content: `Ticket ${input.ticketId} (${input.channel}). The customer wrote:\n${input.customerMessage}` },
          ],
        },
        { headers: { 'Idempotency-Key': `${workflowId}-provider.call` } },
      );
      const draft = JSON.parse(completion.choices[0]?.message?.content ?? '') as { reply?: unknown };
      if (typeof draft.reply !== 'string') throw new Error('the answer has no reply');
      const response = await fetch(messagesUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `${workflowId}-message.send` },
        body: JSON.stringify({ ticketId: input.ticketId, channel: input.channel, text: draft.reply }),
        signal: AbortSignal.timeout(30_000),
      });
      if (!response.ok) throw new Error(`the messaging service answered ${response.status}`);
      const { messageId } = (await response.json()) as { messageId: string };
      return messageId;
  }
}
