/** What a CLI command reads and writes, passed in so tests can run it in-process. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
  fetch?: typeof fetch;
}

/** The process's own environment and streams. */
export const processIo: CliIo = {
  env: process.env,
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

/** Exit codes of every onceflow command. */
export const ExitCode = {
  ok: 0,
  /** The server (or the database) said no: a problem, a failed verification, no such key. */
  refused: 1,
  /** The command line was wrong; nothing was asked. */
  usage: 2,
} as const;

/** A command line that cannot be run; the message says why. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Rows as aligned columns, the first row the header. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd()).join('\n');
}

/** A time as lists show it (UTC, to the second), or a dash. */
export const when = (iso: string | Date | null | undefined): string => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) : '-');
