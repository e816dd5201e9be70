import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { usageReport, UsageGrouping } from '../ledger/usage-report';
import type { ApiDeps } from './deps';
import { ProblemError, ProblemType } from './problems';
import { jsonResponse, UsageQuerySchema, UsageReportSchema, type UsageReportView } from './schemas';

/** GET /v1/usage: a principal's totals, from the ledger's one account of spending (the bill, not what a process believed). */
export async function registerUsageRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>();
  v1.get(
    '/usage',
    {
      config: { problems: [400, 401, 403, 414, 429] },
      schema: {
        operationId: 'getUsage',
        tags: ['jobs'],
        summary: "The caller's usage and bill over a time range",
        description:
          'Totals of what was spent in [from, to) (the current UTC month by default): settlements, and what was learned after them (adjustments), one line per operation or UTC day and per currency. ' +
          'A tenant key reads its own usage; an operator key names the principal (principal=, required for operators; a tenant key sending another principal is a 403). 400 when to is not after from.',
        querystring: UsageQuerySchema,
        response: { 200: jsonResponse(UsageReportSchema, 'The totals') },
      },
    },
    async (request): Promise<UsageReportView> => {
      const caller = request.principal!;
      const query = request.query;
      // Left out, a bound is its month's: the current UTC month, or the month `to` ends in (from its start).
      const to = query.to === undefined ? utcMonthOf(new Date()).next : new Date(query.to);
      const from = query.from === undefined ? utcMonthOf(new Date(to.getTime() - 1)).start : new Date(query.from);
      if (!(to.getTime() > from.getTime())) throw badUsageQuery('to must be after from', ['to']);
      const principalId = whoseUsage(caller, query.principal);
      const groupBy = query.groupBy ?? UsageGrouping.operation;
      const lines = await usageReport(deps.db, { principalId, from, to, groupBy });
      return { principal: principalId, from: from.toISOString(), to: to.toISOString(), groupBy, lines };
    },
  );
}

/** The UTC month `now` falls in: where a billing page starts. */
function utcMonthOf(now: Date): { start: Date; next: Date } {
  return { start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)), next: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)) };
}

/**
 * Whose usage the caller may read: its own; an operator's, any principal it names.
 * @throws ProblemError 403 for a tenant naming another principal, 400 for an operator naming none.
 */
function whoseUsage(caller: { id: string; operator: boolean }, principal: string | undefined): string {
  if (caller.operator) {
    if (principal === undefined) throw badUsageQuery('operators name the principal whose usage they read', ['principal']);
    return principal;
  }
  if (principal !== undefined && principal !== caller.id) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', "only operators read another principal's usage");
  return caller.id;
}

function badUsageQuery(detail: string, parameters: string[]): ProblemError {
  return new ProblemError(400, ProblemType.validation, 'Invalid request', `the querystring is not valid: ${detail}`, { errors: parameters.map((name) => ({ pointer: `/${name}`, detail })) });
}
