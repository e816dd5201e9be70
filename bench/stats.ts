/** The p-th percentile (0 to 100) of values sorted ascending; NaN when there are none. */
export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)]! : NaN;
};

/** A row of the results table: what, Onceflow's figure, the reference's, their ratio, and the target's verdict. */
export interface ResultRow {
  section: string;
  measure: string;
  value: string;
  reference?: string;
  ratio?: number;
  target?: string;
  ok?: boolean;
}

export const fixed = (value: number, digits = 1): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

export function printRows(rows: ResultRow[]): void {
  const cells = rows.map((row) => [
    row.section,
    row.measure,
    row.value,
    row.reference ?? '',
    row.ratio === undefined ? '' : `${fixed(row.ratio, 2)}x`,
    row.target ?? '',
    row.ok === undefined ? '' : row.ok ? 'meets' : 'MISSES',
  ]);
  const header = ['section', 'measure', 'Onceflow', 'reference', 'ratio', 'target', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  console.log(line(header));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const c of cells) console.log(line(c));
}
