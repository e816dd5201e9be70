import { Type, type Static, type StringOptions, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { EFFECT_NAME_MAX_LENGTH, EFFECT_NAME_PATTERN } from '../effects/types';
import { LISTABLE_STATUSES } from '../ledger/job-list';
import { CURSOR_PATTERN } from './list-cursor';
import { ACCEPTED_STRING_PATTERN } from './strings';

/**
 * Schemas the routes validate with and the OpenAPI document is generated
 * from. Every string a client sends states the one string rule (strings.ts)
 * as its pattern, so the document says what the edge refuses.
 */

/** A string Onceflow accepts from a client: no NUL, no lone surrogate. */
export const Text = (options: StringOptions = {}) => Type.String({ pattern: ACCEPTED_STRING_PATTERN, ...options });

/** A string enum, documented as `enum` (not a union of constants). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

export const Uuid = (description: string) => Type.String({ format: 'uuid', description, examples: ['0b5c2f1e-8d7a-4c39-9e61-2f4a7d3b9c10'] });

const Timestamp = Type.String({ format: 'date-time' });

/** Any JSON object the server writes (evidence, receipts, event details). */
const OpenObject = (description?: string) => Type.Object({}, { additionalProperties: true, ...(description ? { description } : {}) });

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ format: 'uri', description: 'a stable URI naming the kind of problem, under https://onceflow.dev/problems/' }),
    title: Type.String(),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    detail: Type.String(),
    errors: Type.Optional(
      Type.Array(Type.Object({ pointer: Type.String({ description: 'JSON pointer into the part of the request named in detail' }), detail: Type.String() }), {
        description: 'each failing field of an invalid request',
      }),
    ),
  },
  {
    $id: 'Problem',
    additionalProperties: true,
    description: 'RFC 9457 problem details (application/problem+json)',
    examples: [
      {
        type: 'https://onceflow.dev/problems/validation',
        title: 'Invalid input',
        status: 400,
        detail: 'the input is not valid for support.reply v1: /input/channel must be one of "email", "chat"',
        errors: [{ pointer: '/input/channel', detail: 'must be one of "email", "chat"' }],
      },
    ],
  },
);

const Resolution = Type.Object({ outcome: Type.String(), reason: Type.String(), by: Type.String(), at: Timestamp }, { additionalProperties: true });

/** Money as an exact decimal string: never a JSON number, which clients would read as floating point. */
const Money = (description: string) => Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description, examples: ['0.000123'] });
const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217', examples: ['USD'] });
const TokenCount = (description: string) => Type.Integer({ minimum: 0, description });

export const UsageSchema = Type.Object(
  {
    reported: Type.Boolean({ description: 'false while the usage is not known (an unknown attempt, a provider that reported none); zeros mean nothing was consumed' }),
    inputTokens: Type.Optional(TokenCount('every input token, cached ones included')),
    outputTokens: Type.Optional(TokenCount('output tokens')),
    cachedTokens: Type.Optional(TokenCount('the input tokens served from the prompt cache, where the provider says')),
    model: Type.Optional(Type.String({ description: 'the model the provider says answered' })),
    providerRequestId: Type.Optional(Type.String({ description: "the provider's id of its response" })),
    latencyMs: Type.Optional(Type.Integer({ minimum: 0 })),
    cost: Type.Optional(Money('by the price table; absent when the model has no price')),
    currency: Type.Optional(Currency),
  },
  { description: "what the attempt consumed, as the provider reported it; present on attempts recorded since metering began" },
);

const SettledAttempt = Type.Object(
  {
    attemptId: Uuid('attempt id'),
    seq: Type.Integer({ minimum: 1 }),
    provider: Type.String(),
    model: Type.String(),
    status: Type.String(),
    reported: Type.Boolean(),
    winner: Type.Boolean(),
    cost: Type.Optional(Money('the attempt\'s cost when the job was settled')),
    currency: Type.Optional(Currency),
  },
  { additionalProperties: false },
);

const Adjustment = Type.Object(
  {
    attemptId: Uuid('the attempt whose usage arrived after settlement'),
    reason: Type.String({ examples: ['late_usage'] }),
    currency: Type.Optional(Currency),
    providerCost: Money('what the late fact adds to the provider cost'),
    billable: Money('what it adds to the billable amount (only under billing all-attempts)'),
    inputTokens: TokenCount('input tokens it adds'),
    outputTokens: TokenCount('output tokens it adds'),
    at: Timestamp,
  },
  { additionalProperties: false },
);

export const SettlementSchema = Type.Object(
  {
    run: Type.Integer({ minimum: 1, description: 'the run of the job this bill is for (1 unless the job was reopened)' }),
    jobStatus: StringEnum(['succeeded', 'failed', 'cancelled']),
    billing: StringEnum(['winner', 'all_attempts']),
    currency: Type.Optional(Currency),
    providerCost: Money('what Onceflow paid the providers for every attempt priced in the settlement currency'),
    billable: Money('what the principal is billed under the billing policy'),
    inputTokens: TokenCount('input tokens of every attempt whose usage was known'),
    outputTokens: TokenCount('output tokens of every attempt whose usage was known'),
    attemptsUnpriced: Type.Integer({ minimum: 0, description: 'attempts whose cost was not known at settlement (not added in; a later report is an adjustment)' }),
    attempts: Type.Array(SettledAttempt),
    settledAt: Timestamp,
    adjustments: Type.Array(Adjustment, { description: 'facts learned after settlement, each its own row; the settlement itself never changes' }),
  },
  { additionalProperties: false, description: "the bill of one run of the job, written with that run's terminal state (invariant 13: one bill per run; a job never reopened has one run)" },
);

export const AttemptSchema = Type.Object({
  id: Uuid('attempt id'),
  seq: Type.Integer({ minimum: 1, description: "the attempt's place among all the job's attempts, across runs" }),
  run: Type.Integer({ minimum: 1, description: 'the run of the job the attempt belongs to (1 unless the job was reopened)' }),
  provider: Type.String(),
  model: Type.String(),
  status: StringEnum(['starting', 'running', 'unknown', 'succeeded', 'failed', 'cancelled', 'discarded']),
  startedAt: Timestamp,
  endedAt: Type.Optional(Timestamp),
  error: Type.Optional(Type.Object({ class: Type.String(), detail: Type.String() }, { additionalProperties: true })),
  evidence: Type.Optional(OpenObject('what the provider answered, kept when it broke the contract (2 KiB at most)')),
  resolution: Type.Optional(Resolution),
  usage: Type.Optional(UsageSchema),
  deadlineUsed: Type.Optional(
    Type.Object(
      {
        ms: Type.Integer({ minimum: 0, description: 'from the attempt opening to its end (or to the job ending, for an attempt that never ended)' }),
        share: Type.Number({ minimum: 0, description: "that time as a share of the job's whole deadline (from its creation to the deadline)" }),
      },
      { additionalProperties: false, description: "on a failed job with a deadline: how much of the deadline this attempt used" },
    ),
  ),
});

export const EffectSchema = Type.Object({
  name: Type.String(),
  key: Type.String({ description: 'the idempotency key sent downstream' }),
  status: StringEnum(['pending', 'succeeded', 'failed', 'needs_review']),
  phase: Type.Optional(StringEnum(['claimed', 'sending', 'not_performed'], { description: 'while pending: claimed (nothing sent), sending (a try may have reached the downstream), not_performed (it turned the last try away)' })),
  tries: Type.Optional(Type.Integer({ description: 'tries sent downstream under the claim, across owners' })),
  receipt: Type.Optional(OpenObject('what the downstream system answered, e.g. {"messageId": "..."}')),
  error: Type.Optional(OpenObject()),
  lastLookup: Type.Optional(OpenObject('the last receipt lookup by key: when, and found or the error')),
  lookupFailures: Type.Optional(Type.Integer({ description: 'receipt lookups that could not answer (absent when none)' })),
  resolution: Type.Optional(Resolution),
  owners: Type.Optional(Type.Integer({ description: 'how many workers have held the claim; above 1 means it was recovered' })),
  updatedAt: Timestamp,
});

export const EventSchema = Type.Object({
  type: Type.String(),
  at: Timestamp,
  detail: OpenObject(),
});

export const JobSchema = Type.Object(
  {
    id: Uuid('job id'),
    operation: Type.String(),
    idempotencyKey: Type.String(),
    requestDigest: Type.String({ pattern: '^sha256:[0-9a-f]{64}$' }),
    schemaVersion: Type.Integer(),
    status: StringEnum(['accepted', 'running', 'awaiting_resolution', 'succeeded', 'failed', 'cancelled'], {
      description: 'awaiting_resolution: an attempt is unknown and no new attempt may start',
    }),
    result: Type.Optional(Type.Unknown({ description: 'present only when status is succeeded' })),
    error: Type.Optional(Type.Object({ type: Type.String(), detail: Type.String() }, { additionalProperties: true, description: 'present only when status is failed' })),
    run: Type.Integer({
      minimum: 1,
      description: "the job's current run: 1, plus one for each time a failed job was reopened (an operation's reopenFailed); each run is a new attempt series under the same job id",
    }),
    attempts: Type.Array(AttemptSchema),
    effects: Type.Array(EffectSchema),
    events: Type.Array(EventSchema),
    settlement: Type.Optional(Type.Unsafe<Static<typeof SettlementSchema>>({ ...SettlementSchema, description: "the current run's bill, once the job is terminal" })),
    settlements: Type.Optional(Type.Array(SettlementSchema, { description: "a reopened job's bills, one per ended run, oldest first (absent for a job never reopened)" })),
    deadline: Type.Optional(Type.String({ format: 'date-time', description: "the caller's deadline (Request-Deadline, or the operation's default), as stored by the request that created the job" })),
    workflowId: Type.String(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    links: Type.Object({ self: Type.String(), temporalUi: Type.String({ format: 'uri' }) }),
  },
  {
    $id: 'Job',
    description: 'The durable record of one intent (API.md, "The job")',
    examples: [
      {
        id: '0b5c2f1e-8d7a-4c39-9e61-2f4a7d3b9c10',
        operation: 'support.reply',
        idempotencyKey: 'click-1',
        requestDigest: 'sha256:4f9b1c0e6a1f8e0d3c2b5a49788c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c',
        schemaVersion: 1,
        status: 'succeeded',
        run: 1,
        result: { reply: 'Sorry to hear that. A replacement is on its way.', escalate: false, messageId: 'msg-1' },
        attempts: [
          {
            id: '7a1d3e52-46c9-4b8e-a0f7-1c2d3e4f5a6b',
            seq: 1,
            run: 1,
            provider: 'sim-primary',
            model: 'sim-small',
            status: 'succeeded',
            startedAt: '2026-01-01T12:00:00.000Z',
            endedAt: '2026-01-01T12:00:01.000Z',
            usage: { reported: true, inputTokens: 61, outputTokens: 24, cachedTokens: 0, model: 'sim-small', providerRequestId: 'chatcmpl-1', latencyMs: 412, cost: '0.00002355', currency: 'USD' },
          },
        ],
        effects: [{ name: 'message.send', key: 'onceflow-0b5c2f1e-8d7a-4c39-9e61-2f4a7d3b9c10-message.send', status: 'succeeded', receipt: { messageId: 'msg-1' }, owners: 1, updatedAt: '2026-01-01T12:00:01.500Z' }],
        events: [{ type: 'job.created', at: '2026-01-01T12:00:00.000Z', detail: {} }],
        settlement: {
          run: 1,
          jobStatus: 'succeeded',
          billing: 'winner',
          currency: 'USD',
          providerCost: '0.00002355',
          billable: '0.00002355',
          inputTokens: 61,
          outputTokens: 24,
          attemptsUnpriced: 0,
          attempts: [{ attemptId: '7a1d3e52-46c9-4b8e-a0f7-1c2d3e4f5a6b', seq: 1, provider: 'sim-primary', model: 'sim-small', status: 'succeeded', reported: true, winner: true, cost: '0.00002355', currency: 'USD' }],
          settledAt: '2026-01-01T12:00:01.600Z',
          adjustments: [],
        },
        workflowId: 'job-support.reply-Q2xpY2sgb25jZQ',
        createdAt: '2026-01-01T12:00:00.000Z',
        updatedAt: '2026-01-01T12:00:01.600Z',
        links: { self: '/v1/jobs/0b5c2f1e-8d7a-4c39-9e61-2f4a7d3b9c10', temporalUi: 'http://127.0.0.1:8233/namespaces/onceflow/workflows/job-support.reply-Q2xpY2sgb25jZQ' },
      },
    ],
  },
);
export type JobView = Static<typeof JobSchema>;

/** The body as validated; the document shows one branch per operation instead (openapi.ts). */
export const SubmitBodySchema = Type.Object(
  {
    operation: Text({ minLength: 1, maxLength: 128, description: 'a registered operation, e.g. support.reply' }),
    schemaVersion: Type.Optional(Type.Integer({ minimum: 1, description: "the version of the operation's input schema the input is written for; default: the newest" })),
    input: Type.Object({}, { additionalProperties: true, description: "validated against the operation's input schema" }),
  },
  { additionalProperties: false },
);
export type SubmitBody = Static<typeof SubmitBodySchema>;

/** What a `not` pattern refuses in Prefer: a wait preference whose value is not 0 to 60 (jobs-routes.ts). */
const WAIT_VALUE = '0*([0-9]|[1-5][0-9]|60)([",; \\t]|$)';
export const PREFER_BAD_WAIT_PATTERN = `(^|[,; \\t])[Ww][Aa][Ii][Tt][ \\t]*=[ \\t]*(?![ \\t])("(?!${WAIT_VALUE})|(?!"|${WAIT_VALUE}))`;

/**
 * 1 to 255 printable ASCII characters, not starting or ending with a space
 * (HTTP trims those, so a key could never arrive with them).
 */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]([\\x20-\\x7E]{0,253}[\\x21-\\x7E])?$';

/** The shape of Request-Deadline (RFC 3339 date-time with offset, or empty: none); api/request-deadline.ts also checks the day exists. */
export const REQUEST_DEADLINE_PATTERN = '^(\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?([Zz]|[+-]\\d{2}:\\d{2}))?$';

export const SubmitHeadersSchema = Type.Object({
  'Idempotency-Key': Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: IDEMPOTENCY_KEY_PATTERN,
    description: 'one per intent, chosen by the client: 1 to 255 printable ASCII characters (no leading or trailing space); scoped by principal and operation',
    examples: ['click-1'],
  }),
  Prefer: Type.Optional(
    Type.String({
      not: { pattern: PREFER_BAD_WAIT_PATTERN },
      description: 'wait=N (0 to 60): wait up to N seconds for a terminal state before answering; other preferences are ignored',
      examples: ['wait=10'],
    }),
  ),
  'Request-Deadline': Type.Optional(
    Type.String({
      pattern: REQUEST_DEADLINE_PATTERN,
      description:
        "the caller's deadline for a new job, an RFC 3339 date-time with its offset; not part of the intent (not in the digest); stored by the request that creates the job and never changed by a retry; a later one than the operation's maximum is shortened to it. Empty: no deadline. Malformed, or past for a new key: 400 invalid-deadline",
      examples: ['2026-12-01T09:30:00Z'],
    }),
  ),
});

export const JobIdParamsSchema = Type.Object({ id: Uuid('job id') });

/** 1 to 200, as a query string carries it. */
export const LIMIT_PATTERN = '^([1-9][0-9]?|1[0-9]{2}|200)$';
export const DEFAULT_LIST_LIMIT = 50;

/**
 * GET /v1/jobs: a tenant finds its job by (operation, idempotencyKey); an
 * operator lists jobs by status. The two are told apart by idempotencyKey
 * (jobs-routes.ts says which combinations are refused).
 */
export const FindJobQuerySchema = Type.Object(
  {
    operation: Type.Optional(
      Text({ minLength: 1, maxLength: 128, description: 'the operation the job was submitted for (with idempotencyKey); or, for operators listing jobs, only jobs of this operation', examples: ['support.reply'] }),
    ),
    idempotencyKey: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN, description: "the Idempotency-Key it was submitted with: finds the caller's one job of (operation, idempotencyKey)", examples: ['click-1'] }),
    ),
    status: Type.Optional(
      StringEnum(LISTABLE_STATUSES, {
        description: 'operators: list the jobs in this status, across principals, oldest first; needs_review lists the jobs with an effect in needs_review. Required to list; not with idempotencyKey',
      }),
    ),
    principal: Type.Optional(Text({ minLength: 1, maxLength: 255, description: "operators listing jobs: only this principal's jobs", examples: ['alice'] })),
    cursor: Type.Optional(Type.String({ pattern: CURSOR_PATTERN, description: "operators listing jobs: the page after this one (a previous page's next), with the same filters" })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: `operators listing jobs: jobs per page, 1 to 200 (default ${DEFAULT_LIST_LIMIT})`, examples: ['50'] })),
  },
  { additionalProperties: false },
);

export const JobSummarySchema = Type.Object({
  id: Uuid('job id'),
  principal: Type.String(),
  operation: Type.String(),
  idempotencyKey: Type.String(),
  status: StringEnum(['accepted', 'running', 'awaiting_resolution', 'succeeded', 'failed', 'cancelled']),
  effectsInReview: Type.Array(Type.String(), { description: 'names of its effects in needs_review' }),
  workflowId: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  links: Type.Object({ self: Type.String(), temporalUi: Type.String({ format: 'uri' }) }),
});
export type JobSummaryView = Static<typeof JobSummarySchema>;

export const JobPageSchema = Type.Object(
  {
    jobs: Type.Array(JobSummarySchema),
    next: Type.Optional(Type.String({ pattern: CURSOR_PATTERN, description: 'the cursor of the next page; absent on the last page' })),
  },
  { $id: 'JobPage', additionalProperties: false, description: 'One page of jobs, for operators: oldest first, in (createdAt, id) order, so paging goes on where it stopped while new jobs arrive' },
);
export type JobPageView = Static<typeof JobPageSchema>;

export const ResolutionParamsSchema = Type.Object({ id: Uuid('job id'), attemptId: Uuid('attempt id') });

const Reason = Text({ minLength: 1, maxLength: 2000, description: 'why, for the audit record', examples: ['the provider shows no such request'] });

export const ResolutionBodySchema = Type.Object(
  {
    outcome: StringEnum(['failed', 'cancelled']),
    reason: Reason,
  },
  { additionalProperties: false },
);

/** Effect names: lowercase words joined by dots, dashes or underscores (message.send). */
export const EffectNameSchema = Type.String({ pattern: EFFECT_NAME_PATTERN, maxLength: EFFECT_NAME_MAX_LENGTH, description: 'effect name', examples: ['message.send'] });

export const EffectResolutionParamsSchema = Type.Object({ id: Uuid('job id'), name: EffectNameSchema });

/** A receipt as an operator gives it: one level of scalar values, e.g. {"messageId": "m-1"}. */
const ReceiptSchema = Type.Object(
  {},
  {
    additionalProperties: Type.Union([Text({ maxLength: 2000 }), Type.Number(), Type.Boolean(), Type.Null()]),
    propertyNames: { pattern: ACCEPTED_STRING_PATTERN, minLength: 1, maxLength: 128 },
    maxProperties: 32,
    description: 'what the operator found downstream, e.g. {"messageId": "..."}: names to strings, numbers, booleans or null',
    examples: [{ messageId: 'msg-1' }],
  },
);

export const EffectResolutionBodySchema = Type.Object(
  {
    outcome: StringEnum(['succeeded', 'failed']),
    reason: Reason,
    receipt: Type.Optional(ReceiptSchema),
  },
  { additionalProperties: false },
);

export const CancelBodySchema = Type.Union(
  [Type.Object({ reason: Type.Optional(Text({ maxLength: 2000, description: 'why, for the audit record', examples: ['the customer changed their mind'] })) }, { additionalProperties: false }), Type.Null()],
  { description: 'optional: no body, null, or an object with a reason' },
);

/**
 * Response headers. `x-required` marks a header the status always carries;
 * the document turns it into the header's `required` (openapi.ts).
 */
export const ResponseHeaders = {
  location: { type: 'string', description: 'the job: /v1/jobs/{id}', 'x-required': true },
  idempotentReplayed: { type: 'string', enum: ['true'], description: 'present when the job already existed for this intent' },
  preferenceApplied: { type: 'string', pattern: '^wait=[0-9]+$', description: 'present when the request asked to wait (Prefer: wait=N)' },
  retryAfter: { type: 'string', pattern: '^[0-9]+$', description: 'seconds to wait before trying again', 'x-required': true },
  retryAfterIfAny: { type: 'string', pattern: '^[0-9]+$', description: 'seconds to wait before trying again, when a retry may help' },
  wwwAuthenticate: { type: 'string', enum: ['Bearer'], description: 'how to authenticate', 'x-required': true },
  rateLimit: { type: 'string', pattern: '^[0-9]+$', description: 'the rate limit of the principal, its remaining requests, or seconds to its reset' },
  linkNext: { type: 'string', description: 'the next page of a list (RFC 8288): </v1/jobs?...&cursor=...>; rel="next"; absent on the last page' },
} as const;

/** A JSON success response: its schema, what it means, and the headers it sends. */
export function jsonResponse(schema: TSchema | { $ref: string }, description: string, headers?: Record<string, object>) {
  return { description, ...(headers ? { headers } : {}), content: { 'application/json': { schema } } };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Error statuses the route may answer; documented as problem+json in the OpenAPI document. */
    problems?: number[];
  }
}

export const UsageQuerySchema = Type.Object(
  {
    from: Type.Optional(Type.String({ format: 'date-time', description: 'at or after this instant (RFC 3339); default: the start of the current UTC month', examples: ['2026-01-01T00:00:00Z'] })),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'before this instant (RFC 3339); must be after from; default: the start of the next UTC month', examples: ['2026-02-01T00:00:00Z'] })),
    groupBy: Type.Optional(StringEnum(['operation', 'day'], { description: 'one line per operation (default) or per UTC day, and per currency' })),
    principal: Type.Optional(Text({ minLength: 1, maxLength: 255, description: "operators only: whose usage; a tenant key always reads its own (any other value is a 403)", examples: ['alice'] })),
  },
  { additionalProperties: false },
);

export const UsageReportSchema = Type.Object(
  {
    principal: Type.String(),
    from: Timestamp,
    to: Timestamp,
    groupBy: StringEnum(['operation', 'day']),
    lines: Type.Array(
      Type.Object(
        {
          key: Type.String({ description: 'the operation, or the UTC day (YYYY-MM-DD)' }),
          currency: Type.Union([Currency, Type.Null()], { description: 'null for jobs with nothing priced (e.g. cancelled before any attempt)' }),
          jobs: Type.Integer({ minimum: 0 }),
          inputTokens: TokenCount('input tokens of the settled jobs'),
          outputTokens: TokenCount('output tokens of the settled jobs'),
          providerCost: Money('what the providers were paid'),
          billable: Money('what the principal is billed'),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: "a principal's totals: its settlements (one bill per run) plus what was learned after them (adjustments, on the day they were learned)" },
);
export type UsageReportView = Static<typeof UsageReportSchema>;
