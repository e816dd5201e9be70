import { Type, type Static, type TLiteral, type TUnion } from '@sinclair/typebox';

/** Schemas the routes validate with and the OpenAPI document is generated from. */

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ format: 'uri' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ pointer: Type.String(), detail: Type.String() }))),
  },
  { $id: 'Problem', additionalProperties: true, description: 'RFC 9457 problem details (application/problem+json)' },
);

const Timestamp = Type.String({ format: 'date-time' });

/** A union of string literals that keeps its literal type. */
function OneOf<const T extends readonly string[]>(values: T): TUnion<TLiteral<T[number]>[]> {
  return Type.Union(values.map((value) => Type.Literal(value)));
}

export const AttemptSchema = Type.Object({
  id: Type.String(),
  seq: Type.Integer(),
  provider: Type.String(),
  model: Type.String(),
  status: OneOf(['starting', 'running', 'unknown', 'succeeded', 'failed', 'cancelled', 'discarded']),
  startedAt: Timestamp,
  endedAt: Type.Optional(Timestamp),
  error: Type.Optional(Type.Object({ class: Type.String(), detail: Type.String() }, { additionalProperties: true })),
  evidence: Type.Optional(Type.Object({}, { additionalProperties: true })),
  resolution: Type.Optional(
    Type.Object({ outcome: Type.String(), reason: Type.String(), by: Type.String(), at: Timestamp }, { additionalProperties: true }),
  ),
});

export const EffectSchema = Type.Object({
  name: Type.String(),
  key: Type.String(),
  status: OneOf(['pending', 'succeeded', 'failed', 'needs_review']),
  receipt: Type.Optional(Type.Object({}, { additionalProperties: true })),
  error: Type.Optional(Type.Object({}, { additionalProperties: true })),
  resolution: Type.Optional(Type.Object({ outcome: Type.String(), reason: Type.String(), by: Type.String(), at: Timestamp }, { additionalProperties: true })),
  owners: Type.Optional(Type.Integer({ description: 'how many workers have held the claim; above 1 means it was recovered' })),
  updatedAt: Timestamp,
});

export const EventSchema = Type.Object({
  type: Type.String(),
  at: Timestamp,
  detail: Type.Object({}, { additionalProperties: true }),
});

export const JobSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    operation: Type.String(),
    idempotencyKey: Type.String(),
    requestDigest: Type.String({ pattern: '^sha256:[0-9a-f]{64}$' }),
    schemaVersion: Type.Integer(),
    status: OneOf(['accepted', 'running', 'awaiting_resolution', 'succeeded', 'failed', 'cancelled']),
    result: Type.Optional(Type.Unknown()),
    error: Type.Optional(Type.Object({ type: Type.String(), detail: Type.String() }, { additionalProperties: true })),
    attempts: Type.Array(AttemptSchema),
    effects: Type.Array(EffectSchema),
    events: Type.Array(EventSchema),
    workflowId: Type.String(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    links: Type.Object({ self: Type.String(), temporalUi: Type.String() }),
  },
  { $id: 'Job' },
);
export type JobView = Static<typeof JobSchema>;

export const SubmitBodySchema = Type.Object(
  {
    operation: Type.String({ minLength: 1, maxLength: 128, description: 'a registered operation, e.g. support.reply' }),
    input: Type.Object({}, { additionalProperties: true, description: "validated against the operation's input schema" }),
  },
  { additionalProperties: false },
);
export type SubmitBody = Static<typeof SubmitBodySchema>;

export const SubmitHeadersSchema = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ description: 'one per intent; 1 to 255 printable ASCII characters' })),
  prefer: Type.Optional(Type.String({ description: 'wait=N (0 to 60): wait up to N seconds for a terminal state' })),
});

export const JobIdParamsSchema = Type.Object({ id: Type.String({ description: 'job id' }) });

export const FindJobQuerySchema = Type.Object(
  { operation: Type.String({ minLength: 1 }), idempotencyKey: Type.String({ minLength: 1, maxLength: 255 }) },
  { additionalProperties: false },
);

export const ResolutionParamsSchema = Type.Object({ id: Type.String(), attemptId: Type.String() });

export const ResolutionBodySchema = Type.Object(
  {
    outcome: Type.Union([Type.Literal('failed'), Type.Literal('cancelled')]),
    reason: Type.String({ minLength: 1, maxLength: 2000 }),
  },
  { additionalProperties: false },
);

export const EffectResolutionParamsSchema = Type.Object({ id: Type.String(), name: Type.String() });

export const EffectResolutionBodySchema = Type.Object(
  {
    outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
    reason: Type.String({ minLength: 1, maxLength: 2000 }),
    receipt: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'what the operator found downstream, e.g. {"messageId": "..."}' })),
  },
  { additionalProperties: false },
);

export const CancelBodySchema = Type.Union([
  Type.Object({ reason: Type.Optional(Type.String({ maxLength: 2000 })) }, { additionalProperties: false }),
  Type.Null(),
]);

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Error statuses the route may answer; documented as problem+json in the OpenAPI document. */
    problems?: number[];
  }
}
