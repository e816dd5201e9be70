import { html, type Html } from './html';

/**
 * Charts as inline SVG, drawn on the server: no script, no library, and
 * they print. Colours are presentation attributes, not styles, so the
 * console's Content-Security-Policy allows no inline style at all.
 */

export const STATUS_COLOURS: Record<string, string> = {
  succeeded: '#1f8a4c',
  failed: '#c0392b',
  cancelled: '#b7791f',
  discarded: '#d69e2e',
  awaiting_resolution: '#7b4fc9',
  unknown: '#7b4fc9',
  needs_review: '#7b4fc9',
  running: '#2454c5',
  starting: '#5b8def',
  accepted: '#8fb0ff',
  pending: '#2454c5',
};
const colourOf = (key: string): string => STATUS_COLOURS[key] ?? '#8a94a3';

export interface StackedSeries {
  /** One label per column (an hour). */
  columns: string[];
  /** Per key (a status), one value per column. */
  stacks: Array<{ key: string; values: number[] }>;
}

/** A legend for the keys of a chart. */
export function legend(keys: string[]): Html {
  return html`<div class="legend">${keys.map((key) => html`<span><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" rx="2" fill="${colourOf(key)}"/></svg> ${key}</span>`)}</div>`;
}

/** Columns of stacked bars (jobs per hour by status), with a y axis of round numbers. */
export function stackedColumns(series: StackedSeries, options: { title: string; width?: number; height?: number }): Html {
  const width = options.width ?? 1100;
  const height = options.height ?? 240;
  const left = 44;
  const bottom = 22;
  const top = 8;
  const plotHeight = height - bottom - top;
  const totals = series.columns.map((_, i) => series.stacks.reduce((sum, stack) => sum + (stack.values[i] ?? 0), 0));
  const max = niceMax(Math.max(2, ...totals));
  const step = (width - left - 4) / Math.max(1, series.columns.length);
  const barWidth = Math.max(2, step * 0.78);
  const y = (value: number) => top + plotHeight - (value / max) * plotHeight;
  const ticks = [0, max / 2, max];
  const bars: Html[] = [];
  series.columns.forEach((column, i) => {
    let base = 0;
    for (const stack of series.stacks) {
      const value = stack.values[i] ?? 0;
      if (value === 0) continue;
      const y0 = y(base);
      const y1 = y(base + value);
      bars.push(html`<rect x="${(left + i * step + (step - barWidth) / 2).toFixed(1)}" y="${y1.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(0.5, y0 - y1).toFixed(1)}" fill="${colourOf(stack.key)}"><title>${column}: ${value} ${stack.key}</title></rect>`);
      base += value;
    }
  });
  const every = Math.max(1, Math.ceil(series.columns.length / 8));
  const labels = series.columns.map((column, i) =>
    i % every === 0 ? html`<text x="${(left + i * step + step / 2).toFixed(1)}" y="${height - 6}" text-anchor="middle">${column}</text>` : html``,
  );
  return html`<svg class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${options.title}">
${ticks.map((tick) => html`<line x1="${left}" x2="${width - 4}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" stroke="#e3e7ed"/><text x="${left - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end">${formatCount(tick)}</text>`)}
${bars}
${labels}
</svg>`;
}

export interface BarItem {
  label: string;
  value: number;
  /** What the bar shows beside it (defaults to the value). */
  text?: string;
  colourKey?: string;
}

/** Horizontal bars, one per item, each labelled with its value. */
export function horizontalBars(items: BarItem[], options: { title: string; width?: number }): Html {
  if (items.length === 0) return html`<p class="muted">Nothing in this window.</p>`;
  const width = options.width ?? 520;
  const labelWidth = 190;
  const row = 22;
  const height = items.length * row + 6;
  // Amounts may be fractions (a cost in dollars): the longest bar is the largest value, whatever its size.
  const max = Math.max(Number.MIN_VALUE, ...items.map((item) => item.value));
  const barSpace = width - labelWidth - 140;
  return html`<svg class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${options.title}">
${items.map((item, i) => {
  const barWidth = Math.max(1, (item.value / max) * barSpace);
  const yTop = 4 + i * row;
  return html`<text x="${labelWidth - 8}" y="${yTop + 14}" text-anchor="end">${item.label}</text><rect x="${labelWidth}" y="${yTop + 3}" width="${barWidth.toFixed(1)}" height="${row - 8}" rx="2" fill="${colourOf(item.colourKey ?? item.label)}"><title>${item.label}: ${item.text ?? formatCount(item.value)}</title></rect><text x="${(labelWidth + barWidth + 6).toFixed(1)}" y="${yTop + 14}">${item.text ?? formatCount(item.value)}</text>`;
})}
</svg>`;
}

/** The smallest of 1, 2, 4, 5 × 10^n at or above the value: an axis that ends on a round number whose half is one too (counts from 2 up). */
function niceMax(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const factor of [1, 2, 4, 5, 10]) if (factor * power >= value) return factor * power;
  return 10 * power;
}

const formatCount = (value: number): string => (Number.isInteger(value) ? value.toLocaleString('en-US') : value.toFixed(1));
