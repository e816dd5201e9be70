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
