import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The user documentation, read as the tests of test/docs need it: its files,
 * their prose and code apart, their headings' anchors, links and tables.
 */

export const ROOT = path.resolve(__dirname, '..', '..');

export interface DocFile {
  /** Relative to the project root, e.g. `docs/api.md`. */
  file: string;
  text: string;
}

/** README.md and every docs/*.md. */
export function docFiles(): DocFile[] {
  const docs = readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs].map((file) => ({ file, text: readFileSync(path.join(ROOT, file), 'utf8') }));
}

export interface Parts {
  /** The lines outside fenced code blocks, fenced lines blanked (line numbers kept). */
  prose: string;
  /** The content of every fenced code block, one string each. */
  blocks: Array<{ info: string; body: string }>;
  /** The content of every inline code span of the prose. */
  spans: string[];
}

/** Splits markdown into prose, fenced blocks and inline code spans. */
export function partsOf(text: string): Parts {
  const prose: string[] = [];
  const blocks: Parts['blocks'] = [];
  let open: { fence: string; info: string; lines: string[] } | undefined;
  for (const line of text.split('\n')) {
    const fence = /^\s*(`{3,}|~{3,})(.*)$/.exec(line);
    if (open) {
      if (fence && fence[1]!.startsWith(open.fence) && fence[2]!.trim() === '') {
        blocks.push({ info: open.info, body: open.lines.join('\n') });
        open = undefined;
      } else open.lines.push(line);
      prose.push('');
      continue;
    }
    if (fence) {
      open = { fence: fence[1]!, info: fence[2]!.trim(), lines: [] };
      prose.push('');
      continue;
    }
    prose.push(line);
  }
  const proseText = prose.join('\n');
  const spans = [...proseText.matchAll(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g)].map((match) => match[2]!.trim());
  return { prose: proseText, blocks, spans };
}

/** The prose with inline code spans blanked, so a span's text is not taken for markup. */
export function proseWithoutSpans(parts: Parts): string {
  return parts.prose.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (span) => ' '.repeat(span.length));
}

/** GitHub's anchor for a heading's text (github-slugger's rule), without the suffix of a repeated one. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/\*/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a file's headings make, repeated ones suffixed -1, -2 as GitHub does. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of partsOf(text).prose.split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Every inline link and image target of the prose (not inside code), with its line. */
export function linksOf(text: string): Array<{ target: string; line: number }> {
  const prose = proseWithoutSpans(partsOf(text));
  const links: Array<{ target: string; line: number }> = [];
  prose.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: match[1]!, line: index + 1 });
  });
  return links;
}

/** The rows of every table in `text` (outside code), each as its cells; separator rows left out. */
export function tableRows(text: string): string[][] {
  return partsOf(text)
    .prose.split('\n')
    .filter((line) => /^\s*\|.*\|\s*$/.test(line))
    .map((line) => splitRow(line))
    .filter((cells) => !cells.every((cell) => /^:?-{3,}:?$/.test(cell)));
}

/** A table row's cells; `\|` inside a cell is not a separator. */
function splitRow(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim());
}

/** The prose of the section under the heading `title` (to the next heading of the same or a higher level); code blanked. */
export function section(text: string, title: string): string {
  const lines = partsOf(text).prose.split('\n');
  const start = lines.findIndex((line) => new RegExp(`^(#{1,6})\\s+${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`).test(line));
  if (start < 0) throw new Error(`no heading "${title}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((line, index) => index > start && /^#{1,6}\s/.test(line) && /^#+/.exec(line)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The inline code spans of a string (a table cell, a line). */
export const codeSpans = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
