import type { DatabaseError } from 'pg';

/** SQLSTATEs that mean something to the domain; mapped here and nowhere else. */
export const SqlState = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  checkViolation: '23514',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  undefinedTable: '42P01',
} as const;

function sqlState(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as DatabaseError).code) : undefined;
}

/** True when err is a unique violation, optionally of one named constraint or index. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return sqlState(err) === SqlState.uniqueViolation && (!constraint || (err as DatabaseError).constraint === constraint);
}

/** True when the transaction may simply be run again (serialization failure, deadlock). */
export function isRetryableTransactionError(err: unknown): boolean {
  const state = sqlState(err);
  return state === SqlState.serializationFailure || state === SqlState.deadlockDetected;
}

// Node socket errors that mean the database could not be reached at all.
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
// What pg and pg-pool say when a connection is lost or cannot be had in time.
const UNREACHABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * True when the database was unavailable rather than the statement wrong: a
 * lost or refused connection, a server shutting down or out of connections
 * (SQLSTATE classes 08 and 53, 57P01–57P03), or a transaction that may simply
 * be run again. Trying the same request later may succeed.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const state = sqlState(err);
  if (state && (UNREACHABLE_CODES.has(state) || /^(08|53)/.test(state) || /^57P0[123]$/.test(state))) return true;
  if (isRetryableTransactionError(err)) return true;
  return err instanceof Error && UNREACHABLE_MESSAGES.test(err.message);
}
