import YAML, { isMap, isPair, isScalar, isSeq, type LineCounter, type Node } from 'yaml';
import { pointerTokens } from './declared';

/** One thing wrong with an operations file (or an operation module): where, and what. */
export interface OperationProblem {
  file: string;
  /** JSON pointer into the file's document ('' is the whole document). */
  pointer: string;
  problem: string;
  /** 1-based, when the file is YAML and the place could be found. */
  line?: number;
  column?: number;
}

/** What a problem of the environment (a variable, the database it names) names as its file. */
export const ENVIRONMENT = 'environment';

/** `file:line:column: pointer: what is wrong` (line and column when known); `environment: what is wrong` for the environment. */
export function formatProblem(p: OperationProblem): string {
  if (p.file === ENVIRONMENT && p.pointer === '') return `${ENVIRONMENT}: ${p.problem}`;
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}:${p.column}`;
  return `${where}: ${p.pointer === '' ? '(document)' : p.pointer}: ${p.problem}`;
}

/** Problems in reading order: by file (in the order they first appear), then line and column. */
export function sortProblems(problems: readonly OperationProblem[]): OperationProblem[] {
  const files = [...new Set(problems.map((p) => p.file))];
  return problems
    .map((p, index) => ({ p, index }))
    .sort((a, b) => files.indexOf(a.p.file) - files.indexOf(b.p.file) || (a.p.line ?? Infinity) - (b.p.line ?? Infinity) || (a.p.column ?? 0) - (b.p.column ?? 0) || a.index - b.index)
    .map(({ p }) => p);
}

/** An operations file that cannot be used: every problem found, one a line, each naming the file and the JSON pointer. */
export class OperationsFileError extends Error {
  override readonly name = 'OperationsFileError';

  constructor(
    readonly problems: readonly OperationProblem[],
    options?: { cause?: unknown },
  ) {
    super(problems.map(formatProblem).join('\n'), options);
  }
}

/** The key node (for a mapping entry) or value node at a pointer, or the nearest ancestor there is (its key, when it has one). */
function nodeAt(root: Node | null, pointer: string): { node: Node | null; exact: boolean } {
  let node: Node | null = root;
  let keyNode: Node | null = null;
  for (const token of pointerTokens(pointer)) {
    // A key that is not there (a missing defaultModel) is placed at the key of the entry it would go in.
    const parentKey = keyNode;
    keyNode = null;
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === token);
      if (!pair) return { node: parentKey ?? node, exact: false };
      keyNode = isScalar(pair.key) ? pair.key : null;
      node = (pair.value as Node | null) ?? keyNode;
    } else if (isSeq(node)) {
      const item = /^\d+$/.test(token) ? node.items[Number(token)] : undefined;
      if (!item) return { node: parentKey ?? node, exact: false };
      node = item as Node;
    } else {
      return { node: parentKey ?? node, exact: false };
    }
  }
  return { node: keyNode ?? node, exact: true };
}

/** Where a pointer's place starts in a YAML document: a mapping entry's key, or the value itself. */
export function positionOf(document: YAML.Document.Parsed, lines: LineCounter, pointer: string): { line: number; column: number } | undefined {
  const { node } = nodeAt(document.contents, pointer);
  const offset = node?.range?.[0];
  if (offset === undefined) return undefined;
  const position = lines.linePos(offset);
  return { line: position.line, column: position.col };
}

/**
 * Where a pointer's place is in a file: the start of its key or value, or,
 * given `text`, where that text stands inside the value (a `${NAME}` in a
 * URL), when the file holds it as written.
 */
export type Locator = (pointer: string, text?: string) => { line: number; column: number } | undefined;

/** The locator of a parsed YAML document and the source it was parsed from. */
export function yamlLocator(document: YAML.Document.Parsed, lines: LineCounter, source: string): Locator {
  return (pointer, text) => {
    if (text !== undefined) {
      const { node, exact } = valueAt(document.contents, pointer);
      const range = exact ? node?.range : undefined;
      const index = range ? source.slice(range[0], range[1]).indexOf(text) : -1;
      if (range && index >= 0) {
        const position = lines.linePos(range[0] + index);
        return { line: position.line, column: position.col };
      }
    }
    return positionOf(document, lines, pointer);
  };
}

/** The value node at a pointer (not its key). */
function valueAt(root: Node | null, pointer: string): { node: Node | null; exact: boolean } {
  let node: Node | null = root;
  for (const token of pointerTokens(pointer)) {
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === token);
      if (!pair) return { node, exact: false };
      node = pair.value as Node | null;
    } else if (isSeq(node)) {
      const item = /^\d+$/.test(token) ? node.items[Number(token)] : undefined;
      if (!item) return { node, exact: false };
      node = item as Node;
    } else {
      return { node, exact: false };
    }
  }
  return { node, exact: true };
}
