import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { EffectAdapter } from '../effects/types';
import { effectTrust } from '../effects/verify/trust';
import { EffectNotVerifiableError, verifyEffects } from '../effects/verify/verify-effects';
import { latestEffectVerification, type EffectVerification } from '../ledger/effect-verifications';
import type { Queryable } from '../ledger/queryable';
import type { ApiDeps } from './deps';
import { notFound, ProblemError, ProblemType } from './problems';
import { jsonResponse, StringEnum } from './schemas';

const Open = Type.Object({}, { additionalProperties: true });

const VerificationSchema = Type.Object({
  effect: Type.String(),
  passed: Type.Boolean(),
  host: Type.String({ description: 'the host the effect sends to, which the verification holds for' }),
  declarationDigest: Type.String({ description: "SHA-256 of the effect's declaration as written: a changed declaration needs a new verification" }),
  onceflowVersion: Type.String(),
  verifiedAt: Type.String({ format: 'date-time' }),
  drills: Type.Record(Type.String(), Open, { description: 'per drill (send, lookup_found, lookup_not_found, dedupe, disconnect, classification): passed, detail, keys, requests, receipts, ms; or skipped with why' }),
});

const Standing = Type.Object({ current: Type.Boolean(), why: Type.Optional(Type.String()) });

const EffectsSchema = Type.Object({
  effects: Type.Array(
    Type.Object({
      name: Type.String(),
      claims: Type.Object({ lookup: Type.Boolean(), deduplicates: Type.Boolean() }),
      latestVerification: Type.Union([VerificationSchema, Type.Null()]),
      trust: Type.Object({ lookup: Standing, dedupe: Standing }),
      recovery: StringEnum(['settle_or_send', 'repeat', 'review'], {
        description: 'what recovery may do now with a send that may have happened: settle from the lookup or send again when it says not found (a verified lookup), repeat with the key (a verified deduplication), or hand it to an operator',
      }),
    }),
  ),
});

const VerificationsSchema = Type.Object({ verifications: Type.Array(VerificationSchema) });

export type EffectsView = Static<typeof EffectsSchema>;

const view = (verification: EffectVerification) => ({ ...verification, verifiedAt: verification.verifiedAt.toISOString() });

/**
 * Each effect of the deployment with its claims, its newest verification and
 * what recovery may do now: what GET /v1/effects answers and the console shows.
 */
export async function describeEffects(db: Queryable, adapters: ReadonlyMap<string, EffectAdapter>, maxAgeMs: number): Promise<EffectsView> {
  const effects = [];
  for (const adapter of adapters.values()) {
    const trust = await effectTrust(db, adapter, maxAgeMs);
    const latest = await latestEffectVerification(db, adapter.name);
    const recovery = adapter.lookup && trust.lookup.current ? 'settle_or_send' : adapter.repeatSafe && trust.dedupe.current ? 'repeat' : 'review';
    effects.push({
      name: adapter.name,
      claims: { lookup: adapter.lookup !== undefined, deduplicates: adapter.repeatSafe },
      latestVerification: latest ? view(latest) : null,
      trust: { lookup: trust.lookup.current ? { current: true } : { current: false, why: trust.lookup.why }, dedupe: trust.dedupe.current ? { current: true } : { current: false, why: trust.dedupe.why } },
      recovery,
    });
  }
  return { effects } as EffectsView;
}

/** Operators see each effect's claims and what was verified of them, and can run the drills. */
export async function registerEffectRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;
  const effects = deps.effects ?? { adapters: new Map<string, EffectAdapter>(), verificationMaxAgeMs: 0 };
  const operatorOnly = (request: { principal?: { operator: boolean } }): void => {
    if (!request.principal?.operator) throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'only operators may see or verify effects');
  };
  const names = [...effects.adapters.keys()];
  const VerifyBodySchema = Type.Union(
    [Type.Object({ effect: Type.Optional(names.length ? StringEnum(names, { description: 'only this effect' }) : Type.String({ description: 'only this effect' })) }, { additionalProperties: false }), Type.Null()],
    { description: 'optional: no body, null, or the effect to verify' },
  );

  v1.get(
    '/effects',
    {
      config: { problems: [400, 401, 403, 429] },
      schema: {
        operationId: 'listEffects',
        tags: ['operators'],
        summary: 'Effects, their claims and what was verified of them (operators only)',
        description: "For each effect: whether it declares a lookup and deduplication, its newest verification (the drills' evidence), whether each claim holds a current pass, and what recovery may do now with a send that may have happened.",
        response: { 200: jsonResponse(EffectsSchema, 'The effects') },
      },
    },
    async (request) => {
      operatorOnly(request);
      return describeEffects(db, effects.adapters, effects.verificationMaxAgeMs);
    },
  );

  v1.post(
    '/effects/verify',
    {
      config: { problems: [400, 401, 403, 404, 408, 413, 415, 429] },
      schema: {
        operationId: 'verifyEffects',
        tags: ['operators'],
        summary: "Run the effects' drills now (operators only)",
        description: 'Runs the drills of every effect that makes a claim (a lookup, deduplication), or of the one named, with fresh keys (onceflow-verify-…) against the downstream, and records each verification. 404 when the effect named makes no claim or does not exist.',
        body: VerifyBodySchema,
        response: { 200: jsonResponse(VerificationsSchema, 'The verifications made') },
      },
    },
    async (request) => {
      operatorOnly(request);
      try {
        const made = await verifyEffects(db, effects.adapters, request.body?.effect ? { effect: request.body.effect } : {});
        return { verifications: made.map(view) };
      } catch (err) {
        if (err instanceof EffectNotVerifiableError) throw notFound('effect that makes a claim to verify');
        throw err;
      }
    },
  );
}
