import { createHash } from 'node:crypto';

/**
 * The console's stylesheet and its one script, served by Onceflow itself
 * (no CDN): small enough to read here, versioned by their digest so a
 * browser may keep them.
 */

export const CONSOLE_CSS = `
:root { --ink: #1d2430; --muted: #5b6574; --line: #d9dee5; --bg: #f6f7f9; --card: #fff; --accent: #2454c5;
  --ok: #1f8a4c; --bad: #c0392b; --warn: #b7791f; --wait: #7b4fc9; --idle: #8a94a3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header.top { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; background: #1d2430; color: #fff; flex-wrap: wrap; }
header.top a { color: #dfe6f3; text-decoration: none; }
header.top a.active { color: #fff; font-weight: 600; border-bottom: 2px solid #8fb0ff; }
header.top .brand { font-weight: 700; letter-spacing: .02em; color: #fff; }
header.top form.search { margin-left: auto; display: flex; gap: .3rem; }
header.top input[type=search] { width: 22rem; max-width: 50vw; padding: .3rem .5rem; border-radius: 4px; border: 0; }
header.top .who { color: #b9c3d3; font-size: 12px; }
header.top button { background: transparent; color: #dfe6f3; border: 1px solid #5b6574; border-radius: 4px; padding: .2rem .6rem; cursor: pointer; }
main { padding: 1rem 1.2rem 3rem; max-width: 1400px; }
h1 { font-size: 20px; margin: .2rem 0 1rem; }
h2 { font-size: 16px; margin: 1.6rem 0 .6rem; }
h3 { font-size: 14px; margin: 1rem 0 .4rem; }
section.card, div.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .8rem 1rem; margin-bottom: 1rem; }
table { border-collapse: collapse; width: 100%; background: var(--card); }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
pre { background: #f1f3f6; border: 1px solid var(--line); border-radius: 4px; padding: .5rem; overflow: auto; max-height: 22rem; white-space: pre-wrap; word-break: break-word; margin: .3rem 0; }
a { color: var(--accent); }
.muted { color: var(--muted); }
.status { display: inline-block; padding: 0 .45rem; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; background: var(--idle); white-space: nowrap; }
.status.succeeded { background: var(--ok); } .status.failed, .status.contract_violation { background: var(--bad); }
.status.unknown, .status.awaiting_resolution, .status.needs_review { background: var(--wait); }
.status.running, .status.starting, .status.pending, .status.accepted { background: var(--accent); }
.status.cancelled, .status.discarded { background: var(--warn); }
.timeline { list-style: none; margin: 0; padding: 0 0 0 1rem; border-left: 2px solid var(--line); }
.timeline > li { position: relative; margin: 0 0 1rem; padding-left: .8rem; }
.timeline > li::before { content: ""; position: absolute; left: -1.45rem; top: .35rem; width: .8rem; height: .8rem; border-radius: 50%; background: var(--idle); border: 2px solid #fff; }
.timeline > li.succeeded::before { background: var(--ok); } .timeline > li.failed::before { background: var(--bad); }
.timeline > li.unknown::before { background: var(--wait); } .timeline > li.discarded::before, .timeline > li.cancelled::before { background: var(--warn); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .3rem 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; word-break: break-all; }
form.resolve { display: grid; gap: .4rem; max-width: 40rem; margin-top: .6rem; padding: .6rem; background: #f7f4fd; border: 1px solid #d9cdf3; border-radius: 6px; }
form.resolve label { font-weight: 600; font-size: 12px; }
textarea, input[type=text], input[type=password], select { font: inherit; padding: .35rem .5rem; border: 1px solid #b8c0cc; border-radius: 4px; width: 100%; }
button.primary { background: var(--accent); color: #fff; border: 0; border-radius: 4px; padding: .45rem .9rem; font-weight: 600; cursor: pointer; justify-self: start; }
.notice { padding: .6rem .8rem; border-radius: 6px; margin-bottom: 1rem; }
.notice.error { background: #fdecea; border: 1px solid #f5c2bc; color: #7d1f15; }
.notice.ok { background: #e8f6ee; border: 1px solid #b5e0c6; color: #145c32; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 1rem; }
svg.chart { max-width: 100%; height: auto; background: var(--card); }
svg.chart text { font: 11px system-ui, sans-serif; fill: #5b6574; }
.legend { display: flex; flex-wrap: wrap; gap: .8rem; font-size: 12px; margin: .3rem 0; }
.legend i { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; margin-right: .3rem; vertical-align: -1px; }
.signin { max-width: 26rem; margin: 12vh auto; }
.signin form { display: grid; gap: .6rem; }
.counts { display: flex; gap: 1rem; margin-bottom: 1rem; }
.counts .card { min-width: 12rem; }
.counts .big { font-size: 26px; font-weight: 700; }
nav.pager { margin-top: .6rem; }
`;

/**
 * The page refreshes itself while what it shows may still change (a job not
 * yet terminal), unless the operator has started to type in a form: a
 * reason being written is never thrown away.
 */
export const CONSOLE_JS = `
(function () {
  var ms = Number(document.body.getAttribute('data-refresh-ms') || 0);
  if (!ms) return;
  var touched = false;
  document.addEventListener('input', function () { touched = true; }, true);
  document.addEventListener('focusin', function (event) {
    var tag = event.target && event.target.tagName;
    if (tag === 'TEXTAREA' || tag === 'INPUT' || tag === 'SELECT') touched = true;
  }, true);
  setInterval(function () { if (!touched && document.visibilityState === 'visible') location.reload(); }, ms);
})();
`;

const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 12);

/** Each asset's path carries its digest: a changed file is a new URL. */
export const ASSET_PATHS = {
  css: `/console/assets/console-${digest(CONSOLE_CSS)}.css`,
  js: `/console/assets/console-${digest(CONSOLE_JS)}.js`,
} as const;
