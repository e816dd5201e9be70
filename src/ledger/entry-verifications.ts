import type { Queryable } from './queryable';

/** The protocol entries an alias is served through (api/entries/). */
export const Entry = { openai: 'openai', anthropic: 'anthropic' } as const;
export type Entry = (typeof Entry)[keyof typeof Entry];

/** What one probe through an entry checks, in the order it runs. */
export const EntryCheck = {
  /** The client's call resolves with an answer in the protocol, on the alias's contract, naming its job. */
  answer: 'answer',
  /** The usage the client reads is the winning attempt's, as metered. */
  usage: 'usage',
  /** The same key again: the same answer, replayed, and no new attempt. */
  replay: 'replay',
  /** The same key streamed: the client's stream helper reads the same text. */
  stream: 'stream',
} as const;
export type EntryCheck = (typeof EntryCheck)[keyof typeof EntryCheck];

export interface EntryCheckResult {
  passed: boolean;
  detail: string;
}

/** One probe's evidence: its job and winner, and each check. */
export interface EntryProbe {
  name: string;
  idempotencyKey: string;
  jobId?: string;
  attemptId?: string;
  provider?: string;
  checks: Partial<Record<EntryCheck, EntryCheckResult>>;
  ms: number;
}

export interface EntryVerification {
  alias: string;
  entry: Entry;
  aliasDigest: string;
  /** The client library and version the probes were sent with (openai@5.23.2). */
  client: string;
  onceflowVersion: string;
  passed: boolean;
  probes: EntryProbe[];
  verifiedAt: Date;
}

interface Row {
  alias: string;
  entry: Entry;
  alias_digest: string;
  client: string;
  onceflow_version: string;
  passed: boolean;
  probes: EntryProbe[];
  verified_at: Date;
}

const toVerification = (row: Row): EntryVerification => ({
  alias: row.alias,
  entry: row.entry,
  aliasDigest: row.alias_digest,
  client: row.client,
  onceflowVersion: row.onceflow_version,
  passed: row.passed,
  probes: row.probes,
  verifiedAt: row.verified_at,
});

/** Records one verification of an alias through an entry; a verification is never rewritten. */
export async function recordEntryVerification(db: Queryable, verification: Omit<EntryVerification, 'verifiedAt'>): Promise<EntryVerification> {
  const { rows } = await db.query<Row>(
    `INSERT INTO entry_verifications (alias, entry, alias_digest, client, onceflow_version, passed, probes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [verification.alias, verification.entry, verification.aliasDigest, verification.client, verification.onceflowVersion, verification.passed, JSON.stringify(verification.probes)],
  );
  return toVerification(rows[0]!);
}

/** The newest verification of an alias through an entry, whatever it held for. */
export async function latestEntryVerification(db: Queryable, alias: string, entry: Entry): Promise<EntryVerification | undefined> {
  const { rows } = await db.query<Row>(`SELECT * FROM entry_verifications WHERE alias = $1 AND entry = $2 ORDER BY verified_at DESC, id DESC LIMIT 1`, [alias, entry]);
  return rows[0] ? toVerification(rows[0]) : undefined;
}
