import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { eligibility } from '../contracts/eligibility';
import { templateHash } from '../contracts/prompt';
import { verifyContracts } from '../contracts/verify';
import { latestVerification } from '../ledger/contracts';
import type { ApiDeps } from './app';
import { ProblemError, ProblemType } from './problems';

const VerifyBodySchema = Type.Union([
  Type.Object({ operation: Type.Optional(Type.String()), provider: Type.Optional(Type.String()) }, { additionalProperties: false }),
  Type.Null(),
]);

/** Operators see which providers may take which attempts, and why; and can verify them. */
export async function registerProviderRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db, contracts } = deps;
  const operatorOnly = (request: { principal?: { operator: boolean } }): void => {
    if (!request.principal?.operator) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'only operators may see or verify providers');
  };

  v1.get(
    '/providers',
    {
      config: { problems: [401, 403] },
      schema: {
        summary: 'Providers and their verification state per operation (operators only)',
        description: 'For each operation and route step: the current template hash, the newest verification, and whether the step may take an attempt now (with the reason when not).',
      },
    },
    async (request) => {
      operatorOnly(request);
      const byProvider = new Map<string, { name: string; kind: string; routes: unknown[] }>();
      for (const [name, provider] of contracts.providers) byProvider.set(name, { name, kind: provider.kind, routes: [] });
      for (const operation of deps.operations.values()) {
        const route = contracts.routeFor(operation.name);
        for (const [index, step] of route.entries()) {
          const role = index === 0 ? 'primary' : 'fallback';
          const verdict = await eligibility(db, operation, step, role, contracts.gate);
          const latest = await latestVerification(db, { operation: operation.name, provider: step.provider, model: step.model });
          const entry = byProvider.get(step.provider) ?? { name: step.provider, kind: 'not configured', routes: [] };
          byProvider.set(step.provider, entry);
          entry.routes.push({
            operation: operation.name,
            schemaVersion: operation.schemaVersion,
            templateHash: templateHash(operation),
            model: step.model,
            position: index,
            role,
            eligible: verdict.eligible,
            ...(verdict.eligible ? {} : { reason: verdict.reason }),
            detail: verdict.detail,
            latestVerification: latest
              ? { verifiedAt: latest.verifiedAt.toISOString(), passed: latest.passed, schemaVersion: latest.schemaVersion, templateHash: latest.templateHash, samples: latest.samples }
              : null,
          });
        }
      }
      return { providers: [...byProvider.values()] };
    },
  );

  v1.post(
    '/providers/verify',
    {
      config: { problems: [400, 401, 403] },
      schema: {
        summary: 'Verify providers against the output contracts now (operators only)',
        description: "Runs each matching route step's probe fixtures and records the outcome; answers with the verifications made.",
        body: VerifyBodySchema,
      },
    },
    async (request) => {
      operatorOnly(request);
      const filter = { operation: request.body?.operation, provider: request.body?.provider };
      const records = await verifyContracts({ db, operations: deps.operations, providers: contracts.providers, routeFor: contracts.routeFor }, filter, {
        samples: contracts.samples,
        timeoutMs: contracts.timeoutMs,
      });
      if (records.length === 0) throw new ProblemError(400, ProblemType.validation, 'Nothing to verify', 'no route step matches the operation and provider given');
      return {
        verifications: records.map((record) => ({ ...record, verifiedAt: record.verifiedAt.toISOString() })),
      };
    },
  );
}
