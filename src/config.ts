import { DEFAULT_TASK_QUEUE } from './temporal/names';
import { SIM_PORT_ENV } from './sim/ports';
import { ConfigError } from './config-error';
import { temporalConnectionSettings, type TemporalConnectionSettings } from './temporal/connection-settings';

/**
 * Configuration, parsed and checked once at boot into a typed object. Every
 * component takes the slice it needs; nothing else reads process.env.
 */
export { ConfigError };

/** The principal id operator keys act as; no API key may claim it. */
export const OPERATOR_PRINCIPAL = 'operator';

/** The principal the entries' verification sends its probes as (api/entries/verify.ts); no API key may claim it. */
export const PROBE_PRINCIPAL = 'onceflow-probe';

export interface ApiKeys {
  /** api key → principal id */
  principals: Map<string, string>;
  operatorKeys: string[];
}

export interface OnceflowConfig {
  databaseUrl?: string;
  database: {
    /** Connections per process (API and worker each have a pool). */
    poolSize: number;
    /** A statement running longer is cancelled by PostgreSQL (0: no limit). */
    statementTimeoutMs: number;
  };
  temporal: {
    address: string;
    /** TLS, client certificate and API key, when the cluster wants them. */
    connection: TemporalConnectionSettings;
    namespace: string;
    taskQueue: string;
    uiUrl: string;
    /** How long a workflow task waits on the sticky queue of the worker that ran it last before any worker may take it. */
    stickyQueueTimeoutMs: number;
    /** A workflow task not finished in this long is given to another worker (how soon a worker lost during a call is noticed). */
    workflowTaskTimeoutMs: number;
    /** Onceflow's custom search attributes are registered on the server (OnceflowPrincipal, OnceflowOperation, OnceflowJobStatus). */
    searchAttributes: boolean;
    /** A worker runs one warm-up workflow as it starts, so its first job costs what later ones do. */
    warmUp: boolean;
    /**
     * How many workflows a worker keeps in memory between their tasks (the
     * SDK's maxCachedWorkflows). Set here, not left to the SDK, whose default
     * follows the heap limit: scripts/node-service caps the heap, and a cache
     * sized from it would be 10 workflows, fewer than the jobs in flight.
     */
    cachedWorkflows: number;
    /**
     * How long one call into a workflow's sandbox may run before the SDK stops
     * it (its isolateExecutionTimeout, 5 s by default). Node counts this time
     * on the clock, so a process that stands still (SIGSTOP, a frozen VM or
     * container) for longer trips it; a stop that lands in a cancellation scope
     * (every condition(fn, ms)) then aborts the whole process with "async hook
     * stack has become corrupted". Long, so that only a workflow stuck in a
     * loop reaches it.
     */
    isolateTimeoutMs: number;
  };
  api: {
    host: string;
    port: number;
    bodyLimitBytes: number;
    rateLimitPerMinute: number;
    publicUrl: string;
    /** How long a request to a protocol entry waits for its job to end before its 409 with Retry-After (seconds). */
    entryWaitSeconds?: number;
  } & ApiEdgeConfig;
  keys: ApiKeys;
  /** Per-principal budgets per UTC day, checked when a new intent arrives (replays are always answered). */
  budgets: BudgetConfig;
  attempts: {
    timeoutMs: number;
    heartbeatTimeoutMs: number;
    reconcileIntervalMs: number;
    maxAttempts: number;
    backoffMs: number;
  };
  effects: {
    /** How long a claim is held before another owner may take it over (and a performEffect's budget). */
    leaseMs: number;
    /** One downstream call's budget. */
    callTimeoutMs: number;
    maxTries: number;
    /** Failed receipt lookups (one per lease) before recovery stops asking: it repeats when safe, else the effect goes to review. */
    maxLookupFailures: number;
    /** How long an effect's verification (its drills) holds for recovery to rely on its claims. */
    verificationMaxAgeMs: number;
    backoffMs: number;
    messagesUrl: string;
    /** The messaging service deduplicates by Idempotency-Key (a repeat is then safe). */
    messagesDeduplicate: boolean;
    webhookUrl?: string;
    webhookDeduplicates: boolean;
  };
  contracts: {
    /** A passing verification older than this is stale: the fallback is skipped. */
    maxAgeMs: number;
    /** Samples per probe fixture when verifying. */
    samples: number;
    demotion: { window: number; minSamples: number; threshold: number };
    /** How long an API process keeps an operation's running canary and promoted version before reading them again (ONCEFLOW_ROUTES_CACHE_MS). */
    routesCacheMs: number;
  };
  providersFile?: string;
  /** The operations file (YAML); unset: the demo file, operations/demo.yaml. */
  operationsFile?: string;
  /** Where the built-in providers and the messaging service find the simulators (SIM_*_PORT, as `npm run sim` reads them). */
  simulators: { primaryUrl: string; backupUrl: string; downstreamUrl: string };
  /** Whether `npm start` verifies every route's contracts before it takes jobs (ONCEFLOW_VERIFY_AT_START, default on). */
  verifyAtStart: boolean;
  /**
   * Whether the effects' drills run at start (ONCEFLOW_EFFECTS_VERIFY_AT_START):
   * by default under `npm start`, off for `npm run worker` (a drill sends to the
   * downstream; production runs `onceflow effects verify` on purpose).
   */
  effectsVerifyAtStart: boolean | undefined;
  /** Where the worker serves its counters for Prometheus (`npm run worker`, `npm start`). */
  workerMetricsPort: number;
  retentionDays: number;
  logLevel: string;
}

/** Daily budgets per principal; each unset one does not apply. */
export interface BudgetConfig {
  /** Billable amount per UTC day, as a decimal string, in `currency`. */
  costPerDay?: string;
  currency: string;
  /** Input plus output tokens per UTC day. */
  tokensPerDay?: number;
  /**
   * What the cost budget limits: what the principal is billed (the default),
   * or what its jobs cost the provider, billed or not (under `billing:
   * winner`, failed jobs and lost attempts cost without being billed).
   */
  measure: BudgetMeasure;
}

export const BUDGET_MEASURES = ['billable', 'provider_cost'] as const;
export type BudgetMeasure = (typeof BUDGET_MEASURES)[number];

/** A non-negative decimal as a string, as prices are written. */
const DECIMAL = /^(0|[1-9][0-9]{0,12})(\.[0-9]{1,12})?$/;

function budgetConfig(env: NodeJS.ProcessEnv): BudgetConfig {
  const cost = env.ONCEFLOW_BUDGET_COST_PER_DAY;
  if (cost !== undefined && cost !== '' && !DECIMAL.test(cost)) throw new ConfigError(`ONCEFLOW_BUDGET_COST_PER_DAY=${cost} must be a decimal, e.g. 5.00`);
  const currency = env.ONCEFLOW_BUDGET_CURRENCY || 'USD';
  if (!/^[A-Z]{3}$/.test(currency)) throw new ConfigError(`ONCEFLOW_BUDGET_CURRENCY=${currency} must be an ISO 4217 code, e.g. USD`);
  const tokens = env.ONCEFLOW_BUDGET_TOKENS_PER_DAY;
  const measure = env.ONCEFLOW_BUDGET_COST_MEASURE || 'billable';
  if (!(BUDGET_MEASURES as readonly string[]).includes(measure)) throw new ConfigError(`ONCEFLOW_BUDGET_COST_MEASURE=${measure} must be one of ${BUDGET_MEASURES.join(', ')}`);
  return {
    currency,
    measure: measure as BudgetMeasure,
    ...(cost ? { costPerDay: cost } : {}),
    ...(tokens ? { tokensPerDay: int(env, 'ONCEFLOW_BUDGET_TOKENS_PER_DAY', 0, 1) } : {}),
  };
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}=${raw} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

/**
 * Parses `principal:key,principal:key` and operator keys.
 * @throws ConfigError on a malformed pair or a key given twice.
 */
export function parseApiKeys(apiKeys: string | undefined, operatorKeys: string | undefined): ApiKeys {
  const principals = new Map<string, string>();
  for (const pair of (apiKeys ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const colon = pair.indexOf(':');
    const principal = pair.slice(0, colon).trim();
    const key = pair.slice(colon + 1).trim();
    if (colon <= 0 || !key || !principal) throw new ConfigError('ONCEFLOW_API_KEYS must be a comma-separated list of principal:key pairs');
    if (principals.has(key)) throw new ConfigError('ONCEFLOW_API_KEYS lists one key twice');
    if (principal === OPERATOR_PRINCIPAL) throw new ConfigError(`ONCEFLOW_API_KEYS: "${OPERATOR_PRINCIPAL}" is reserved for operator keys (ONCEFLOW_OPERATOR_KEYS)`);
    if (principal === PROBE_PRINCIPAL) throw new ConfigError(`ONCEFLOW_API_KEYS: "${PROBE_PRINCIPAL}" is reserved for the entries' verification probes`);
    principals.set(key, principal);
  }
  const operators = (operatorKeys ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return { principals, operatorKeys: operators };
}

/**
 * Reads the configuration from the environment.
 * @throws ConfigError naming the variable that is wrong.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): OnceflowConfig {
  const port = int(env, 'ONCEFLOW_API_PORT', 3000, 0, 65535);
  const host = env.ONCEFLOW_API_HOST ?? '127.0.0.1';
  const simulators = simulatorsConfig(env);
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    database: {
      poolSize: int(env, 'ONCEFLOW_PG_POOL_SIZE', 10, 1, 1_000),
      statementTimeoutMs: int(env, 'ONCEFLOW_PG_STATEMENT_TIMEOUT_MS', 30_000, 0),
    },
    temporal: {
      address: env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      connection: temporalConnectionSettings(env, env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'),
      namespace: env.TEMPORAL_NAMESPACE ?? 'onceflow',
      taskQueue: env.ONCEFLOW_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
      uiUrl: (env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233').replace(/\/$/, ''),
      // Short, so a lost worker's workflows move to another worker in about a second, not ten.
      stickyQueueTimeoutMs: int(env, 'ONCEFLOW_STICKY_QUEUE_TIMEOUT_MS', 1_000, 100),
      workflowTaskTimeoutMs: int(env, 'ONCEFLOW_WORKFLOW_TASK_TIMEOUT_MS', 10_000, 1_000, 120_000),
      searchAttributes: int(env, 'ONCEFLOW_SEARCH_ATTRIBUTES', 1, 0, 1) === 1,
      warmUp: int(env, 'ONCEFLOW_WORKER_WARM_UP', 1, 0, 1) === 1,
      cachedWorkflows: int(env, 'ONCEFLOW_WORKER_CACHED_WORKFLOWS', 500, 2),
      isolateTimeoutMs: int(env, 'ONCEFLOW_WORKFLOW_ISOLATE_TIMEOUT_MS', 60_000, 1_000, 4_294_967_295),
    },
    api: {
      host,
      port,
      bodyLimitBytes: int(env, 'ONCEFLOW_BODY_LIMIT_BYTES', 256 * 1024, 1024),
      rateLimitPerMinute: int(env, 'ONCEFLOW_RATE_LIMIT_PER_MINUTE', 600, 1),
      entryWaitSeconds: int(env, 'ONCEFLOW_ENTRY_WAIT_SECONDS', 30, 0, 60),
      publicUrl: (env.ONCEFLOW_PUBLIC_URL ?? `http://${host}:${port}`).replace(/\/$/, ''),
      ...apiEdgeConfig(env),
    },
    keys: parseApiKeys(env.ONCEFLOW_API_KEYS, env.ONCEFLOW_OPERATOR_KEYS),
    budgets: budgetConfig(env),
    attempts: {
      timeoutMs: int(env, 'ONCEFLOW_ATTEMPT_TIMEOUT_MS', 30_000, 100),
      heartbeatTimeoutMs: int(env, 'ONCEFLOW_HEARTBEAT_TIMEOUT_MS', 10_000, 500),
      reconcileIntervalMs: int(env, 'ONCEFLOW_RECONCILE_INTERVAL_MS', 60_000, 100),
      maxAttempts: int(env, 'ONCEFLOW_MAX_ATTEMPTS', 3, 1, 20),
      backoffMs: int(env, 'ONCEFLOW_ATTEMPT_BACKOFF_MS', 1_000, 0),
    },
    effects: effectsConfig(env),
    contracts: {
      maxAgeMs: int(env, 'ONCEFLOW_VERIFICATION_MAX_AGE_HOURS', 24, 1) * 3_600_000,
      samples: int(env, 'ONCEFLOW_VERIFICATION_SAMPLES', 3, 1, 50),
      demotion: {
        window: int(env, 'ONCEFLOW_DEMOTION_WINDOW', 20, 1),
        minSamples: int(env, 'ONCEFLOW_DEMOTION_MIN_SAMPLES', 5, 1),
        threshold: int(env, 'ONCEFLOW_DEMOTION_THRESHOLD_PERCENT', 50, 1, 100) / 100,
      },
      routesCacheMs: int(env, 'ONCEFLOW_ROUTES_CACHE_MS', 1_000, 0, 60_000),
    },
    providersFile: env.ONCEFLOW_PROVIDERS_FILE || undefined,
    operationsFile: env.ONCEFLOW_OPERATIONS_FILE || undefined,
    simulators,
    verifyAtStart: env.ONCEFLOW_VERIFY_AT_START !== '0',
    effectsVerifyAtStart: env.ONCEFLOW_EFFECTS_VERIFY_AT_START === undefined || env.ONCEFLOW_EFFECTS_VERIFY_AT_START === '' ? undefined : env.ONCEFLOW_EFFECTS_VERIFY_AT_START !== '0',
    workerMetricsPort: int(env, 'ONCEFLOW_WORKER_METRICS_PORT', 9464, 0, 65535),
    retentionDays: int(env, 'ONCEFLOW_RETENTION_DAYS', 30, 1),
    logLevel: env.LOG_LEVEL ?? 'info',
  };
}

function simulatorsConfig(env: NodeJS.ProcessEnv): OnceflowConfig['simulators'] {
  const url = (role: keyof typeof SIM_PORT_ENV): string => `http://127.0.0.1:${int(env, SIM_PORT_ENV[role].name, SIM_PORT_ENV[role].defaultPort, 0, 65535)}`;
  return { primaryUrl: `${url('primary')}/v1`, backupUrl: `${url('backup')}/v1`, downstreamUrl: url('downstream') };
}

function effectsConfig(env: NodeJS.ProcessEnv): OnceflowConfig['effects'] {
  const leaseMs = int(env, 'ONCEFLOW_EFFECT_LEASE_MS', 60_000, 200);
  const callTimeoutMs = int(env, 'ONCEFLOW_EFFECT_CALL_TIMEOUT_MS', Math.min(10_000, Math.floor(leaseMs / 4)), 50);
  if (callTimeoutMs >= leaseMs) throw new ConfigError('ONCEFLOW_EFFECT_CALL_TIMEOUT_MS must be shorter than ONCEFLOW_EFFECT_LEASE_MS');
  return {
    leaseMs,
    callTimeoutMs,
    maxTries: int(env, 'ONCEFLOW_EFFECT_MAX_TRIES', 3, 1, 20),
    maxLookupFailures: int(env, 'ONCEFLOW_EFFECT_MAX_LOOKUP_FAILURES', 10, 1, 1_000),
    verificationMaxAgeMs: int(env, 'ONCEFLOW_EFFECT_VERIFICATION_MAX_AGE_HOURS', 168, 1) * 3_600_000,
    backoffMs: int(env, 'ONCEFLOW_EFFECT_BACKOFF_MS', 500, 0),
    messagesUrl: (env.ONCEFLOW_MESSAGES_URL ?? simulatorsConfig(env).downstreamUrl).replace(/\/$/, ''),
    messagesDeduplicate: env.ONCEFLOW_MESSAGES_DEDUPLICATE === '1',
    webhookUrl: env.ONCEFLOW_WEBHOOK_URL || undefined,
    webhookDeduplicates: env.ONCEFLOW_WEBHOOK_DEDUPLICATES === '1',
  };
}

/** How the API treats slow clients, connections and failed authentications (docs/configuration.md). */
export interface ApiEdgeConfig {
  /** All request headers must arrive within this (408 otherwise). */
  headersTimeoutMs: number;
  /** The whole request, headers and body, must arrive within this (408 otherwise). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Open connections at most; further ones are closed at once. */
  maxConnections: number;
  /** Failed authentications per client address and window before the address gets 429. */
  authFailuresPerWindow: number;
  authFailureWindowMs: number;
  /** Fastify's trustProxy: false, true, a hop count, or addresses/CIDRs of trusted proxies. */
  trustProxy: boolean | number | string[];
}

function apiEdgeConfig(env: NodeJS.ProcessEnv): ApiEdgeConfig {
  const headersTimeoutMs = int(env, 'ONCEFLOW_API_HEADERS_TIMEOUT_MS', 10_000, 1);
  const requestTimeoutMs = int(env, 'ONCEFLOW_API_REQUEST_TIMEOUT_MS', 30_000, 1);
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError('ONCEFLOW_API_HEADERS_TIMEOUT_MS must not be longer than ONCEFLOW_API_REQUEST_TIMEOUT_MS');
  const trust = env.ONCEFLOW_API_TRUST_PROXY?.trim() ?? '';
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: int(env, 'ONCEFLOW_API_KEEP_ALIVE_TIMEOUT_MS', 72_000, 1),
    maxConnections: int(env, 'ONCEFLOW_API_MAX_CONNECTIONS', 2_048, 1),
    authFailuresPerWindow: int(env, 'ONCEFLOW_AUTH_FAILURES_PER_WINDOW', 20, 1),
    authFailureWindowMs: int(env, 'ONCEFLOW_AUTH_FAILURE_WINDOW_MS', 60_000, 1),
    trustProxy:
      trust === '' || trust === 'false' ? false : trust === 'true' ? true : /^\d+$/.test(trust) ? Number(trust) : trust.split(',').map((s) => s.trim()).filter(Boolean),
  };
}
