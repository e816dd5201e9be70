/**
 * The operator's commands, over the HTTP API with an operator key:
 *
 *   onceflow jobs list --status S [--principal P] [--operation O] [--limit N] [--cursor C] [--json]
 *   onceflow jobs show JOB [--json]
 *   onceflow attempts resolve JOB ATTEMPT --outcome failed|cancelled --reason TEXT [--json]
 *   onceflow effects resolve JOB NAME --outcome succeeded|failed --reason TEXT [--receipt JSON] [--json]
 *   onceflow effects list [--json]
 *   onceflow effects verify [--effect NAME] [--json]
 *   onceflow providers verify [--operation O] [--provider P] [--json]
 *   onceflow entries verify [--alias A] [--entry openai|anthropic] [--json]
 *   onceflow routes list [--json]
 *   onceflow routes canary start --operation O --version V --route P/M[,P/M…] --owner WHO --share PCT (--expires-in 2h | --expires-at T)
 *       [--window N] [--max-contract-violations PCT] [--max-unknowns PCT] [--max-failed PCT] [--max-effects-in-review N] [--reason TEXT] [--json]
 *   onceflow routes canary promote|stop|rollback OPERATION VERSION [--reason TEXT] [--json]   (stop and rollback need --reason)
 *
 * Where and as whom: --url and --key, or ONCEFLOW_URL (default
 * http://127.0.0.1:3000) and ONCEFLOW_KEY. Exit 0 when done, 1 when the
 * server said no (its problem's title and detail are printed) or a
 * verification failed, 2 on a bad command line.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { drillsInOrder } from '../ledger/effect-verifications';
import { Entry, EntryCheck } from '../ledger/entry-verifications';
import { LISTABLE_STATUSES, type ListableStatus } from '../ledger/job-list';
import { OnceflowApiError, OnceflowClient, OnceflowUnavailableError, type Job, type JobPage, type NewCanary, type RouteOperations, type RouteVersion, type Verification, type Effects, type EffectVerificationView, type EntryVerificationView } from '../client';
import { LIMIT_PATTERN } from '../api/schemas';
import { ExitCode, table, UsageError, when, type CliIo } from './io';
import { readStackFile, stackFilePath } from '../stack/stack-file';

export const OPERATOR_USAGE = `usage: onceflow jobs list --status STATUS [--principal P] [--operation O] [--limit N] [--cursor C] [--json]
       onceflow jobs show JOB [--json]
       onceflow attempts resolve JOB ATTEMPT --outcome failed|cancelled --reason TEXT [--json]
       onceflow effects resolve JOB NAME --outcome succeeded|failed --reason TEXT [--receipt JSON] [--json]
       onceflow effects list [--json]
       onceflow effects verify [--effect NAME] [--json]
       onceflow providers verify [--operation O] [--provider P] [--json]
       onceflow entries verify [--alias A] [--entry openai|anthropic] [--json]
       onceflow routes list [--json]
       onceflow routes canary start --operation O --version V --route P/M[,P/M...] --owner WHO --share PCT (--expires-in 2h | --expires-at T)
           [--window N] [--max-contract-violations PCT] [--max-unknowns PCT] [--max-failed PCT] [--max-effects-in-review N] [--reason TEXT] [--json]
       onceflow routes canary promote|stop|rollback OPERATION VERSION [--reason TEXT] [--json]
  (each with --url URL --key KEY, or ONCEFLOW_URL and ONCEFLOW_KEY)`;

export const OPERATOR_GROUPS = ['jobs', 'attempts', 'effects', 'providers', 'entries', 'routes'];

const CONNECTION = { url: { type: 'string' }, key: { type: 'string' }, json: { type: 'boolean' } } as const;
const DEFAULT_URL = 'http://127.0.0.1:3000';

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O, positionals: number) {
  const parsed = parseArgs({ args, options: { ...CONNECTION, ...options }, allowPositionals: true, strict: true });
  if (parsed.positionals.length !== positionals) throw new UsageError(positionals === 0 ? `unexpected ${parsed.positionals.join(' ')}` : `expected ${positionals} argument(s)`);
  return parsed;
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new UsageError(`${flag} is required`);
  return value;
}

function oneOf<T extends string>(value: string | undefined, flag: string, allowed: readonly T[]): T {
  const given = required(value, flag);
  if (!allowed.includes(given as T)) throw new UsageError(`${flag} is one of ${allowed.join(', ')}`);
  return given as T;
}

/** Runs one operator command. @throws UsageError (exit 2). */
export async function operatorCommand(group: string, command: string | undefined, args: string[], io: CliIo): Promise<number> {
  // Three words: onceflow routes canary start|promote|stop|rollback.
  if (group === 'routes' && command === 'canary') {
    command = `canary ${args[0] ?? ''}`.trim();
    args = args.slice(1);
  }
  const run = commandOf(group, command);
  if (!run) throw new UsageError(`unknown command ${group} ${command ?? ''}`.trim());
  const { client, json, finish } = await run(args, io);
  try {
    const shown = await finish(client);
    if (json) io.out(JSON.stringify(shown.json, null, 2));
    else io.out(shown.text);
    return shown.failed ? ExitCode.refused : ExitCode.ok;
  } catch (err) {
    if (err instanceof OnceflowApiError) {
      io.err(`onceflow: ${err.status} ${err.problem.title}: ${err.problem.detail}`);
      if (json) io.out(JSON.stringify(err.problem, null, 2));
      return ExitCode.refused;
    }
    if (err instanceof OnceflowUnavailableError) {
      io.err(`onceflow: ${err.message}: ${(err.cause as Error | undefined)?.message ?? 'no answer'}`);
      return ExitCode.refused;
    }
    throw err;
  }
}

interface Shown {
  json: unknown;
  text: string;
  failed?: boolean;
}

type Prepared = { client: OnceflowClient; json: boolean; finish(client: OnceflowClient): Promise<Shown> };

function connect(values: { url?: string; key?: string }, io: CliIo): OnceflowClient {
  // On the dev stack, its API and operator key: npm start says where they are (stack-file.ts).
  const stack = values.key === undefined || values.url === undefined ? readStackFile(stackFilePath(io.env)) : undefined;
  const apiKey = values.key ?? io.env.ONCEFLOW_KEY ?? stack?.operatorKey;
  if (!apiKey) throw new UsageError('no API key: pass --key or set ONCEFLOW_KEY (an operator key)');
  const baseUrl = values.url ?? io.env.ONCEFLOW_URL ?? stack?.apiUrl ?? DEFAULT_URL;
  if (!/^https?:\/\/[^/]/.test(baseUrl)) throw new UsageError(`--url ${baseUrl} is not an http(s) URL`);
  return new OnceflowClient({ baseUrl, apiKey, fetch: io.fetch, maxRetries: 2 });
}

function commandOf(group: string, command: string | undefined): ((args: string[], io: CliIo) => Promise<Prepared>) | undefined {
  const key = `${group} ${command}`;
  if (key === 'jobs list') {
    return async (args, io) => {
      const { values } = parse(args, { status: { type: 'string' }, principal: { type: 'string' }, operation: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' } }, 0);
      const status = oneOf<ListableStatus>(values.status, '--status', LISTABLE_STATUSES);
      if (values.limit !== undefined && !new RegExp(LIMIT_PATTERN).test(values.limit)) throw new UsageError('--limit is 1 to 200');
      const query = { status, principal: values.principal, operation: values.operation, limit: values.limit === undefined ? undefined : Number(values.limit), cursor: values.cursor };
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showPage(await client.listJobs(query), query) };
    };
  }
  if (key === 'jobs show') {
    return async (args, io) => {
      const { values, positionals } = parse(args, {}, 1);
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showJob(await client.getJob(positionals[0]!)) };
    };
  }
  if (key === 'attempts resolve') {
    return async (args, io) => {
      const { values, positionals } = parse(args, { outcome: { type: 'string' }, reason: { type: 'string' } }, 2);
      const resolution = { outcome: oneOf(values.outcome, '--outcome', ['failed', 'cancelled'] as const), reason: required(values.reason, '--reason') };
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showJob(await client.resolveAttempt(positionals[0]!, positionals[1]!, resolution)) };
    };
  }
  if (key === 'effects resolve') {
    return async (args, io) => {
      const { values, positionals } = parse(args, { outcome: { type: 'string' }, reason: { type: 'string' }, receipt: { type: 'string' } }, 2);
      const resolution = {
        outcome: oneOf(values.outcome, '--outcome', ['succeeded', 'failed'] as const),
        reason: required(values.reason, '--reason'),
        ...(values.receipt === undefined ? {} : { receipt: receiptOf(values.receipt) }),
      };
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showJob(await client.resolveEffect(positionals[0]!, positionals[1]!, resolution)) };
    };
  }
  if (key === 'effects list') {
    return async (args, io) => {
      const { values } = parse(args, {}, 0);
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showEffects(await client.listEffects()) };
    };
  }
  if (key === 'effects verify') {
    return async (args, io) => {
      const { values } = parse(args, { effect: { type: 'string' } }, 0);
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showEffectVerifications(await client.verifyEffects(values.effect ? { effect: values.effect } : {})) };
    };
  }
  if (key === 'providers verify') {
    return async (args, io) => {
      const { values } = parse(args, { operation: { type: 'string' }, provider: { type: 'string' } }, 0);
      const filter = { ...(values.operation ? { operation: values.operation } : {}), ...(values.provider ? { provider: values.provider } : {}) };
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showVerifications(await client.verifyProviders(filter)) };
    };
  }
  if (key === 'entries verify') {
    return async (args, io) => {
      const { values } = parse(args, { alias: { type: 'string' }, entry: { type: 'string' } }, 0);
      const filter = { ...(values.alias ? { alias: values.alias } : {}), ...(values.entry !== undefined ? { entry: oneOf(values.entry, '--entry', Object.values(Entry)) } : {}) };
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showEntryVerifications(await client.verifyEntries(filter)) };
    };
  }
  if (key === 'routes list') {
    return async (args, io) => {
      const { values } = parse(args, {}, 0);
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showRoutes(await client.listRoutes()) };
    };
  }
  if (key === 'routes canary start') {
    return async (args, io) => {
      const { values } = parse(
        args,
        {
          operation: { type: 'string' },
          version: { type: 'string' },
          route: { type: 'string' },
          owner: { type: 'string' },
          share: { type: 'string' },
          'expires-in': { type: 'string' },
          'expires-at': { type: 'string' },
          window: { type: 'string' },
          'max-contract-violations': { type: 'string' },
          'max-unknowns': { type: 'string' },
          'max-failed': { type: 'string' },
          'max-effects-in-review': { type: 'string' },
          reason: { type: 'string' },
        },
        0,
      );
      const operation = required(values.operation, '--operation');
      const canary: NewCanary = {
        version: required(values.version, '--version'),
        steps: stepsOf(required(values.route, '--route')),
        owner: required(values.owner, '--owner'),
        sharePercent: numberOf(required(values.share, '--share'), '--share'),
        expiresAt: expiryOf(values['expires-in'], values['expires-at']),
        ...(values.reason ? { reason: values.reason } : {}),
      };
      const thresholds = {
        ...(values.window !== undefined ? { window: numberOf(values.window, '--window') } : {}),
        ...(values['max-contract-violations'] !== undefined ? { contractViolationsPercent: numberOf(values['max-contract-violations'], '--max-contract-violations') } : {}),
        ...(values['max-unknowns'] !== undefined ? { unknownsPercent: numberOf(values['max-unknowns'], '--max-unknowns') } : {}),
        ...(values['max-failed'] !== undefined ? { failedPercent: numberOf(values['max-failed'], '--max-failed') } : {}),
        ...(values['max-effects-in-review'] !== undefined ? { effectsInReview: numberOf(values['max-effects-in-review'], '--max-effects-in-review') } : {}),
      };
      if (Object.keys(thresholds).length > 0) canary.thresholds = thresholds;
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showRouteVersion(await client.startCanary(operation, canary)) };
    };
  }
  for (const action of ['promote', 'stop', 'rollback'] as const) {
    if (key !== `routes canary ${action}`) continue;
    return async (args, io) => {
      const { values, positionals } = parse(args, { reason: { type: 'string' } }, 2);
      const reason = action === 'promote' ? values.reason : required(values.reason, '--reason');
      return { client: connect(values, io), json: values.json === true, finish: async (client) => showRouteVersion(await client.changeCanary(positionals[0]!, positionals[1]!, action, reason)) };
    };
  }
  return undefined;
}

/** provider/model[,provider/model…], in failover order. */
function stepsOf(text: string): Array<{ provider: string; model: string }> {
  return text.split(',').map((part) => {
    const slash = part.indexOf('/');
    if (slash <= 0 || slash === part.length - 1) throw new UsageError(`--route is provider/model[,provider/model...]; got ${JSON.stringify(part)}`);
    return { provider: part.slice(0, slash).trim(), model: part.slice(slash + 1).trim() };
  });
}

function numberOf(text: string, flag: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new UsageError(`${flag} is a number`);
  return value;
}

const DURATION_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** --expires-in 90m|2h|7d, or --expires-at an RFC 3339 instant; one of them. */
function expiryOf(expiresIn: string | undefined, expiresAt: string | undefined): string {
  if ((expiresIn === undefined) === (expiresAt === undefined)) throw new UsageError('give one of --expires-in (e.g. 2h) and --expires-at (an RFC 3339 instant)');
  if (expiresAt !== undefined) {
    if (Number.isNaN(Date.parse(expiresAt))) throw new UsageError('--expires-at is an RFC 3339 instant, e.g. 2026-12-01T12:00:00Z');
    return new Date(expiresAt).toISOString();
  }
  const match = /^(\d+)([mhd])$/.exec(expiresIn!);
  if (!match) throw new UsageError('--expires-in is minutes, hours or days: 90m, 2h, 7d');
  return new Date(Date.now() + Number(match[1]) * DURATION_MS[match[2]!]!).toISOString();
}

function showRoutes(routes: RouteOperations): Shown {
  const rows = routes.operations.flatMap((o) =>
    o.versions.map((v) => [
      o.operation,
      v.version,
      v.kind,
      v.state + (o.serving.version === v.version ? ' (serving)' : '') + (o.serving.canary?.version === v.version ? ` (${o.serving.canary.sharePercent} %)` : ''),
      v.steps.map((s) => `${s.provider}/${s.model}`).join(' > '),
      String(v.admitted),
      `${v.window.jobs}: ${v.window.succeeded} ok, ${v.window.failed} failed, ${v.window.withUnknowns} unknown, ${v.window.withContractViolations} off-contract, ${v.window.withEffectsInReview} in review`,
      v.expiresAt ? when(v.expiresAt) : '-',
    ]),
  );
  const text = rows.length === 0 ? 'no route versions' : table([['OPERATION', 'VERSION', 'KIND', 'STATE', 'ROUTE', 'ADMITTED', 'LAST JOBS', 'EXPIRES'], ...rows]);
  return { json: routes, text };
}

function showRouteVersion(v: RouteVersion): Shown {
  const lines = [
    table([
      ['operation', v.operation],
      ['version', v.version],
      ['state', v.state + (v.reason ? ` (${v.reason})` : '')],
      ['route', v.steps.map((s) => `${s.provider}/${s.model}`).join(' > ')],
      ['owner', v.owner ?? '-'],
      ['share', v.sharePercent === undefined ? '-' : `${v.sharePercent} %`],
      ['expires', v.expiresAt ? when(v.expiresAt) : '-'],
      ['previous', v.previousVersion ?? '-'],
      ['thresholds', compact(v.thresholds)],
      ['admitted', String(v.admitted)],
    ]),
    '',
    'EVENTS',
    table([['AT', 'EVENT', 'DETAIL'], ...v.events.map((e) => [when(e.at), e.type, compact(e.detail)])]),
  ];
  return { json: v, text: lines.join('\n') };
}

function receiptOf(text: string): Record<string, unknown> {
  let receipt: unknown;
  try {
    receipt = JSON.parse(text);
  } catch {
    throw new UsageError('--receipt is a JSON object, e.g. \'{"messageId":"m-1"}\'');
  }
  if (receipt === null || typeof receipt !== 'object' || Array.isArray(receipt)) throw new UsageError('--receipt is a JSON object, e.g. \'{"messageId":"m-1"}\'');
  return receipt as Record<string, unknown>;
}

const compact = (value: unknown): string => (value === undefined ? '-' : JSON.stringify(value));

function showPage(page: JobPage, query: { status: string; principal?: string; operation?: string; limit?: number }): Shown {
  const rows = page.jobs.map((job) => [job.id, job.principal, job.operation, job.status, job.effectsInReview.join(',') || '-', when(job.createdAt), job.idempotencyKey]);
  const lines = [page.jobs.length === 0 ? `no jobs in ${query.status}` : table([['JOB', 'PRINCIPAL', 'OPERATION', 'STATUS', 'IN REVIEW', 'CREATED', 'IDEMPOTENCY KEY'], ...rows])];
  if (page.next) {
    const filters = [`--status ${query.status}`, query.principal && `--principal ${query.principal}`, query.operation && `--operation ${query.operation}`, query.limit && `--limit ${query.limit}`].filter(Boolean).join(' ');
    lines.push('', `more: onceflow jobs list ${filters} --cursor ${page.next}`);
  }
  return { json: page, text: lines.join('\n') };
}

function showJob(job: Job): Shown {
  const lines = [
    table([
      ['job', job.id],
      ['operation', job.operation],
      ['idempotency key', job.idempotencyKey],
      ['status', job.status],
      ['created', when(job.createdAt)],
      ['updated', when(job.updatedAt)],
      ['workflow', job.workflowId],
      ['temporal ui', job.links.temporalUi],
      ...(job.result !== undefined ? [['result', compact(job.result)]] : []),
      ...(job.error ? [['error', `${job.error.type}: ${job.error.detail}`]] : []),
    ]),
    '',
    'ATTEMPTS',
    job.attempts.length === 0
      ? '  none'
      : table([
          ['SEQ', 'ATTEMPT', 'PROVIDER', 'STATUS', 'STARTED', 'ENDED', 'ERROR', 'RESOLUTION'],
          ...job.attempts.map((a) => [
            String(a.seq),
            a.id,
            `${a.provider}/${a.model}`,
            a.status,
            when(a.startedAt),
            when(a.endedAt),
            a.error ? `${a.error.class}: ${a.error.detail}` : '-',
            a.resolution ? `${a.resolution.outcome} by ${a.resolution.by}: ${a.resolution.reason}` : '-',
          ]),
        ]),
    ...job.attempts.filter((a) => a.evidence).map((a) => `  evidence of attempt ${a.seq}: ${compact(a.evidence)}`),
    '',
    'EFFECTS',
    job.effects.length === 0
      ? '  none'
      : table([
          ['NAME', 'STATUS', 'RECEIPT', 'RESOLUTION', 'UPDATED'],
          ...job.effects.map((e) => [e.name, e.status, compact(e.receipt), e.resolution ? `${e.resolution.outcome} by ${e.resolution.by}: ${e.resolution.reason}` : '-', when(e.updatedAt)]),
        ]),
    '',
    'EVENTS',
    table([['AT', 'EVENT', 'DETAIL'], ...job.events.map((e) => [when(e.at), e.type, Object.keys(e.detail).length ? compact(e.detail) : ''])]),
  ];
  return { json: job, text: lines.join('\n') };
}

function showEffects(effects: Effects): Shown {
  const standing = (claimed: boolean, trust: { current: boolean; why?: string }) => (!claimed ? '-' : trust.current ? 'verified' : `no: ${trust.why}`);
  const text = table([
    ['EFFECT', 'LOOKUP', 'DEDUPLICATES', 'RECOVERY', 'VERIFIED'],
    ...effects.effects.map((e) => [e.name, standing(e.claims.lookup, e.trust.lookup), standing(e.claims.deduplicates, e.trust.dedupe), e.recovery, when(e.latestVerification?.verifiedAt)]),
  ]);
  return { json: effects, text };
}

function showEffectVerifications(verifications: EffectVerificationView[]): Shown {
  const rows = verifications.flatMap((v) =>
    drillsInOrder(v.drills).map(([drill, result]) => {
      const r = result as { passed?: boolean; skipped?: boolean; detail?: string; why?: string; ms?: number };
      return [v.effect, drill, r.skipped ? 'skipped' : r.passed ? 'PASS' : 'FAIL', r.skipped ? (r.why ?? '') : `${r.detail ?? ''}${r.ms !== undefined ? ` (${r.ms} ms)` : ''}`];
    }),
  );
  const text = table([['EFFECT', 'DRILL', 'RESULT', 'DETAIL'], ...rows]);
  return { json: verifications, text, failed: verifications.some((v) => !v.passed) };
}

/** A row per alias and entry; CHECKS names each check every probe passed, and the failed ones with their detail. */
function showEntryVerifications(verifications: EntryVerificationView[]): Shown {
  const checksOf = (v: EntryVerificationView): string => {
    const failed = v.probes.flatMap((probe) => Object.entries(probe.checks).filter(([, check]) => !check?.passed).map(([name, check]) => `${name} failed (${probe.name}): ${check?.detail ?? ''}`));
    if (failed.length) return failed.join('; ');
    return Object.values(EntryCheck).filter((name) => v.probes.length > 0 && v.probes.every((probe) => probe.checks[name]?.passed)).join(' ');
  };
  const text = table([
    ['RESULT', 'ALIAS', 'ENTRY', 'CLIENT', 'CHECKS', 'VERIFIED'],
    ...verifications.map((v) => [v.passed ? 'PASS' : 'FAIL', v.alias, v.entry, v.client, checksOf(v), when(v.verifiedAt)]),
  ]);
  return { json: verifications, text, failed: verifications.some((v) => !v.passed) };
}

function showVerifications(verifications: Verification[]): Shown {
  const text = table([
    ['RESULT', 'OPERATION', 'PROVIDER', 'MODEL', 'SCHEMA', 'SAMPLES', 'VERIFIED'],
    ...verifications.map((v) => [v.passed ? 'PASS' : 'FAIL', v.operation, v.provider, v.model, `v${v.schemaVersion}`, String(v.samples), when(v.verifiedAt)]),
  ]);
  return { json: verifications, text, failed: verifications.some((v) => !v.passed) };
}
