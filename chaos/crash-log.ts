/** The line of a crashed process's log that says why it died. */
import { readFileSync } from 'node:fs';

export function crashLine(logFile: string): string {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return 'no log';
  }
  const tail = text.slice(text.lastIndexOf('--- ') >= 0 ? text.lastIndexOf('--- ') : 0).split('\n');
  const error = [...tail].reverse().find((line) => /^\w*Error\b|^Error:|Unhandled/.test(line.trim()));
  return (error ?? tail.filter((line) => line.trim()).slice(-1)[0] ?? '').trim().slice(0, 200);
}
