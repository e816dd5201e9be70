import type { ListPosition } from '../ledger/job-list';
import { ProblemError, ProblemType } from './problems';

/**
 * The opaque cursor of GET /v1/jobs: a place in (created_at, id) order,
 * base64url of JSON. Opaque to clients; checked strictly when it comes back.
 */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const CURSOR_PATTERN = '^[A-Za-z0-9_-]{1,200}$';

/** The cursor of the page after the job at this place. */
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id]), 'utf8').toString('base64url');
}

/** The place a cursor names. @throws ProblemError 400 when it is not a cursor this API gave out. */
export function decodeCursor(cursor: string): ListPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'string' || typeof value[1] !== 'string' || !TIMESTAMP.test(value[0]) || !UUID.test(value[1]) || !isRealInstant(value[0])) {
    throw new ProblemError(400, ProblemType.validation, 'Invalid cursor', 'cursor is not one this API gave out; start again without it', { errors: [{ pointer: '/cursor', detail: 'not a cursor from a previous page' }] });
  }
  return { createdAt: value[0], id: value[1] };
}

/** True when the timestamp names a real instant (no 30 February): the milliseconds part reads back as written. */
function isRealInstant(timestamp: string): boolean {
  const date = new Date(`${timestamp.slice(0, 23)}Z`);
  return date.getTime() >= 0 && date.toISOString().slice(0, 23) === timestamp.slice(0, 23);
}
