/**
 * The gateway round's violations: each kind is a column of its report. The
 * first eight are the core's that apply to a trial of several jobs; then the
 * gateway's own.
 */
export const GATEWAY_VIOLATION_KINDS = {
  'one-job': 'one job per key: every 2xx for a key names the same job, and each key has exactly one job',
  'one-winner': 'at most one succeeded attempt per job, and a succeeded job is completed by it',
  'one-bill': 'one settlement per run of a job, of its status and all its attempts, billing nothing unless it succeeded; none for the open run',
  stuck: 'no job non-terminal without an open (running) workflow',
  waiting: 'no job waiting except for a stated reason (an unknown attempt, an effect in needs_review)',
  unsettled: 'every job ends: the operator resolves what legitimately waits',
  '5xx': 'no 5xx other than while the API or its database was down',
  replay: 'every replay of a terminal job (same key, same body) equals the stored result',
  attempts: 'no run of a job has more attempts than ONCEFLOW_MAX_ATTEMPTS',
  crash: 'no process of the stack dies unless the suite killed it',
  usage: "GET /v1/usage's totals for the principal equal the costs and tokens of its settled attempts (settlements plus adjustments)",
  budget: 'no new intent is admitted after the principal\'s spend for the day (settled plus adjusted tokens) reached its budget',
  'canary-stop': 'a running canary whose window crosses a threshold (jobs blocked on an unknown attempt or with an effect in review counted as they happen) stops before the next job after the crossing; one that crosses none never stops by itself',
  'canary-route': 'every new job goes where the route versions say at its admission: a running canary (its share) or what it was tried against; after a rollback of a promoted canary, the version it replaced',
  attention: 'a job only an operator can move (an attempt unknown and no hedge possible, an effect in needs_review) is in the operators\' list of its status, and one blocked on an unknown attempt shows awaiting_resolution, never running',
  'effect-once': 'an effect is succeeded only if the declared downstream recorded exactly one request with its key, by the declared method, at the declared host; nothing reaches the redirect target; an effect Onceflow settled failed was not performed',
  'secret-host': 'no request carrying the declared secret header value reaches a host other than the declared one',
  liar: "against a downstream whose claims its drills found false (deduplication, a lookup's \"not found\" or \"found\"), an effect's key arrives once and is stored at most once, a succeeded effect was stored, and every send whose answer proved nothing went to review through the repeat gate (effect.repeat_refused)",
  backoff: "attempts on one provider are spaced by at least its backoff and its Retry-After after a 429, across the whole job; a job whose backoff would overrun its deadline fails deadline_exceeded, not attempts_exhausted",
} as const;
export type GatewayViolationKind = keyof typeof GATEWAY_VIOLATION_KINDS;

export interface GatewayViolation {
  kind: GatewayViolationKind;
  detail: string;
}
