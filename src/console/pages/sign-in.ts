import { html } from '../html';
import { page, type SignedIn } from '../layout';
import { CSRF_FIELD } from '../session';

/** The sign-in form: an operator key, kept by the browser only as a session cookie afterwards. */
export function signInPage(formToken: string, next: string | undefined, problem?: string): string {
  const body = html`<div class="signin card">
  <h1>Sign in</h1>
  <p class="muted">The console is for operators: sign in with an operator key (<code>ONCEFLOW_OPERATOR_KEYS</code>, or an operator key made with <code>onceflow keys</code>). Tenant keys are refused.</p>
  ${problem ? html`<div class="notice error" role="alert">${problem}</div>` : ''}
  <form method="post" action="/console/sign-in">
    <input type="hidden" name="${CSRF_FIELD}" value="${formToken}">
    ${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
    <label for="key">Operator key</label>
    <input type="password" id="key" name="key" autocomplete="current-password" required autofocus>
    <button class="primary" type="submit">Sign in</button>
  </form>
</div>`;
  return page({ title: 'Sign in' }, body);
}

/** A failed page navigation or form post, as a page with a way back. */
export function errorPage(status: number, title: string, detail: string, signedIn?: SignedIn): string {
  const body = html`<h1>${title}</h1>
<div class="notice error" role="alert" data-status="${status}">${detail}</div>
<p><a href="/console/attention">Back to the console</a></p>`;
  return page({ title, ...(signedIn ? { signedIn } : {}) }, body);
}
