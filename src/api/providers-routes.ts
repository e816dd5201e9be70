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
import { Entry, latestEntryVerification } from '../ledger/entry-verifications';
import { aliasDigest, ENTRY_CLIENTS } from './entries/verify';
import { ONCEFLOW_VERSION } from '../version';
import type { EntryProbes } from './app';

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

const EntryState = Type.Object({
  entry: StringEnum(Object.values(Entry)),
  client: Type.String({ description: 'the official client library the entry is verified with, and its version' }),
  verified: Type.Boolean({ description: 'whether a passing verification holds now: for the alias as it is, this client, this Onceflow, within the maximum age' }),
  detail: Type.String(),
  latestVerification: Type.Union([
    Type.Object({ verifiedAt: Type.String({ format: 'date-time' }), passed: Type.Boolean(), client: Type.String(), onceflowVersion: Type.String(), aliasDigest: Type.String(), probes: Type.Array(Type.Object({}, { additionalProperties: true })) }),
    Type.Null(),
  ]),
});

const AliasEntriesSchema = Type.Array(Type.Object({ alias: Type.String(), aliasDigest: Type.String(), entries: Type.Array(EntryState) }), {
  description: 'each model alias, and which protocol entries it is verified through',
});

export type ProvidersView = Static<typeof ProvidersSchema> & { aliases: Static<typeof AliasEntriesSchema> };

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
  return { providers: [...byProvider.values()], aliases: await describeAliasEntries(deps) } as ProvidersView;
}

/** Each alias with each entry: whether a passing verification through it holds now, and the newest one. */
async function describeAliasEntries(deps: Pick<ApiDeps, 'db' | 'contracts' | 'operations'>): Promise<ProvidersView['aliases']> {
  const aliases: ProvidersView['aliases'] = [];
  const now = Date.now();
  for (const alias of deps.operations.values()) {
    if (!alias.alias) continue;
    const digest = aliasDigest(alias);
    const entries = [];
    for (const entry of Object.values(Entry)) {
      const latest = await latestEntryVerification(deps.db, alias.name, entry);
      const ageMs = latest ? now - latest.verifiedAt.getTime() : 0;
      const [verified, detail] = !latest
        ? [false, `never verified through the ${entry} entry`]
        : !latest.passed
          ? [false, `its verification of ${latest.verifiedAt.toISOString()} failed`]
          : latest.aliasDigest !== digest
            ? [false, 'verified for another contract of the alias']
            : latest.client !== ENTRY_CLIENTS[entry]
              ? [false, `verified with ${latest.client}, not ${ENTRY_CLIENTS[entry]}`]
              : latest.onceflowVersion !== ONCEFLOW_VERSION
                ? [false, `verified by Onceflow ${latest.onceflowVersion}, not ${ONCEFLOW_VERSION}`]
                : ageMs > deps.contracts.gate.maxAgeMs
                  ? [false, `verified ${Math.round(ageMs / 3_600_000)} h ago; the limit is ${Math.round(deps.contracts.gate.maxAgeMs / 3_600_000)} h`]
                  : [true, `verified at ${latest.verifiedAt.toISOString()} with ${latest.client}`];
      entries.push({
        entry,
        client: ENTRY_CLIENTS[entry],
        verified,
        detail,
        latestVerification: latest
          ? { verifiedAt: latest.verifiedAt.toISOString(), passed: latest.passed, client: latest.client, onceflowVersion: latest.onceflowVersion, aliasDigest: latest.aliasDigest, probes: latest.probes as unknown as Array<Record<string, unknown>> }
          : null,
      });
    }
    aliases.push({ alias: alias.name, aliasDigest: digest, entries });
  }
  return aliases;
}

/** Operators see which providers may take which attempts, and why; and can verify them. */
export async function registerProviderRoutes(app: FastifyInstance, deps: ApiDeps, entryProbes: EntryProbes): Promise<void> {
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
        response: { 200: jsonResponse(Type.Composite([ProvidersSchema, Type.Object({ aliases: AliasEntriesSchema })]), 'Providers and their route steps, and the aliases with their entries') },
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

  const aliasNames = [...deps.operations.values()].filter((operation) => operation.alias).map((operation) => operation.name);
  const VerifyEntriesBodySchema = Type.Union(
    [
      Type.Object(
        { alias: Type.Optional(NameOf(aliasNames, 'only this alias')), entry: Type.Optional(StringEnum(Object.values(Entry), { description: 'only this entry' })) },
        { additionalProperties: false },
      ),
      Type.Null(),
    ],
    { description: 'optional: no body, null, or a filter' },
  );
  const EntryVerificationsSchema = Type.Object({
    verifications: Type.Array(
      Type.Object({
        alias: Type.String(),
        entry: StringEnum(Object.values(Entry)),
        aliasDigest: Type.String(),
        client: Type.String(),
        onceflowVersion: Type.String(),
        passed: Type.Boolean(),
        probes: Type.Array(Type.Object({}, { additionalProperties: true })),
        verifiedAt: Type.String({ format: 'date-time' }),
      }),
    ),
  });

  v1.post(
    '/entries/verify',
    {
      config: { problems: [400, 401, 403, 404, 408, 413, 415, 429] },
      schema: {
        operationId: 'verifyEntries',
        tags: ['operators'],
        summary: 'Verify the model aliases through the protocol entries now (operators only)',
        description:
          "Sends each alias's probes through each entry with that protocol's official client, as jobs of the probe principal, and records the outcome: the answer on contract and naming its job, the usage as metered, a replay of the same key, the same answer streamed. 404 when no alias matches the filter.",
        body: VerifyEntriesBodySchema,
        response: { 200: jsonResponse(EntryVerificationsSchema, 'The verifications made') },
      },
    },
    async (request) => {
      operatorOnly(request);
      const filter = { ...(request.body?.alias ? { alias: request.body.alias } : {}), ...(request.body?.entry ? { entry: request.body.entry } : {}) };
      const records = await entryProbes.verify(filter);
      if (records.length === 0) throw notFound('model alias');
      return { verifications: records.map((record) => ({ ...record, probes: record.probes as unknown as Array<Record<string, unknown>>, verifiedAt: record.verifiedAt.toISOString() })) };
    },
  );
}
