import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The session cookie: a random token; the database keeps only its SHA-256. */
export const SESSION_COOKIE = 'onceflow_console';
/** Before sign-in: the token the sign-in form must send back (double submit). */
export const SIGN_IN_COOKIE = 'onceflow_console_sign_in';
/** The form field (or X-CSRF-Token header) every state-changing request carries. */
export const CSRF_FIELD = '_csrf';
export const CSRF_HEADER = 'x-csrf-token';

/** How long a session lasts from sign-in; it is never extended. */
export const SESSION_LIFETIME_MS = 12 * 3_600_000;
const SIGN_IN_LIFETIME_S = 3_600;

export const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** 256 random bits, URL-safe. */
export const newToken = (): string => randomBytes(32).toString('base64url');

/** Two secrets compared in constant time (their digests, so lengths say nothing either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** The request's cookies (RFC 6265 pairs); a name given twice keeps its first value, as browsers send the most specific first. */
export function readCookies(request: FastifyRequest): Map<string, string> {
  const cookies = new Map<string, string>();
  const header = request.headers.cookie;
  if (!header) return cookies;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at < 0) continue;
    const name = pair.slice(0, at).trim();
    let value = pair.slice(at + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (name && !cookies.has(name)) cookies.set(name, value);
  }
  return cookies;
}

/**
 * A console cookie: HttpOnly (no script reads it), SameSite=Strict (no other
 * site's page sends it), scoped to /console, and Secure when the request came
 * over TLS (directly, or through a proxy trusted by ONCEFLOW_API_TRUST_PROXY).
 */
function cookieText(request: FastifyRequest, name: string, value: string, maxAgeS: number): string {
  const parts = [`${name}=${value}`, 'Path=/console', 'HttpOnly', 'SameSite=Strict', `Max-Age=${maxAgeS}`];
  if (request.protocol === 'https') parts.push('Secure');
  return parts.join('; ');
}

/** Adds a Set-Cookie header (keeping those already set on the reply). */
function addCookie(reply: FastifyReply, text: string): void {
  const existing = reply.getHeader('set-cookie');
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing.map(String) : [String(existing)];
  reply.header('set-cookie', [...list, text]);
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
  addCookie(reply, cookieText(request, SESSION_COOKIE, token, Math.floor(SESSION_LIFETIME_MS / 1000)));
}

export function setSignInCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
  addCookie(reply, cookieText(request, SIGN_IN_COOKIE, token, SIGN_IN_LIFETIME_S));
}

export function clearCookie(request: FastifyRequest, reply: FastifyReply, name: string): void {
  addCookie(reply, cookieText(request, name, '', 0));
}
