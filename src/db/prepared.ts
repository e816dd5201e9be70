import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';

const names = new Map<string, string>();

/** The prepared statement name of a text: derived from it, so equal texts share one and different texts never do. */
export function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    // 'of_' and 40 hex digits: within PostgreSQL's 63-byte identifiers.
    name = `of_${createHash('sha1').update(text).digest('hex')}`;
    names.set(text, name);
  }
  return name;
}

/**
 * A statement PostgreSQL parses and plans once per connection (a named
 * prepared statement) instead of at every call: for the statements a job
 * runs on its way (admission, its attempt, its effect, its terminal write).
 * Only for texts written in the code, never built from input: each distinct
 * text stays prepared on every pooled connection for the connection's life.
 */
export function prepared(text: string, values: unknown[]): QueryConfig {
  return { name: statementName(text), text, values };
}
