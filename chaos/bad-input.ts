/**
 * A request carrying bytes PostgreSQL cannot store (a NUL, a lone surrogate)
 * in the body, the query or a path parameter: it must be refused with 400,
 * never reach the database as a 500. Under its own key and ticket, or naming
 * an effect that does not exist, so it never touches the trial's intent.
 */
import type { Exchange } from './api-client';
import { sleep, type TrialScope } from './context';
import type { BadInput, TrialPlan } from './faults';

function request(plan: TrialPlan, kind: BadInput, jobId: string, operatorKey: string, apiKey: string): { method: string; path: string; token: string; body?: unknown; key?: string } {
  const input = { ticketId: `${plan.ticketId}-bad`, channel: plan.channel, customerMessage: 'Where is my order?' };
  switch (kind) {
    case 'nul-in-body':
      return { method: 'POST', path: '/v1/jobs', token: apiKey, body: { operation: 'support.reply', input: { ...input, customerMessage: 'Where is\u0000 my order?' } }, key: `${plan.idempotencyKey}-bad` };
    case 'lone-surrogate-in-body':
      return { method: 'POST', path: '/v1/jobs', token: apiKey, body: { operation: 'support.reply', input: { ...input, customerMessage: 'Where is \ud800 my order?' } }, key: `${plan.idempotencyKey}-bad` };
    case 'nul-in-query':
      return { method: 'GET', path: `/v1/jobs?operation=support.reply&idempotencyKey=${encodeURIComponent(`${plan.idempotencyKey}-bad`)}%00`, token: apiKey };
    case 'nul-in-path':
      // A path parameter that reaches the database: an effect name (of no effect there is), on the trial's job.
      return { method: 'POST', path: `/v1/jobs/${jobId}/effects/no-such-effect%00/resolution`, token: operatorKey, body: { outcome: 'failed', reason: 'chaos: bad bytes in the path' } };
  }
}

/** Sends it once (again only after a network error: the API may be down). */
export async function sendBadInput(scope: TrialScope, plan: TrialPlan): Promise<Exchange | undefined> {
  if (!plan.badInput) return undefined;
  const jobId = (await scope.jobId) ?? '00000000-0000-4000-8000-000000000000';
  const { method, path, token, body, key } = request(plan, plan.badInput, jobId, scope.ctx.stack.operatorKey, scope.ctx.stack.apiKey);
  for (;;) {
    const exchange = await scope.client.request(method, path, {
      label: 'bad-input',
      token,
      ...(body ? { body } : {}),
      ...(key ? { headers: { 'idempotency-key': key } } : {}),
    });
    if (exchange.status !== 0 || Date.now() > scope.deadline) return exchange;
    await sleep(300);
  }
}
