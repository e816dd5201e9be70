import { prepared } from '../db/prepared';
import type { Queryable } from './queryable';

/** The drills an effect's claims are checked by (effects/verify/drills.ts). */
export const Drill = {
  /** Send a fresh key: the downstream acts and answers with a receipt. */
  send: 'send',
  /** Look the sent key up: found, with the same receipt. */
  lookupFound: 'lookup_found',
  /** Look up a key never sent: not found. */
  lookupNotFound: 'lookup_not_found',
  /** Send the first key again: the same receipt, and still one record. */
  dedupe: 'dedupe',
  /** Send a key whose answer is dropped on the way back: the lookup finds it, once. */
  disconnect: 'disconnect',
  /** Send a malformed probe: a 4xx, and the lookup does not find it (a 4xx means "did not act"). */
  classification: 'classification',
} as const;
export type Drill = (typeof Drill)[keyof typeof Drill];

/** A verification's drills in the order they run (a stored verification's JSON keeps its own order), then any other. */
export function drillsInOrder<T>(drills: Readonly<Record<string, T>>): Array<[string, T]> {
  const order: readonly string[] = Object.values(Drill);
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  return Object.entries(drills).sort(([a], [b]) => rank(a) - rank(b));
}

/** One drill's evidence: passed or not and why, the keys and requests it used, the receipts it saw, its time. */
export interface DrillResult {
  passed: boolean;
  detail: string;
  keys: string[];
  requests: Array<{ method: string; url: string; status?: number; outcome: string }>;
  receipts: Array<Record<string, unknown>>;
  ms: number;
}

/** A drill that did not run, and why (its claim is not made, or nothing to run it with). */
export interface DrillSkipped {
  skipped: true;
  why: string;
}

export interface EffectVerification {
  effect: string;
  declarationDigest: string;
  host: string;
  onceflowVersion: string;
  passed: boolean;
  drills: Partial<Record<Drill, DrillResult | DrillSkipped>>;
  verifiedAt: Date;
}

interface VerificationRow {
  effect: string;
  declaration_digest: string;
  host: string;
  onceflow_version: string;
  passed: boolean;
  drills: EffectVerification['drills'];
  verified_at: Date;
}

const toVerification = (row: VerificationRow): EffectVerification => ({
  effect: row.effect,
  declarationDigest: row.declaration_digest,
  host: row.host,
  onceflowVersion: row.onceflow_version,
  passed: row.passed,
  drills: row.drills,
  verifiedAt: row.verified_at,
});

/** Records one verification of an effect; a verification is never rewritten. */
export async function recordEffectVerification(db: Queryable, verification: Omit<EffectVerification, 'verifiedAt'>): Promise<EffectVerification> {
  const { rows } = await db.query<VerificationRow>(
    `INSERT INTO effect_verifications (effect, declaration_digest, host, onceflow_version, passed, drills) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [verification.effect, verification.declarationDigest, verification.host, verification.onceflowVersion, verification.passed, JSON.stringify(verification.drills)],
  );
  return toVerification(rows[0]!);
}

/** The newest verification of an effect, whatever it ran against. */
export async function latestEffectVerification(db: Queryable, effect: string): Promise<EffectVerification | undefined> {
  const { rows } = await db.query<VerificationRow>(prepared('SELECT * FROM effect_verifications WHERE effect = $1 ORDER BY verified_at DESC, id DESC LIMIT 1', [effect]));
  return rows[0] ? toVerification(rows[0]) : undefined;
}

/** The newest verification of an effect made for this declaration against this host (what recovery may rely on). */
export async function latestEffectVerificationFor(db: Queryable, effect: string, at: { declarationDigest: string; host: string }): Promise<EffectVerification | undefined> {
  const { rows } = await db.query<VerificationRow>(
    prepared('SELECT * FROM effect_verifications WHERE effect = $1 AND declaration_digest = $2 AND host = $3 ORDER BY verified_at DESC, id DESC LIMIT 1', [effect, at.declarationDigest, at.host]),
  );
  return rows[0] ? toVerification(rows[0]) : undefined;
}

/** What a drill's verification is now for recovery: passed and current, or why not. */
export type DrillStanding = { current: true; verifiedAt: Date } | { current: false; why: string };

/**
 * Whether an effect holds a current pass of `drill`: its newest verification
 * was made for this declaration, against this host, within `maxAgeMs`, and
 * the drill passed in it.
 */
export function standingOf(latest: EffectVerification | undefined, drill: Drill, now: { declarationDigest: string; host: string; nowMs: number; maxAgeMs: number }): DrillStanding {
  if (!latest) return { current: false, why: 'never verified' };
  if (latest.declarationDigest !== now.declarationDigest) return { current: false, why: `verified ${latest.verifiedAt.toISOString()} for another declaration` };
  if (latest.host !== now.host) return { current: false, why: `verified against ${latest.host}, not ${now.host}` };
  const ageMs = now.nowMs - latest.verifiedAt.getTime();
  if (ageMs > now.maxAgeMs) return { current: false, why: `verified ${Math.round(ageMs / 3_600_000)} h ago; the limit is ${Math.round(now.maxAgeMs / 3_600_000)} h` };
  const result = latest.drills[drill];
  if (!result || 'skipped' in result) return { current: false, why: `its ${drill} drill did not run${result ? ` (${result.why})` : ''}` };
  if (!result.passed) return { current: false, why: `its ${drill} drill failed at ${latest.verifiedAt.toISOString()}: ${result.detail}` };
  return { current: true, verifiedAt: latest.verifiedAt };
}
