import { Counter, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Onceflow's counters, one registry per process (and per test app): success
 * and harm are counted separately, so both can be watched.
 */
export function createMetrics(opts: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'onceflow_' });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  return {
    registry,
    jobsCreated: counter('onceflow_jobs_created_total', 'Jobs created: new intents admitted', ['operation']),
    jobOutcomes: counter(
      'onceflow_job_outcomes_total',
      'Jobs by operation and route version: admitted, then succeeded, failed or cancelled, and the terminal jobs that had unknowns, contract violations or effects in review (the denominators of success and harm rates)',
      ['operation', 'route', 'outcome'],
    ),
    jobsReopened: counter('onceflow_jobs_reopened_total', "Failed jobs whose operation declares reopenFailed started again by the same intent (a new run)", ['operation']),
    jobsReplayed: counter('onceflow_jobs_replayed_total', 'Submissions answered with an existing job (Idempotent-Replayed)', ['operation', 'terminal']),
    idempotencyConflicts: counter('onceflow_idempotency_conflicts_total', 'Same key, other request digest: 409', ['operation']),
    requestsRejected: counter('onceflow_requests_rejected_total', 'Requests rejected, by reason', ['reason']),
    jobsCancelled: counter('onceflow_jobs_cancelled_total', 'Jobs cancelled through the API', ['operation']),
    attemptsStarted: counter('onceflow_attempts_started_total', 'Attempts opened, by kind: first, retry (same provider) or fallback', ['operation', 'provider', 'kind']),
    attemptOutcomes: counter('onceflow_attempt_outcomes_total', 'Attempts ended, by status and error class', ['operation', 'provider', 'status', 'class']),
    attemptsUnknown: counter('onceflow_attempts_unknown_total', 'Attempts whose outcome became unknown (timeout, reset, 5xx, worker lost)', ['operation', 'provider', 'cause']),
    attemptsResolved: counter('onceflow_attempts_resolved_total', 'Unknown attempts resolved, by how: ledger, provider lookup or operator', ['operation', 'via', 'outcome']),
    lateResultsDiscarded: counter('onceflow_late_results_discarded_total', 'Results that lost the compare-and-swap and were discarded', ['operation', 'provider']),
    fallbacksSkipped: counter('onceflow_fallbacks_skipped_total', 'Fallback providers skipped because they were not verified', ['operation', 'provider', 'reason']),
    contractViolations: counter('onceflow_contract_violations_total', 'Provider responses that broke the output contract', ['operation', 'provider']),
    effectsSettled: counter('onceflow_effects_settled_total', 'Effects settled, by status', ['effect', 'status']),
    effectsRecovered: counter('onceflow_effects_recovered_total', 'Stale effects taken over under a lease, by result', ['effect', 'result']),
    receiptsFound: counter('onceflow_effect_receipts_found_total', 'Receipts found by looking up the downstream by key', ['effect']),
    effectsNeedsReview: counter('onceflow_effects_needs_review_total', 'Effects that could be neither looked up nor safely repeated', ['effect']),
    workflowsRepaired: counter('onceflow_workflows_repaired_total', 'Open jobs found without a running workflow, whose workflow the sweeper started', ['operation']),
    attemptTokens: counter('onceflow_attempt_tokens_total', 'Tokens attempts consumed, as providers reported them, by direction (input, output)', ['operation', 'provider', 'model', 'direction']),
    attemptCost: counter(
      'onceflow_attempt_cost_total',
      'What attempts cost by the price table, per currency (the ledger holds the exact decimal; this is its float for dashboards)',
      ['operation', 'provider', 'model', 'currency'],
    ),
    downstreamFailures: counter('onceflow_downstream_failures_total', 'Downstream calls that failed, by class', ['effect', 'class']),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
