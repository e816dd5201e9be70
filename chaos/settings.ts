/**
 * The stack's short timeouts for chaos runs, so unknown attempts, lost workers
 * and stale effects resolve in seconds. The fault catalogue sizes its delays
 * from these, so a `late` answer really outlives the attempt timeout.
 */
export const SETTINGS = {
  attemptTimeoutMs: 2_000,
  heartbeatTimeoutMs: 1_000,
  reconcileIntervalMs: 1_000,
  attemptBackoffMs: 100,
  maxAttempts: 3,
  effectLeaseMs: 2_000,
  effectCallTimeoutMs: 500,
  effectBackoffMs: 50,
  /** The provider adapter's lookup budget (DEFAULT_LOOKUP_TIMEOUT_MS): a pause of the simulator must stay below it. */
  lookupTimeoutMs: 5_000,
} as const;

/** The environment that gives the API and the workers these settings. */
export function settingsEnv(): Record<string, string> {
  return {
    ONCEFLOW_ATTEMPT_TIMEOUT_MS: String(SETTINGS.attemptTimeoutMs),
    ONCEFLOW_HEARTBEAT_TIMEOUT_MS: String(SETTINGS.heartbeatTimeoutMs),
    ONCEFLOW_RECONCILE_INTERVAL_MS: String(SETTINGS.reconcileIntervalMs),
    ONCEFLOW_ATTEMPT_BACKOFF_MS: String(SETTINGS.attemptBackoffMs),
    ONCEFLOW_MAX_ATTEMPTS: String(SETTINGS.maxAttempts),
    ONCEFLOW_EFFECT_LEASE_MS: String(SETTINGS.effectLeaseMs),
    ONCEFLOW_EFFECT_CALL_TIMEOUT_MS: String(SETTINGS.effectCallTimeoutMs),
    ONCEFLOW_EFFECT_BACKOFF_MS: String(SETTINGS.effectBackoffMs),
    // The suite polls hard and submits storms: the rate limit is not what it tests.
    ONCEFLOW_RATE_LIMIT_PER_MINUTE: '1000000',
    // Off-contract answers are drawn on purpose; demotion would turn later trials into
    // "no eligible provider" and hide the paths under test, so it never triggers here.
    ONCEFLOW_DEMOTION_MIN_SAMPLES: '1000000',
    ONCEFLOW_VERIFICATION_SAMPLES: '1',
    LOG_LEVEL: 'warn',
  };
}
