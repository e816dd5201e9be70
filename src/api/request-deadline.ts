import type { DeadlinePolicy } from '../operations/operation';
import { ProblemError, ProblemType } from './problems';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))$/;

function invalid(value: string, why: string): ProblemError {
  return new ProblemError(400, ProblemType.invalidDeadline, 'Invalid Request-Deadline', `Request-Deadline ${JSON.stringify(value.slice(0, 64))} ${why}`);
}

/**
 * The instant a Request-Deadline header names: an RFC 3339 date-time with
 * its offset (`2026-12-01T09:30:00Z`, `2026-12-01T10:30:00.5+01:00`).
 * @throws ProblemError 400 (invalid-deadline) when it is not one, or names a day or time that does not exist.
 */
export function parseRequestDeadline(value: string): Date {
  const match = RFC3339.exec(value);
  if (!match) return fail(invalid(value, 'is not an RFC 3339 date-time with an offset, such as 2026-12-01T09:30:00Z'));
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const offsetHours = match[10] === undefined ? 0 : Number(match[10]);
  const offsetMinutes = match[11] === undefined ? 0 : Number(match[11]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) {
    return fail(invalid(value, 'names a date or time that does not exist'));
  }
  const at = new Date(value.toUpperCase());
  if (Number.isNaN(at.getTime())) return fail(invalid(value, 'is not a date-time this server can represent'));
  return at;
}

function fail(problem: ProblemError): never {
  throw problem;
}

/**
 * The deadline a new job gets: the caller's, shortened to the operation's
 * maximum, or the operation's default when the caller named none.
 * @returns undefined when the job has no deadline.
 */
export function effectiveDeadline(requested: Date | undefined, policy: DeadlinePolicy | undefined, now: Date): Date | undefined {
  const latest = policy?.maxMs === undefined ? undefined : new Date(now.getTime() + policy.maxMs);
  const chosen = requested ?? (policy?.defaultMs === undefined ? undefined : new Date(now.getTime() + policy.defaultMs));
  if (chosen === undefined) return undefined;
  return latest !== undefined && chosen > latest ? latest : chosen;
}

/**
 * Refuses a new intent whose deadline has already passed: it could only fail.
 * (A retry of an existing key is answered whatever its header says.)
 * @throws ProblemError 400 (invalid-deadline).
 */
export function refusePastDeadline(deadline: Date | undefined, raw: string | undefined, now: Date): void {
  if (deadline !== undefined && deadline.getTime() <= now.getTime()) {
    throw invalid(raw ?? deadline.toISOString(), `has already passed (it is ${now.toISOString()} here)`);
  }
}
