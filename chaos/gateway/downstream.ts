/**
 * The gateway round's own downstream for the declared effect `gw.comment`:
 * two real HTTP servers in the suite's process. The declared one takes
 * comments (`POST /v1/tickets/{ticketId}/comments`) and answers the lookup by
 * key (`GET /v1/comments/by-key/{key}`); the other origin is where its
 * redirects point, and takes anything. Both record every request (method,
 * Host header, path, headers, idempotency key) before they answer, so the
 * checks see what really arrived where, whatever Onceflow believes.
 *
 * Faults are planned per ticket by the trial (not read from the request: the
 * body is Onceflow's rendering of the declaration), and may apply only to an
 * answer written by one provider, so that a canary route alone sends effects
 * to review.
 *
 * A third server, the liar, takes the same comments under a path prefix per
 * lie, and breaks the claim its declaration makes (invariant 14): `twice`
 * is declared as deduplicating and stores every repeat as another comment,
 * `unfound`'s lookup never finds anything, `anything`'s lookup finds every
 * key (a made-up id for one it never got). Their drills fail at the worker's
 * start, so recovery may rely on none of these claims.
 */
import type http from 'node:http';
import { createSimServer, readJsonBody, resetConnection, sendJson, type ServerLifecycle } from '../../src/sim/sim-http';

/** How the declared server answers a comment. `acted`: it stored the comment first (the lookup then finds it). */
export type SendFault =
  | { kind: 'ok' }
  /** 3xx with a Location on the other origin (same path). */
  | { kind: 'redirect'; code: 301 | 302 | 303 | 307 | 308; acted: boolean }
  /** 3xx without a Location. */
  | { kind: 'redirect-no-location'; code: 300 | 302 | 303 | 307; acted: boolean }
  /** Reads and records the request, then resets the connection. */
  | { kind: 'reset'; acted: boolean }
  | { kind: 'status'; code: 500; acted: boolean };

/** The lookup by key fails this way for `forMs` after the ticket's first comment arrived. */
export interface LookupFault {
  kind: 500 | 401 | 'hang';
  forMs: number;
}

/** The lies of the liar server, each the first segment of its paths. */
export const LIARS = ['twice', 'unfound', 'anything'] as const;
export type Liar = (typeof LIARS)[number];

export interface DownstreamPlan {
  send: SendFault;
  /** Apply the send fault only to an answer this provider wrote (its name starts the comment's text). */
  onlyFrom?: string;
  lookup?: LookupFault;
}

export interface DownstreamRequest {
  /** Epoch ms at arrival. */
  at: number;
  server: 'declared' | 'liar' | 'elsewhere';
  method: string;
  /** The Host header as sent. */
  host: string;
  path: string;
  headers: Record<string, string>;
  /** The Idempotency-Key header, if any. */
  key?: string;
  kind: 'send' | 'lookup' | 'other';
  ticketId?: string;
  /** What it was answered: a status, `reset` or `hang`. */
  answer: string;
}

export interface StoredComment {
  id: string;
  key: string;
  ticketId: string;
  server: 'declared' | 'liar';
}

export interface GatewayDownstream {
  /** Origin of the declared server (what `${CHAOS_GW_DOWNSTREAM}` names). */
  readonly url: string;
  /** Origin of the other server, where redirects point. */
  readonly elsewhereUrl: string;
  /** The declared server's `host:port`, as a Host header names it. */
  readonly host: string;
  /** Origin of the liar (what `${CHAOS_GW_LIAR}` names); its paths start with the lie. */
  readonly liarUrl: string;
  plan(ticketId: string, plan: DownstreamPlan): void;
  /** Every request so far, in arrival order (copies). */
  requests(): DownstreamRequest[];
  /** Comments stored under a key (what the lookup finds). */
  commentsOf(key: string): StoredComment[];
  close(): Promise<void>;
}

const COMMENTS = /^\/v1\/tickets\/([^/]+)\/comments$/;
const BY_KEY = /^\/v1\/comments\/by-key\/([^/]+)$/;
const LIAR_PATH = new RegExp(`^/(${LIARS.join('|')})(/.*)$`);

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function headersOf(req: http.IncomingMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value ?? '')]));
}

/** The provider that wrote a comment: the simulators start every answer with their name. */
function authorOf(body: unknown): string | undefined {
  const text = (body as { text?: unknown } | undefined)?.text;
  return typeof text === 'string' ? /^([A-Za-z0-9._-]+): /.exec(text)?.[1] : undefined;
}

/** Starts both servers on free ports of 127.0.0.1. */
export async function startGatewayDownstream(): Promise<GatewayDownstream> {
  const records: DownstreamRequest[] = [];
  const plans = new Map<string, DownstreamPlan>();
  const comments: StoredComment[] = [];
  const firstSendAt = new Map<string, number>();
  let elsewhereUrl = '';
  let counter = 0;

  const record = (req: http.IncomingMessage, server: DownstreamRequest['server'], kind: DownstreamRequest['kind'], ticketId?: string): DownstreamRequest => {
    const headers = headersOf(req);
    const entry: DownstreamRequest = {
      at: Date.now(),
      server,
      method: req.method ?? '?',
      host: headers.host ?? '',
      path: req.url ?? '',
      headers,
      ...(headers['idempotency-key'] ? { key: headers['idempotency-key'] } : {}),
      kind,
      ...(ticketId !== undefined ? { ticketId } : {}),
      answer: 'pending',
    };
    records.push(entry);
    return entry;
  };

  async function declared(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    return route(req, res, new URL(req.url ?? '/', 'http://downstream.invalid').pathname, 'declared');
  }

  async function liar(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const pathname = new URL(req.url ?? '/', 'http://downstream.invalid').pathname;
    const [, lie, rest] = LIAR_PATH.exec(pathname) ?? [];
    return route(req, res, rest ?? pathname, 'liar', lie as Liar | undefined);
  }

  async function route(req: http.IncomingMessage, res: http.ServerResponse, pathname: string, server: StoredComment['server'], lie?: Liar): Promise<void> {
    const send = COMMENTS.exec(pathname);
    if (send && ['POST', 'PUT', 'PATCH'].includes(req.method ?? '') && (server === 'declared' || lie)) return comment(req, res, decode(send[1]!), server);
    const lookup = BY_KEY.exec(pathname);
    if (lookup && req.method === 'GET' && (server === 'declared' || lie)) return lookupByKey(req, res, decode(lookup[1]!), server, lie);
    const entry = record(req, server, 'other');
    entry.answer = '404';
    sendJson(res, 404, { error: `no route for ${req.method} ${pathname}` });
  }

  async function comment(req: http.IncomingMessage, res: http.ServerResponse, ticketId: string, server: StoredComment['server']): Promise<void> {
    // Recorded before the body is read: a request that arrived counts, whatever happens next.
    // Neither server deduplicates: every send it acts on is another comment (the liar `twice` claims otherwise).
    const entry = record(req, server, 'send', ticketId);
    const body = await readJsonBody(req).catch(() => undefined);
    if (!firstSendAt.has(ticketId)) firstSendAt.set(ticketId, entry.at);
    const plan = plans.get(ticketId);
    const applies = plan && (!plan.onlyFrom || authorOf(body) === plan.onlyFrom);
    const fault: SendFault = applies ? plan.send : { kind: 'ok' };
    const acted = fault.kind === 'ok' || fault.acted;
    const stored: StoredComment | undefined = acted && entry.key ? { id: `cmt_${++counter}`, key: entry.key, ticketId, server } : undefined;
    if (stored) comments.push(stored);
    switch (fault.kind) {
      case 'ok':
        entry.answer = '201';
        return sendJson(res, 201, stored ? { id: stored.id } : { error: 'no Idempotency-Key' });
      case 'redirect':
        entry.answer = String(fault.code);
        res.writeHead(fault.code, { location: `${elsewhereUrl}${req.url ?? '/'}`, 'content-length': '0' });
        return void res.end();
      case 'redirect-no-location':
        entry.answer = String(fault.code);
        res.writeHead(fault.code, { 'content-length': '0' });
        return void res.end();
      case 'reset':
        entry.answer = 'reset';
        return resetConnection(req);
      case 'status':
        entry.answer = String(fault.code);
        return sendJson(res, fault.code, { error: 'simulated failure after the request was recorded' });
    }
  }

  function lookupByKey(req: http.IncomingMessage, res: http.ServerResponse, key: string, server: StoredComment['server'], lie?: Liar): void {
    const found = comments.filter((c) => c.key === key && c.server === server);
    const ticketId = found[0]?.ticketId ?? records.find((r) => r.kind === 'send' && r.key === key)?.ticketId;
    const entry = record(req, server, 'lookup', ticketId);
    if (lie === 'unfound' || (lie === 'anything' && found.length === 0)) {
      entry.answer = lie === 'unfound' ? '404' : '200';
      return lie === 'unfound' ? sendJson(res, 404, { error: `no comment with key ${key}` }) : sendJson(res, 200, { id: `cmt_made_up_${++counter}`, key });
    }
    const fault = ticketId === undefined ? undefined : plans.get(ticketId)?.lookup;
    const since = ticketId === undefined ? undefined : firstSendAt.get(ticketId);
    if (fault && since !== undefined && Date.now() - since < fault.forMs) {
      if (fault.kind === 'hang') {
        // Never answers: the socket stays open until the client gives up or the server closes.
        entry.answer = 'hang';
        return;
      }
      entry.answer = String(fault.kind);
      return sendJson(res, fault.kind, { error: 'simulated lookup failure' });
    }
    if (found.length === 0) {
      entry.answer = '404';
      return sendJson(res, 404, { error: `no comment with key ${key}` });
    }
    entry.answer = '200';
    sendJson(res, 200, { id: found[0]!.id, key, ticketId: found[0]!.ticketId });
  }

  async function elsewhere(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Anything that arrives here came by a redirect, or by a URL that changed its host: it is recorded and "succeeds".
    const entry = record(req, 'elsewhere', 'other');
    await readJsonBody(req).catch(() => undefined);
    entry.answer = '200';
    sendJson(res, 200, { id: `elsewhere_${++counter}` });
  }

  const fail = (res: http.ServerResponse, status: number, message: string): void => sendJson(res, status, { error: message });
  const servers: ServerLifecycle[] = [createSimServer(declared, fail), createSimServer(elsewhere, fail), createSimServer(liar, fail)];
  const [declaredPort, elsewherePort, liarPort] = [await servers[0]!.listen('127.0.0.1', 0), await servers[1]!.listen('127.0.0.1', 0), await servers[2]!.listen('127.0.0.1', 0)];
  elsewhereUrl = `http://127.0.0.1:${elsewherePort}`;
  return {
    url: `http://127.0.0.1:${declaredPort}`,
    elsewhereUrl,
    host: `127.0.0.1:${declaredPort}`,
    liarUrl: `http://127.0.0.1:${liarPort}`,
    plan: (ticketId, plan) => void plans.set(ticketId, plan),
    requests: () => records.map((r) => ({ ...r, headers: { ...r.headers } })),
    commentsOf: (key) => comments.filter((c) => c.key === key).map((c) => ({ ...c })),
    close: async () => {
      await Promise.all(servers.map((server) => server.close()));
    },
  };
}
