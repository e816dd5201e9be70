import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OPERATOR_PRINCIPAL } from '../config';
import { renderJob } from '../api/job-view';
import type { ApiDeps } from '../api/deps';
import type { AuthThrottle } from '../api/auth-throttle';
import type { KeyRing, Principal } from '../api/auth';
import { toProblemError, sendProblem } from '../api/errors';
import { decodeCursor, encodeCursor } from '../api/list-cursor';
import { resolveAttemptAsOperator, resolveEffectAsOperator } from '../api/operator-commands';
import { describeProviders } from '../api/providers-routes';
import { describeEffects } from '../api/effects-routes';
import { describeRoutes } from '../api/route-versions-routes';
import { notFound, ProblemError, ProblemType } from '../api/problems';
import type { RouteChooser } from '../canary/serving';
import { JobStatus } from '../jobs/status';
import { parseKey } from '../keys/api-key';
import { attentionCounts, awaitingJobs, effectsInReview } from '../ledger/attention';
import { listAttempts } from '../ledger/attempts';
import { closeConsoleSession, findConsoleSession, openConsoleSession } from '../ledger/console-sessions';
import { latestVerification, type VerificationRecord } from '../ledger/contracts';
import { listEffects } from '../ledger/effects';
import { loadJobDetailsById } from '../ledger/job-details';
import { searchJobs, searchNamesSomething } from '../ledger/job-search';
import { getJobInput } from '../ledger/jobs';
import { attemptsByOutcome, costByOperation, effectsByStatus, jobsPerHour } from '../ledger/overview';
import { ASSET_PATHS, CONSOLE_CSS, CONSOLE_JS } from './assets';
import { choiceField, formOf, invalidField, parseForm, receiptField, requiredField } from './forms';
import type { SignedIn } from './layout';
import { attentionPage } from './pages/attention';
import { jobStoryPage } from './pages/job-story';
import { OVERVIEW_WINDOWS, overviewPage } from './pages/overview';
import { providersPage, verificationKey } from './pages/providers';
import { searchPage, type SearchForm } from './pages/search';
import { errorPage, signInPage } from './pages/sign-in';
import {
  clearCookie,
  CSRF_FIELD,
  CSRF_HEADER,
  newToken,
  readCookies,
  sameSecret,
  SESSION_COOKIE,
  SESSION_LIFETIME_MS,
  setSessionCookie,
  setSignInCookie,
  sha256,
  SIGN_IN_COOKIE,
} from './session';

/** An operator signed in to the console, as a request carries it. */
interface ConsoleSignIn {
  principal: Principal;
  csrfToken: string;
  tokenSha256: Buffer;
}

declare module 'fastify' {
  interface FastifyRequest {
    consoleSignIn?: ConsoleSignIn;
  }
}

export interface ConsoleDeps {
  keyRing: KeyRing;
  throttle: AuthThrottle;
  routing: RouteChooser;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FORM_LIMIT_BYTES = 64 * 1024;
const PAGE_SIZE = 50;
const ATTENTION_ROWS = 100;
/** Console routes are not part of the HTTP API's document. */
const HIDDEN = { schema: { hide: true } };

/**
 * No script or style from anywhere but Onceflow, no framing, no form posted
 * elsewhere. Inline SVG needs no allowance: its colours are attributes.
 */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/**
 * Where to go after signing in: a console page of this origin, never
 * another site (a path under /console/, without a scheme, host or
 * backslash); undefined for anything else, and for the console's root.
 */
export function consolePage(path: string | undefined): string | undefined {
  if (!path || !/^\/console\/[^\\\s]*$/.test(path) || path.includes('//')) return undefined;
  return path.startsWith('/console/sign-') ? undefined : path;
}

/** A browser navigating or posting a form asks for HTML; anything else gets problem+json. */
const wantsHtml = (request: FastifyRequest): boolean => (request.headers.accept ?? '').includes('text/html');

/**
 * The operator console under /console: server-rendered pages for operator
 * keys only. Signing in turns an operator key into a session cookie; every
 * page needs that session, and every state-changing request carries the
 * session's CSRF token. Settling goes through the same operator commands as
 * the HTTP API (operator-commands.ts), so the audit trail and the
 * compare-and-swaps are the same whichever door was used.
 */
export async function registerConsole(app: FastifyInstance, deps: ApiDeps, consoleDeps: ConsoleDeps): Promise<void> {
  const { db } = deps;
  const { keyRing, throttle, routing } = consoleDeps;
  const context = { temporalUiUrl: deps.config.temporal.uiUrl, namespace: deps.config.temporal.namespace };

  await app.register(
    async (scope) => {
      // Forms only: the API's JSON parser would hand the handlers numbers, arrays and objects where a form has text (a 415 instead).
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT_BYTES }, (_request, body, done) => {
        done(null, parseForm(body as string));
      });
      scope.addHook('onSend', (_request, reply, payload, done) => {
        reply.headers(SECURITY_HEADERS);
        if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
        done(null, payload);
      });
      const signedInOf = (request: FastifyRequest): SignedIn | undefined =>
        request.consoleSignIn ? { operator: request.consoleSignIn.principal.label, csrfToken: request.consoleSignIn.csrfToken } : undefined;

      /** A page for a browser, problem+json for anything else; 5xx details stay in the log. */
      const answerError = (problem: ProblemError, request: FastifyRequest, reply: FastifyReply) => {
        if (!wantsHtml(request)) return sendProblem(reply, problem);
        for (const [name, value] of Object.entries(problem.extras.headers ?? {})) reply.header(name, value);
        return reply.status(problem.status).type('text/html; charset=utf-8').send(errorPage(problem.status, problem.title, problem.message, signedInOf(request)));
      };
      scope.setErrorHandler((error: FastifyError, request, reply) => {
        const problem = toProblemError(error);
        if (problem.status >= 500) request.log.error({ err: error }, 'console request failed');
        if (problem.status !== 404) deps.metrics.requestsRejected.inc({ reason: problem.problemType });
        return answerError(problem, request, reply);
      });
      scope.setNotFoundHandler((request, reply) => answerError(new ProblemError(404, ProblemType.notFound, 'Not found', `no page ${request.method} ${request.url.split('?')[0]}`), request, reply));

      scope.get('/assets/:file', HIDDEN, async (request, reply) => {
        const path = `/console/assets/${(request.params as { file: string }).file}`;
        const asset = path === ASSET_PATHS.css ? { type: 'text/css; charset=utf-8', body: CONSOLE_CSS } : path === ASSET_PATHS.js ? { type: 'text/javascript; charset=utf-8', body: CONSOLE_JS } : undefined;
        if (!asset) throw notFound('asset');
        // The name carries the content's digest: a new content is a new name.
        reply.header('cache-control', 'public, max-age=31536000, immutable');
        return reply.type(asset.type).send(asset.body);
      });

      /** The sign-in form with a fresh double-submit token (its cookie and its hidden field). */
      const sendSignIn = (request: FastifyRequest, reply: FastifyReply, status: number, next: string | undefined, problem?: string) => {
        const formToken = newToken();
        setSignInCookie(request, reply, formToken);
        return reply.status(status).type('text/html; charset=utf-8').send(signInPage(formToken, next, problem));
      };

      scope.get('/sign-in', HIDDEN, async (request, reply) => sendSignIn(request, reply, 200, consolePage((request.query as { next?: string }).next)));

      scope.post('/sign-in', HIDDEN, async (request, reply) => {
        const form = formOf(request);
        const next = consolePage(form.next);
        const cookieToken = readCookies(request).get(SIGN_IN_COOKIE);
        const formToken = form[CSRF_FIELD];
        // Signing in changes state too: the form's token must match the cookie set with it (double submit).
        const refusal = !cookieToken || !formToken
          ? new ProblemError(403, ProblemType.csrfTokenMissing, 'CSRF token missing', 'the sign-in form and its cookie must both carry the sign-in token; open the sign-in page again')
          : !sameSecret(cookieToken, formToken)
            ? new ProblemError(403, ProblemType.csrfTokenInvalid, 'CSRF token invalid', 'the sign-in token of the form does not match its cookie; open the sign-in page again')
            : undefined;
        if (refusal) {
          if (wantsHtml(request)) return sendSignIn(request, reply, refusal.status, next, `${refusal.title}: ${refusal.message}.`);
          throw refusal;
        }
        const refusedForMs = throttle.refusedForMs(request.ip);
        if (refusedForMs > 0) {
          const seconds = String(Math.ceil(refusedForMs / 1000));
          throw new ProblemError(429, ProblemType.rateLimited, 'Too many failed sign-ins', `too many wrong keys came from this address; retry after ${seconds} s`, { headers: { 'retry-after': seconds } });
        }
        const key = (form.key ?? '').trim();
        let principal: Principal;
        try {
          principal = await keyRing.authenticate(`Bearer ${key}`);
        } catch (err) {
          if (!(err instanceof ProblemError) || err.status !== 401) throw err;
          throttle.fail(request.ip);
          if (wantsHtml(request)) return sendSignIn(request, reply, 401, next, 'That key is not valid.');
          throw new ProblemError(401, ProblemType.unauthorized, 'Unauthorized', 'the key is not valid');
        }
        // A tenant key gets nothing from the console: not a session, not a page.
        if (!principal.operator) {
          if (wantsHtml(request)) return sendSignIn(request, reply, 403, next, 'This is a tenant key. The console is for operator keys only.');
          throw new ProblemError(403, ProblemType.forbidden, 'Forbidden', 'the console is for operator keys; a tenant key gets no session');
        }
        const keySha256 = sha256(key);
        const token = newToken();
        await openConsoleSession(db, {
          tokenSha256: sha256(token),
          operator: principal.label,
          keySha256,
          apiKeyId: keyRing.isOperatorKeyDigest(keySha256) ? null : (parseKey(key)?.id ?? null),
          csrfToken: newToken(),
          lifetimeMs: SESSION_LIFETIME_MS,
        });
        clearCookie(request, reply, SIGN_IN_COOKIE);
        setSessionCookie(request, reply, token);
        return reply.redirect(next ?? '/console/attention', 303);
      });

      // Everything below needs a session, and every POST its CSRF token.
      await scope.register(async (guarded) => {
        guarded.addHook('onRequest', async (request, reply) => {
          const token = readCookies(request).get(SESSION_COOKIE);
          const tokenSha256 = token ? sha256(token) : undefined;
          const session = tokenSha256 ? await findConsoleSession(db, tokenSha256) : undefined;
          // A session lasts while the key that opened it does: still configured, or not revoked.
          const keyLive = session ? (session.apiKeyId !== null ? session.apiKeyLive : keyRing.isOperatorKeyDigest(session.keySha256)) : false;
          if (!session || !tokenSha256 || !keyLive) {
            if (token) clearCookie(request, reply, SESSION_COOKIE);
            if (request.method === 'GET' && wantsHtml(request)) {
              const next = consolePage(request.url);
              return reply.redirect(next ? `/console/sign-in?${new URLSearchParams({ next })}` : '/console/sign-in', 303);
            }
            throw new ProblemError(401, ProblemType.unauthorized, 'Sign in first', 'the console needs an operator session: sign in at /console/sign-in with an operator key');
          }
          request.consoleSignIn = { principal: { id: OPERATOR_PRINCIPAL, operator: true, label: session.operator }, csrfToken: session.csrfToken, tokenSha256 };
        });
        guarded.addHook('preValidation', (request, _reply, done) => {
          if (request.method !== 'POST') return done();
          const sent = formOf(request)[CSRF_FIELD] ?? (request.headers[CSRF_HEADER] as string | undefined);
          if (!sent) return done(new ProblemError(403, ProblemType.csrfTokenMissing, 'CSRF token missing', `every state-changing request of the console carries the session's CSRF token (the ${CSRF_FIELD} field or the X-CSRF-Token header); reload the page and try again`));
          if (!sameSecret(sent, request.consoleSignIn!.csrfToken)) return done(new ProblemError(403, ProblemType.csrfTokenInvalid, 'CSRF token invalid', "the CSRF token is not this session's; reload the page and try again"));
          done();
        });

        const signedIn = (request: FastifyRequest): SignedIn => signedInOf(request)!;
        const sendPage = (reply: FastifyReply, markup: string) => reply.type('text/html; charset=utf-8').send(markup);

        guarded.get('/', HIDDEN, async (_request, reply) => reply.redirect('/console/attention', 303));

        guarded.post('/sign-out', HIDDEN, async (request, reply) => {
          await closeConsoleSession(db, request.consoleSignIn!.tokenSha256);
          clearCookie(request, reply, SESSION_COOKIE);
          return reply.redirect('/console/sign-in', 303);
        });

        guarded.get('/attention', HIDDEN, async (request, reply) => {
          const [awaiting, inReview, counts] = await Promise.all([awaitingJobs(db, ATTENTION_ROWS), effectsInReview(db, ATTENTION_ROWS), attentionCounts(db)]);
          return sendPage(reply, attentionPage({ awaiting, inReview, counts, now: new Date() }, signedIn(request)));
        });

        guarded.get('/jobs/:id', HIDDEN, async (request, reply) => {
          const { id } = request.params as { id: string };
          const details = UUID.test(id) ? await loadJobDetailsById(db, id) : undefined;
          if (!details) throw notFound();
          const [input, attempts, effects] = await Promise.all([getJobInput(db, id), listAttempts(db, id), listEffects(db, id)]);
          const notice = (request.query as { notice?: string }).notice;
          return sendPage(
            reply,
            jobStoryPage({ view: renderJob(details, context), principalId: details.job.principalId, input, attempts, effects, now: new Date() }, signedIn(request), notice),
          );
        });

        guarded.post('/jobs/:id/attempts/:attemptId/resolution', HIDDEN, async (request, reply) => {
          const { id, attemptId } = request.params as { id: string; attemptId: string };
          const form = formOf(request);
          const outcome = choiceField(form, 'outcome', ['failed', 'cancelled'] as const);
          const reason = requiredField(form, 'reason', 2000);
          await resolveAttemptAsOperator(deps, request.consoleSignIn!.principal, { jobId: id, attemptId, outcome, reason }, request.log);
          return reply.redirect(`/console/jobs/${id}?notice=attempt`, 303);
        });

        guarded.post('/jobs/:id/effects/:name/resolution', HIDDEN, async (request, reply) => {
          const { id, name } = request.params as { id: string; name: string };
          const form = formOf(request);
          const outcome = choiceField(form, 'outcome', ['succeeded', 'failed'] as const);
          const reason = requiredField(form, 'reason', 2000);
          const receipt = receiptField(form);
          await resolveEffectAsOperator(deps, request.consoleSignIn!.principal, { jobId: id, name, outcome, reason, ...(receipt ? { receipt } : {}) }, request.log);
          return reply.redirect(`/console/jobs/${id}?notice=effect`, 303);
        });

        guarded.get('/providers', HIDDEN, async (request, reply) => {
          const [providers, routes, effects] = await Promise.all([
            describeProviders(deps),
            describeRoutes(deps, routing),
            describeEffects(db, deps.effects?.adapters ?? new Map(), deps.effects?.verificationMaxAgeMs ?? 0),
          ]);
          const verifications = new Map<string, VerificationRecord>();
          for (const provider of providers.providers) {
            for (const step of provider.routes) {
              const found = await latestVerification(db, { operation: step.operation, provider: provider.name, model: step.model });
              if (found) verifications.set(verificationKey(step.operation, provider.name, step.model), found);
            }
          }
          return sendPage(reply, providersPage({ providers, effects, verifications, routes }, signedIn(request)));
        });

        guarded.get('/overview', HIDDEN, async (request, reply) => {
          const asked = Number((request.query as { hours?: string }).hours);
          const hours = (OVERVIEW_WINDOWS as readonly number[]).includes(asked) ? asked : 24;
          const hourMs = 3_600_000;
          const since = new Date(Math.floor(Date.now() / hourMs) * hourMs - (hours - 1) * hourMs);
          const [perHour, attempts, effects, costs] = await Promise.all([jobsPerHour(db, since), attemptsByOutcome(db, since), effectsByStatus(db, since), costByOperation(db, since)]);
          return sendPage(reply, overviewPage({ hours, since, jobsPerHour: perHour, attempts, effects, costs }, signedIn(request)));
        });

        guarded.get('/search', HIDDEN, async (request, reply) => {
          const query = request.query as Record<string, string | undefined>;
          const text = (value: string | undefined) => (value ?? '').trim() || undefined;
          const form: SearchForm = { q: text(query.q), principal: text(query.principal), operation: text(query.operation), status: text(query.status) };
          if (form.status !== undefined && !(Object.values(JobStatus) as string[]).includes(form.status)) throw invalidField('status', `must be one of ${Object.values(JobStatus).join(', ')}`);
          for (const [name, value] of Object.entries(form)) if (value !== undefined && value.length > 255) throw invalidField(name, 'must be at most 255 characters');
          const operations = [...deps.operations.keys()];
          if (!searchNamesSomething({ text: form.q, principalId: form.principal, operation: form.operation, status: form.status as JobStatus | undefined })) {
            return sendPage(reply, searchPage({ form, operations }, signedIn(request)));
          }
          const before = query.before ? decodeCursor(query.before) : undefined;
          const rows = await searchJobs(db, {
            ...(form.q ? { text: form.q } : {}),
            ...(form.principal ? { principalId: form.principal } : {}),
            ...(form.operation ? { operation: form.operation } : {}),
            ...(form.status ? { status: form.status as JobStatus } : {}),
            ...(before ? { before } : {}),
            limit: PAGE_SIZE,
          });
          const hits = rows.slice(0, PAGE_SIZE);
          // A whole job id from the header's box goes straight to its story.
          if (!before && form.q && hits.length === 1 && hits[0]!.id === form.q.toLowerCase() && !form.principal && !form.operation && !form.status) {
            return reply.redirect(`/console/jobs/${hits[0]!.id}`, 303);
          }
          const next = rows.length > PAGE_SIZE ? encodeCursor(hits[hits.length - 1]!.position) : undefined;
          return sendPage(reply, searchPage({ form, operations, hits, ...(next ? { next } : {}) }, signedIn(request)));
        });
      });
    },
    { prefix: '/console' },
  );
}
