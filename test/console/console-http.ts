import type { App } from '../../src/api/app';

/**
 * The console over app.inject, as a browser would drive it: cookies kept
 * from Set-Cookie, the CSRF token read from the forms the pages render.
 */

export const HTML = { accept: 'text/html,application/xhtml+xml' };

/** The cookies a response sets, by name, each with its attributes as sent. */
export function setCookies(response: { headers: Record<string, unknown> }): Map<string, { value: string; attributes: string[] }> {
  const header = response.headers['set-cookie'];
  const list = header === undefined ? [] : Array.isArray(header) ? header.map(String) : [String(header)];
  const cookies = new Map<string, { value: string; attributes: string[] }>();
  for (const text of list) {
    const [pair, ...attributes] = text.split(';').map((part) => part.trim());
    const at = pair!.indexOf('=');
    cookies.set(pair!.slice(0, at), { value: pair!.slice(at + 1), attributes });
  }
  return cookies;
}

/** The value of the first hidden _csrf field of a page. */
export function csrfOf(html: string): string {
  const found = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!found) throw new Error(`no CSRF field in the page: ${html.slice(0, 300)}`);
  return found[1]!;
}

export const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Opens the sign-in page and posts a key with its token; returns the answer and the sign-in cookie it used. */
export async function postSignIn(app: App, key: string, headers: Record<string, string> = {}) {
  const signInPage = await app.inject({ method: 'GET', url: '/console/sign-in', headers: { ...HTML, ...headers } });
  const token = setCookies(signInPage).get('onceflow_console_sign_in')!.value;
  return app.inject({
    method: 'POST',
    url: '/console/sign-in',
    headers: { ...HTML, ...FORM, ...headers, cookie: `onceflow_console_sign_in=${token}` },
    payload: form({ _csrf: csrfOf(signInPage.body), key }),
  });
}

/** Signs an operator key in; returns the session's Cookie header and its CSRF token. */
export async function signIn(app: App, key: string): Promise<{ cookie: string; csrf: string }> {
  const response = await postSignIn(app, key);
  if (response.statusCode !== 303) throw new Error(`sign-in answered ${response.statusCode}: ${response.body.slice(0, 300)}`);
  const cookie = `onceflow_console=${setCookies(response).get('onceflow_console')!.value}`;
  const page = await app.inject({ method: 'GET', url: '/console/attention', headers: { ...HTML, cookie } });
  return { cookie, csrf: csrfOf(page.body) };
}
