/** The entries round's violations: each kind is a column of its report. */
export const ENTRIES_VIOLATION_KINDS = {
  'one-job': "one job per key: the ledger has at most one job for an intent's alias and key, and every answer (its id, its Onceflow-Job-Id) names it",
  'one-winner': 'at most one succeeded attempt per job, and a succeeded job is completed by it',
  'one-bill': 'one settlement per ended job, of its status and all its attempts, billing nothing unless it succeeded; none for an open one',
  'one-attempt': 'an intent whose providers misbehaved in nothing has one attempt, whatever its clients did (cuts, storms, retries, a killed API): a retry never generates again',
  answer: "every answer the SDK returned for an intent is the job's stored answer: its text, and the usage the winning attempt metered",
  replay: 'a retry of an ended job gets it back marked Idempotent-Replayed, byte for byte the answer given before; a failed job stays failed',
  conflict: "the same key with another message is refused with the SDK's conflict error (409) and answers nothing",
  unanswered: 'every intent whose job ended got its answer (or its final refusal) through the SDK before the trial ended',
  refused: 'no request of the app is refused with a 4xx other than the 409s of a running job or a reused key',
  '5xx': "no 5xx other than while the API was down, or a failed job's 502",
  stuck: 'no job non-terminal without an open (running) workflow',
  waiting: 'no job waiting except for a stated reason (an unknown attempt)',
  unsettled: 'every job ends: the operator resolves what legitimately waits',
  attempts: 'no job has more attempts than ONCEFLOW_MAX_ATTEMPTS',
  crash: 'no process of the stack dies unless the suite killed it',
} as const;
export type EntriesViolationKind = keyof typeof ENTRIES_VIOLATION_KINDS;

export interface EntriesViolation {
  kind: EntriesViolationKind;
  detail: string;
}
