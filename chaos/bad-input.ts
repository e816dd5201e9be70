/**
 * A request carrying bytes PostgreSQL cannot store (a NUL, a lone surrogate)
 * in the body, the query or the path: it must be refused with 400, never
 * reach the database as a 500. Sent under its own key and ticket, so it never
 * touches the trial's intent.
 */
import type { Exchange } from './api-client';
import { sleep, type TrialScope } from './context';
import type { BadInput, TrialPlan } from './faults';

function request(plan: TrialPlan, kind: BadInput): { method: string; path: string; body?: unknown; key?: string } {
  const input = { ticketId: `${plan.ticketId}-bad`, channel: plan.channel, customerMessage: 'Where is my order?' };
  switch (kind) {
    case 'nul-in-body':
      return { method: 'POST', path: '/v1/jobs', body: { operation: 'support.reply', input: { ...input, customerMessage: 'Where is\u0000 my order?' } }, key: `${plan.idempotencyKey}-bad` };
    case 'lone-surrogate-in-body':
      return { method: 'POST', path: '/v1/jobs', body: { operation: 'support.reply', input: { ...input, customerMessage: 'Where is \ud800 my order?' } }, key: `${plan.idempotencyKey}-bad` };
    case 'nul-in-query':
      return { method: 'GET', path: `/v1/jobs?operation=support.reply&idempotencyKey=${encodeURIComponent(`${plan.idempotencyKey}-bad`)}%00` };
    case 'nul-in-path':
      return { method: 'GET', path: '/v1/jobs/00000000-0000-4000-8000-000000000000%00' };
  }
}

/** Sends it once (again only after a network error: the API may be down). */
export async function sendBadInput(scope: TrialScope, plan: TrialPlan): Promise<Exchange | undefined> {
  if (!plan.badInput) return undefined;
  const { method, path, body, key } = request(plan, plan.badInput);
  for (;;) {
    const exchange = await scope.client.request(method, path, {
      label: 'bad-input',
      token: scope.ctx.stack.apiKey,
      ...(body ? { body } : {}),
      ...(key ? { headers: { 'idempotency-key': key } } : {}),
    });
    if (exchange.status !== 0 || Date.now() > scope.deadline) return exchange;
    await sleep(300);
  }
}
