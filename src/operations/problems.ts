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

/** `file:line:column: pointer: what is wrong` (line and column when known). */
export function formatProblem(p: OperationProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}:${p.column}`;
  return `${where}: ${p.pointer === '' ? '(document)' : p.pointer}: ${p.problem}`;
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

/** The key node (for a mapping entry) or value node at a pointer, or the nearest ancestor there is. */
function nodeAt(root: Node | null, pointer: string): { node: Node | null; exact: boolean } {
  let node: Node | null = root;
  let keyNode: Node | null = null;
  for (const token of pointerTokens(pointer)) {
    keyNode = null;
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === token);
      if (!pair) return { node, exact: false };
      keyNode = isScalar(pair.key) ? pair.key : null;
      node = (pair.value as Node | null) ?? keyNode;
    } else if (isSeq(node)) {
      const item = /^\d+$/.test(token) ? node.items[Number(token)] : undefined;
      if (!item) return { node, exact: false };
      node = item as Node;
    } else {
      return { node, exact: false };
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
