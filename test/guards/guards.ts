/**
 * Every guard the ledger's rules rest on, and the tests that must go red
 * without it. `npm run guards` deletes (or weakens) each guard in turn, runs
 * its tests, and fails if they still pass: a test that cannot catch its
 * guard's absence protects nothing.
 */
export interface Guard {
  /** What the guard enforces. */
  name: string;
  file: string;
  /** The exact text of the guard, and what it becomes without it. */
  find: string;
  replace: string;
  /** Test files, and optionally a name pattern, that must fail without it. */
  tests: string[];
  testNamePattern?: string;
}

export const GUARDS: Guard[] = [
  {
    name: 'an ended attempt is never rewritten as discarded (an operator resolution stands)',
    file: 'src/ledger/attempts.ts',
    find: `evidence = COALESCE(evidence, '{}'::jsonb) || $2::jsonb
       WHERE id = $1 AND status IN ('running', 'unknown')`,
    replace: `evidence = COALESCE(evidence, '{}'::jsonb) || $2::jsonb
       WHERE id = $1`,
    tests: ['test/attempts/one-winner.test.ts', 'test/faults/attempt-races.test.ts'],
    testNamePattern: 'resolved out of band|resolution that lands',
  },
  {
    name: 'the result slot is a compare-and-swap on the version the attempt opened with',
    file: 'src/ledger/attempts.ts',
    find: 'WHERE id = $1 AND version = $4 AND completed_by IS NULL`,',
    replace: 'WHERE id = $1 AND completed_by IS NULL`,',
    tests: ['test/attempts/one-winner.test.ts'],
    testNamePattern: 'cancelled|even before another attempt opened',
  },
  {
    name: 'only a starting attempt may be marked sent',
    file: 'src/ledger/attempts.ts',
    find: "WHERE a.id = $1 AND a.status = 'starting' AND j.id = a.job_id AND j.terminal_at IS NULL",
    replace: 'WHERE a.id = $1 AND j.id = a.job_id AND j.terminal_at IS NULL',
    tests: ['test/faults/attempt-races.test.ts'],
    testNamePattern: 'exactly one of|never marks sent',
  },
  {
    name: 'an attempt fails only from the status the caller saw',
    file: 'src/ledger/attempts.ts',
    find: 'WHERE a.id = $1 AND a.status = $2\n',
    replace: "WHERE a.id = $1 AND a.status IN ('starting', 'running', 'unknown') AND $2::text IS NOT NULL\n",
    tests: ['test/faults/attempt-races.test.ts'],
    testNamePattern: 'already marked sent|exactly one of',
  },
  {
    name: 'only a running attempt becomes unknown',
    file: 'src/ledger/attempts.ts',
    find: "WHERE id = $1 AND status = 'running'\n     RETURNING job_id",
    replace: "WHERE id = $1\n     RETURNING job_id",
    tests: ['test/faults/attempt-races.test.ts'],
    testNamePattern: 'never rewrites an operator',
  },
  {
    name: "an attempt's version is the job's version when it opens",
    file: 'src/ledger/attempts.ts',
    find: '(SELECT version FROM jobs WHERE id = $2))',
    replace: '(SELECT version - 1 FROM jobs WHERE id = $2))',
    tests: ['test/faults/attempt-races.test.ts'],
    testNamePattern: 'so the next one can win',
  },
  {
    name: 'a job is not failed while one of its effects is claimed and unsettled',
    file: 'src/ledger/jobs.ts',
    find: "AND NOT EXISTS (SELECT 1 FROM effects WHERE job_id = $1 AND status IN ('pending', 'needs_review'))",
    replace: '',
    tests: ['test/faults/effect-faults.test.ts'],
    testNamePattern: 'refuses to fail a job',
  },
  {
    name: 'a valid lease is never taken over',
    file: 'src/ledger/effects.ts',
    find: "WHERE id = $1 AND status = 'pending' AND lease_expires_at < now()",
    replace: "WHERE id = $1 AND status = 'pending'",
    tests: ['test/effects/recovery.test.ts'],
    testNamePattern: 'never steals a lease',
  },
  {
    name: 'only the first takeover of an effect is an event',
    file: 'src/ledger/effects.ts',
    find: '         WHERE owners = 2\n',
    replace: '',
    tests: ['test/faults/effect-faults.test.ts'],
    testNamePattern: 'does not grow the job history',
  },
  {
    name: 'recovery looks a sent effect up instead of performing it',
    file: 'src/effects/runner.ts',
    find: 'if (effect.phase !== EffectPhase.sending) {',
    replace: 'if (effect.phase !== EffectPhase.sending || effect.phase === EffectPhase.sending) {',
    tests: ['test/effects/recovery.test.ts'],
    testNamePattern: 'sends nothing again|recovers a disconnect',
  },
  {
    name: 'a claim that never sent is performed, not sent to review',
    file: 'src/effects/runner.ts',
    find: 'if (effect.phase !== EffectPhase.sending) {',
    replace: 'if (effect.phase === EffectPhase.notPerformed) {',
    tests: ['test/effects/recovery.test.ts'],
    testNamePattern: 'vanished after the claim and before sending',
  },
  {
    name: 'a long Retry-After is kept in the lease, not slept',
    file: 'src/effects/runner.ts',
    find: 'if (!fitsHere) {',
    replace: 'if (false) {',
    tests: ['test/faults/effect-faults.test.ts'],
    testNamePattern: 'long Retry-After',
  },
  {
    name: 'a caller given up on sends nothing: its claim is left for recovery',
    file: 'src/effects/runner.ts',
    find: 'if (call.signal?.aborted) return stateOf(effect.jobId, effect.name);',
    replace: '',
    tests: ['test/faults/effect-faults.test.ts'],
    testNamePattern: 'already given up on',
  },
  {
    name: 'an attempt heartbeats from its first line',
    file: 'src/activities/attempt-activities.ts',
    find: '  if (context.info.isLocal) return () => undefined;\n  context.heartbeat();\n  const beat = setInterval',
    replace: '  if (context.info.isLocal) return () => undefined;\n  const beat = setTimeout',
    tests: ['test/faults/attempt-races.test.ts'],
    testNamePattern: 'is not taken for a lost one',
  },
  {
    name: 'the workflow ends only when the ledger says the job is terminal',
    file: 'src/workflows/attempt-steps.ts',
    find: "if (report.status !== 'unknown' || report.jobTerminal) return;",
    replace: "if (report.status !== 'unknown' || report.jobTerminal) throw new (require('@temporalio/workflow').ContinueAsNew)();",
    tests: ['test/faults/attempt-races.test.ts'],
    testNamePattern: 'resolution that lands',
  },
  {
    name: 'a retried step returns the attempt it opened',
    file: 'src/ledger/attempts.ts',
    find: "    if (mine) return { kind: 'opened', attempt: mine };\n",
    replace: '',
    tests: ['test/faults/attempt-races.test.ts', 'test/attempts/one-winner.test.ts'],
    testNamePattern: 'retried',
  },
  {
    name: 'the backoff applies to the provider that failed, whichever way the route got back to it',
    file: 'src/activities/job-activities.ts',
    find: 'if (last && step.provider === last.provider && last.endedAt) {',
    replace: 'if (last && step.provider === last.provider && last.endedAt && route[(route.findIndex((s) => s.provider === last.provider) + 1) % route.length]!.provider === last.provider) {',
    tests: ['test/faults/ledger-bounds.test.ts'],
    testNamePattern: 'backs off',
  },
  {
    name: 'evidence is noted under the job row lock (one lock order)',
    file: 'src/ledger/attempts.ts',
    find: "  await inTransaction(db, async (tx) => {\n    await lockJobThenAttempt(tx, attemptId);\n    await tx.query(`UPDATE attempts SET evidence",
    replace: "  await inTransaction(db, async (tx) => {\n    await tx.query(`UPDATE attempts SET evidence",
    tests: ['test/faults/ledger-bounds.test.ts'],
    testNamePattern: 'without a deadlock',
  },
  {
    name: 'an input schema changes under its version only while no job of that version exists',
    file: 'src/ledger/operation-versions.ts',
    find: '\n               AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.operation = v.operation AND jobs.schema_version = v.schema_version)',
    replace: '',
    tests: ['test/operations/version-discipline.test.ts'],
    testNamePattern: 'is refused at start',
  },
  {
    name: "no new attempt starts with less time left before the caller's deadline than the operation's minimum for one",
    file: "src/activities/job-activities.ts",
    find: "if (job.deadlineLeftMs !== null && job.deadlineLeftMs < minAttemptMs) {",
    replace: "if (false) {",
    tests: ["test/jobs/deadline.test.ts"],
    testNamePattern: "starts no attempt with less time",
  },
  {
    name: "a provider call is bounded by the time left before the caller's deadline",
    file: "src/activities/attempt-activities.ts",
    find: "timeoutMs: deadlineLeftMs === null ? deps.attempts.timeoutMs : Math.min(deps.attempts.timeoutMs, deadlineLeftMs),",
    replace: "timeoutMs: deps.attempts.timeoutMs,",
    tests: ["test/jobs/deadline.test.ts"],
    testNamePattern: "cuts the call",
  },
  {
    name: "an attempt opened before the deadline and sent after it sends nothing",
    file: "src/activities/attempt-activities.ts",
    find: "if (deadlineLeftMs !== null && deadlineLeftMs < 1) {",
    replace: "if (false) {",
    tests: ["test/jobs/deadline.test.ts"],
    testNamePattern: "sends nothing for an attempt opened",
  },
  {
    name: "an operation without effects after its deadline fails the job before any claim",
    file: "src/activities/job-activities.ts",
    find: "if (operation?.effectsAfterDeadline === false && ",
    replace: "if (false && ",
    tests: ["test/jobs/deadline.test.ts"],
    testNamePattern: "fails a job with a winner before any claim",
  },
  {
    name: "no backoff that would leave less than one attempt's time before the deadline",
    file: "src/activities/job-activities.ts",
    find: "if (waitMs > 0 && job.deadlineLeftMs !== null && job.deadlineLeftMs - waitMs < minAttemptMs) {",
    replace: "if (false) {",
    tests: ["test/jobs/deadline.test.ts"],
    testNamePattern: "back off past",
  },
  {
    name: "a new intent whose deadline has passed is refused (a retry of an existing key is not)",
    file: "src/api/jobs-routes.ts",
    find: "refusePastDeadline(deadlineAt, requested?.raw, now);",
    replace: "",
    tests: ["test/jobs/deadline.test.ts"],
    testNamePattern: "refuses a deadline already past",
  },
  {
    name: "an unknown attempt is waited for past the deadline (invariant 4 holds)",
    file: "src/activities/job-activities.ts",
    find: "    if (live?.status === AttemptStatus.unknown) return { kind: 'await', attemptId: live.id };",
    replace: "    if (live?.status === AttemptStatus.unknown && job.deadlineLeftMs === null) return { kind: 'await', attemptId: live.id };",
    tests: ["test/jobs/deadline-time-skipping.test.ts"],
    testNamePattern: "starts nothing for days",
  },
  {
    name: 'a job is counted ended only once it is terminal',
    file: 'src/metrics/job-outcomes.ts',
    find: 'FROM jobs j WHERE j.id = $1 AND j.terminal_at IS NOT NULL`',
    replace: 'FROM jobs j WHERE j.id = $1`',
    tests: ['test/metering/job-outcomes.test.ts'],
    testNamePattern: 'an open job not at all',
  },
];
