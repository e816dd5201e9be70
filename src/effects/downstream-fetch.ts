/**
 * Every HTTP call Onceflow makes to a downstream (an effect's send and its
 * receipt lookup) goes through here, so that none follows a redirect
 * (invariant 14): followed, a 301/302/303 turns the POST into a body-less GET
 * whose 2xx would settle an effect the downstream never received, and a
 * 307/308 re-posts the body and the headers to another origin. The 3xx itself
 * is returned, for the caller to classify (http-outcome.ts: ambiguous).
 * @throws what fetch throws (a transport failure, an abort).
 */
export function downstreamFetch(url: string, init: Omit<RequestInit, 'redirect'>): Promise<Response> {
  return fetch(url, { ...init, redirect: 'manual' });
}
