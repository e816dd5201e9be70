import { ASSET_PATHS } from './assets';
import { html, type Html } from './html';

export type ConsoleSection = 'attention' | 'overview' | 'providers' | 'search' | 'job';

/** Who is signed in, for the header and the sign-out form. */
export interface SignedIn {
  operator: string;
  csrfToken: string;
}

export interface PageOptions {
  title: string;
  section?: ConsoleSection;
  signedIn?: SignedIn;
  /** Reload the page this often while what it shows may change. */
  refreshMs?: number;
  /** What the header's search box holds. */
  searchText?: string;
}

const NAV: Array<{ section: ConsoleSection; path: string; label: string }> = [
  { section: 'attention', path: '/console/attention', label: 'Needs attention' },
  { section: 'overview', path: '/console/overview', label: 'Overview' },
  { section: 'providers', path: '/console/providers', label: 'Providers and routes' },
  { section: 'search', path: '/console/search', label: 'Search' },
];

/** A hidden field carrying the session's CSRF token: every form that changes something has one. */
export const csrfField = (signedIn: SignedIn): Html => html`<input type="hidden" name="_csrf" value="${signedIn.csrfToken}">`;

/** A whole console page: header with navigation, search and sign-out, then the body. */
export function page(options: PageOptions, body: Html): string {
  const { signedIn } = options;
  const header = signedIn
    ? html`<header class="top">
  <a class="brand" href="/console/attention">Onceflow console</a>
  ${NAV.map((item) => html`<a href="${item.path}" class="${item.section === options.section ? 'active' : ''}">${item.label}</a>`)}
  <form class="search" method="get" action="/console/search" role="search">
    <input type="search" name="q" value="${options.searchText ?? ''}" placeholder="job id, id prefix or idempotency key" aria-label="Search jobs">
  </form>
  <span class="who">${signedIn.operator}</span>
  <form method="post" action="/console/sign-out">${csrfField(signedIn)}<button type="submit">Sign out</button></form>
</header>`
    : html`<header class="top"><span class="brand">Onceflow console</span></header>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Onceflow</title>
<link rel="stylesheet" href="${ASSET_PATHS.css}">
<script src="${ASSET_PATHS.js}" defer></script>
</head>
<body data-refresh-ms="${options.refreshMs ?? 0}">
${header}
<main>
${body}
</main>
</body>
</html>
`.value;
}

/** A status as a coloured badge. */
export const statusBadge = (status: string): Html => html`<span class="status ${status}">${status}</span>`;
