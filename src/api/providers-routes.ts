import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { eligibility } from '../contracts/eligibility';
import { templateHash } from '../contracts/prompt';
import { verifyContracts } from '../contracts/verify';
import { latestVerification } from '../ledger/contracts';
import type { ApiDeps } from './deps';
import { notFound, ProblemError, ProblemType } from './problems';
import { jsonResponse, StringEnum } from './schemas';

/** One of the names given, or any string when there are none. */
const NameOf = (names: string[], description: string) => (names.length > 0 ? StringEnum(names, { description }) : Type.String({ description }));

const Verification = Type.Object({
  verifiedAt: Type.String({ format: 'date-time' }),
  passed: Type.Boolean(),
  schemaVersion: Type.Integer(),
  templateHash: Type.String(),
  samples: Type.Integer(),
});

const ProvidersSchema = Type.Object({
  providers: Type.Array(
    Type.Object({
      name: Type.String(),
      kind: Type.String({ description: 'the adapter kind, or "not configured" for a route step naming an unknown provider' }),
      routes: Type.Array(
        Type.Object({
          operation: Type.String(),
          schemaVersion: Type.Integer(),
          templateHash: Type.String(),
          model: Type.String(),
          position: Type.Integer({ minimum: 0 }),
          role: StringEnum(['primary', 'fallback']),
          eligible: Type.Boolean({ description: 'whether this step may take an attempt now' }),
          reason: Type.Optional(StringEnum(['unverified', 'failed_verification', 'stale', 'other_template', 'demoted'])),
          detail: Type.String(),
          latestVerification: Type.Union([Verification, Type.Null()]),
        }),
      ),
    }),
  ),
});

const VerificationsSchema = Type.Object({
  verifications: Type.Array(
    Type.Object({
      operation: Type.String(),
      provider: Type.String(),
      model: Type.String(),
      schemaVersion: Type.Integer(),
      templateHash: Type.String(),
      verifiedAt: Type.String({ format: 'date-time' }),
      passed: Type.Boolean(),
      samples: Type.Integer(),
      evidence: Type.Object({}, { additionalProperties: true }),
    }),
  ),
});

export type ProvidersView = Static<typeof ProvidersSchema>;

/**
 * Each provider with its route steps: per operation, the current template
 * hash, the newest verification, and whether the step may take an attempt now
 * (with the reason when not). What GET /v1/providers answers and the console shows.
 */
export async function describeProviders(deps: Pick<ApiDeps, 'db' | 'contracts' | 'operations'>): Promise<ProvidersView> {
  const { db, contracts } = deps;
  const byProvider = new Map<string, { name: string; kind: string; routes: unknown[] }>();
  for (const [name, provider] of contracts.providers) byProvider.set(name, { name, kind: provider.kind, routes: [] });
  for (const operation of deps.operations.values()) {
    const route = contracts.routeFor(operation.name);
    for (const [index, step] of route.entries()) {
      const role = index === 0 ? 'primary' : 'fallback';
      const verdict = await eligibility(db, operation, step, role, contracts.gate, new Date(), contracts.providers.get(step.provider)?.baseUrl);
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
  return { providers: [...byProvider.values()] } as ProvidersView;
}

/** Operators see which providers may take which attempts, and why; and can verify them. */
export async function registerProviderRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db, contracts } = deps;
  const operatorOnly = (request: { principal?: { operator: boolean } }): void => {
    if (!request.principal?.operator) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'only operators may see or verify providers');
  };
  // The names a verification may be narrowed to, as the document lists them.
  const operationNames = [...deps.operations.keys()];
  const providerNames = [...new Set([...contracts.providers.keys(), ...operationNames.flatMap((name) => contracts.routeFor(name).map((step) => step.provider))])];
  const VerifyBodySchema = Type.Union(
    [
      Type.Object(
        {
          operation: Type.Optional(NameOf(operationNames, 'only this operation')),
          provider: Type.Optional(NameOf(providerNames, 'only this provider')),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ],
    { description: 'optional: no body, null, or a filter' },
  );

  v1.get(
    '/providers',
    {
      config: { problems: [400, 401, 403, 429] },
      schema: {
        operationId: 'listProviders',
        tags: ['operators'],
        summary: 'Providers and their verification state per operation (operators only)',
        description: 'For each operation and route step: the current template hash, the newest verification, and whether the step may take an attempt now (with the reason when not).',
        response: { 200: jsonResponse(ProvidersSchema, 'Providers and their route steps') },
      },
    },
    async (request) => {
      operatorOnly(request);
      return describeProviders(deps);
    },
  );

  v1.post(
    '/providers/verify',
    {
      config: { problems: [400, 401, 403, 404, 408, 413, 415, 429] },
      schema: {
        operationId: 'verifyProviders',
        tags: ['operators'],
        summary: 'Verify providers against the output contracts now (operators only)',
        description: "Runs each matching route step's probe fixtures and records the outcome; answers with the verifications made. 404 when no route step matches the filter.",
        body: VerifyBodySchema,
        response: { 200: jsonResponse(VerificationsSchema, 'The verifications made') },
      },
    },
    async (request) => {
      operatorOnly(request);
      const filter = { operation: request.body?.operation, provider: request.body?.provider };
      const records = await verifyContracts({ db, operations: deps.operations, providers: contracts.providers, routeFor: contracts.routeFor }, filter, {
        samples: contracts.samples,
        timeoutMs: contracts.timeoutMs,
      });
      if (records.length === 0) throw notFound('route step for that operation and provider');
      return {
        verifications: records.map((record) => ({ ...record, verifiedAt: record.verifiedAt.toISOString() })),
      };
    },
  );
}
