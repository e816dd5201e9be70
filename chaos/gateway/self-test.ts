/**
 * The gateway round cannot pass vacuously either: each of its checks fires
 * on a fabricated observation that holds its violation, stays quiet on a
 * clean one and on the excused cases; its draws are reproducible and reach
 * every trial kind and fault of its catalogue.
 */
import type { Exchange } from '../api-client';
import type { SelfTestResult } from '../self-test';
import { checkGatewayTrial, GATEWAY_VIOLATION_KINDS, type GatewayViolationKind } from './checks';
import { drawGatewayPlan, gatewayFaultKinds } from './draw';
import { fabricatedAttempt, fabricatedJob } from './fabricated';
import type { GatewayObservation, GwJob } from './observation';

const P = 'gw-self-test';
const SECRET = 'gw_secret_self_test';
const HOST = '127.0.0.1:7400';
const LIAR = '127.0.0.1:7402';
const J1 = '00000000-0000-4000-8000-000000000001';
const J2 = '00000000-0000-4000-8000-000000000002';
const K1 = '00000000-0000-4000-8000-0000000000c1';
const K2 = '00000000-0000-4000-8000-0000000000c2';
const K3 = '00000000-0000-4000-8000-0000000000c3';
const CANARY = 'gw-canary-broken';
const BASE = 'config-0000';

function exchange(label: string, status: number, body?: unknown, replayed = false, at = 1_000): Exchange {
  return { label, method: label.startsWith('replay') || label.startsWith('submit') ? 'POST' : 'GET', path: '/v1/jobs', startedAt: at, endedAt: at + 10, status, replayed, body };
}

const job = (id: string, operation: string, key: string, fields: Partial<GwJob> = {}): GwJob => fabricatedJob(id, operation, key, { routeVersion: BASE, ...fields });
const attempt = fabricatedAttempt;

const stored = (j: GwJob) => ({ id: j.id, status: j.status, ...(j.status === 'succeeded' ? { result: j.result } : {}), ...(j.status === 'failed' ? { error: j.error } : {}) });

/**
 * A trial that went right: a side-effecting job whose primary was rate
 * limited (the backup answered), a hedged job whose unknown sibling was
 * billed later, and a canary that crossed its threshold and stopped.
 */
export function cleanGatewayObservation(): GatewayObservation {
  const j1 = job(J1, 'gw.ticket', 'k0', { completedBy: 'a2', result: { answer: 'ok', commentId: 'cmt_1' } });
  const j2 = job(J2, 'gw.lookup', 'k1', { completedBy: 'b2', result: { summary: 's', priority: 'low' } });
  const c1 = job(K1, 'gw.canary-ticket', 'c1', { completedBy: 'c1b', routeVersion: CANARY, createdAt: 1_000, terminalAt: 2_000 });
  const c2 = job(K2, 'gw.canary-ticket', 'c2', { completedBy: 'c2b', routeVersion: CANARY, createdAt: 2_500, terminalAt: 3_000 });
  const c3 = job(K3, 'gw.canary-ticket', 'c3', { completedBy: 'c3a', routeVersion: BASE, createdAt: 3_500, terminalAt: 4_000 });
  const jobs = [j1, j2, c1, c2, c3];
  const bill = (jobId: string, cost: string, attempts: number, settledAt = 2_000) => ({ jobId, run: 1, jobStatus: 'succeeded', providerCost: cost, billable: cost, inputTokens: 100, outputTokens: 20, attempts, settledAt });
  return {
    principal: P,
    intents: jobs.map((j) => ({ label: j.idempotencyKey, operation: j.operation, key: j.idempotencyKey, retryAfterMs: (j.id === J1 ? { 'sim-primary': 1_000 } : {}) as Record<string, number> })),
    exchanges: jobs.flatMap((j) => [exchange(`submit:${j.idempotencyKey}`, 202, { ...stored(j), status: 'running', result: undefined }), exchange(`replay:${j.idempotencyKey}`, 200, stored(j), true, 5_000)]),
    windows: [],
    crashes: [],
    jobs,
    attempts: [
      attempt('a1', J1, 1, 'sim-primary', { status: 'failed', errorClass: 'rate_limited', retryAfterMs: 1_000, endedAt: 1_120 }),
      attempt('a2', J1, 2, 'sim-backup', { startedAt: 1_150, cost: '0.0002', inputTokens: 100, outputTokens: 20 }),
      attempt('b1', J2, 1, 'sim-primary', { status: 'discarded', cost: '0.00005', inputTokens: 10, outputTokens: 5 }),
      attempt('b2', J2, 2, 'sim-backup', { lane: 1, cost: '0.0001', inputTokens: 100, outputTokens: 20 }),
      attempt('c1a', K1, 1, 'sim-backup', { status: 'failed', errorClass: 'contract_violation' }),
      attempt('c1b', K1, 2, 'sim-primary'),
      attempt('c2a', K2, 1, 'sim-backup', { status: 'failed', errorClass: 'contract_violation' }),
      attempt('c2b', K2, 2, 'sim-primary'),
      attempt('c3a', K3, 1, 'sim-primary'),
    ],
    effects: [
      { jobId: J1, name: 'gw.comment', key: 'E1', status: 'succeeded', resolved: false },
      // Its send to the liar was reset after it stored the comment: refused by the gate, then settled by the operator.
      { jobId: J1, name: 'gw.note-twice', key: 'L1', status: 'succeeded', resolved: true },
    ],
    settlements: [bill(J1, '0.0002', 2), bill(J2, '0.0001', 2), bill(K1, '0', 2), bill(K2, '0', 2, 3_000), bill(K3, '0', 1, 4_000)],
    adjustments: [{ jobId: J2, run: 1, attemptId: 'b1', providerCost: '0.00005', inputTokens: 10, outputTokens: 5, createdAt: 6_000 }],
    events: [
      { jobId: J2, type: 'attempt.unknown', at: 1_500 },
      { jobId: J1, type: 'effect.repeat_refused', at: 1_800 },
    ],
    workflows: {},
    usage: { status: 200, reported: { providerCost: '0.00035', inputTokens: 510, outputTokens: 105, jobs: 5 }, ledger: { providerCost: '0.00035', inputTokens: 510, outputTokens: 105 }, unstable: false },
    downstream: {
      host: HOST,
      method: 'POST',
      secret: SECRET,
      performed: ['E1', 'L1'],
      comments: [
        { key: 'E1', server: 'declared', id: 'cmt_1' },
        { key: 'L1', server: 'liar', id: 'cmt_2' },
      ],
      liars: ['gw.note-twice', 'gw.note-unfound', 'gw.note-anything'],
      requests: [
        { at: 1_300, server: 'declared', method: 'POST', host: HOST, path: '/v1/tickets/T-k0/comments', headers: { host: HOST, authorization: `Bearer ${SECRET}`, 'idempotency-key': 'E1' }, key: 'E1', kind: 'send', ticketId: 'T-k0', answer: '201' },
        { at: 1_900, server: 'declared', method: 'GET', host: HOST, path: '/v1/comments/by-key/E1', headers: { host: HOST, authorization: `Bearer ${SECRET}` }, kind: 'lookup', ticketId: 'T-k0', answer: '200' },
        { at: 1_700, server: 'liar', method: 'POST', host: LIAR, path: '/twice/v1/tickets/T-k0/comments', headers: { host: LIAR, 'idempotency-key': 'L1' }, key: 'L1', kind: 'send', ticketId: 'T-k0', answer: 'reset' },
      ],
    },
    canary: {
      initialServing: { 'gw.canary-ticket': BASE },
      baseline: { 'gw.canary-ticket': BASE },
      versions: [
        {
          operation: 'gw.canary-ticket',
          version: CANARY,
          state: 'stopped',
          previousVersion: BASE,
          shareBp: 10_000,
          thresholds: { window: 10, contractViolationsPercent: 10, unknownsPercent: 10, failedPercent: null, effectsInReview: 0 },
          createdAt: 500,
          events: [
            { type: 'canary.started', at: 500, by: 'operator:x' },
            { type: 'canary.stopped', at: 3_050, by: 'canary', cause: 'threshold' },
          ],
        },
      ],
    },
    samples: [{ at: 3_000, jobId: J2, reason: 'unknown', status: 'awaiting_resolution', listed: true, waitedMs: 1_600 }],
    budgetTokens: 20_000,
    settings: { backoffMs: 100, maxAttempts: 3, hedge: { 'gw.lookup': { maxConcurrent: 2, budgetMs: 12_000 } }, minAttemptMs: { 'gw.ticket': 1_000, 'gw.lookup': 1_000, 'gw.canary-ticket': 1_000 }, reopenable: ['gw.ticket'] },
  };
}

type Mutation = (obs: GatewayObservation) => void;

const jobOf = (obs: GatewayObservation, id: string) => obs.jobs.find((j) => j.id === id)!;
const canary = (obs: GatewayObservation) => obs.canary!.versions[0]!;
/** J1 as a job still open: no bill, no replay. */
const open = (status: string): Mutation => (obs) => {
  Object.assign(jobOf(obs, J1), { status, result: null, completedBy: null, terminalAt: null });
  obs.settlements = obs.settlements.filter((s) => s.jobId !== J1);
  obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay:k0');
  obs.attempts.find((a) => a.id === 'a2')!.status = 'failed';
};
const sendAgain = (obs: GatewayObservation, fields: Record<string, unknown> = {}) => obs.downstream.requests.push({ ...obs.downstream.requests[0]!, at: 1_400, ...fields });

const VIOLATING: Record<GatewayViolationKind, Array<[string, Mutation]>> = {
  'one-job': [
    ['a second job for a key', (obs) => obs.jobs.push(job('00000000-0000-4000-8000-0000000000f1', 'gw.ticket', 'k0', { routeVersion: BASE }))],
    ['a 2xx naming another job', (obs) => obs.exchanges.push(exchange('submit:k0', 200, { id: 'other', status: 'running' }, true))],
  ],
  'one-winner': [
    ['two succeeded attempts', (obs) => (obs.attempts.find((a) => a.id === 'b1')!.status = 'succeeded')],
    ['completed by a failed attempt', (obs) => (jobOf(obs, J1).completedBy = 'a1')],
  ],
  'one-bill': [
    ['an ended job without a bill', (obs) => (obs.settlements = obs.settlements.filter((s) => s.jobId !== J2))],
    ['a bill missing an attempt', (obs) => (obs.settlements[0]!.attempts = 1)],
    ['a reopened job whose first run has no bill', (obs) => (jobOf(obs, J1).run = 2)],
    ['a failed run billed', (obs) => Object.assign(obs.settlements[0]!, { jobStatus: 'failed' }) && Object.assign(jobOf(obs, J1), { status: 'failed', error: { type: 'x' } })],
  ],
  stuck: [['an open job whose workflow completed', (obs) => { open('running')(obs); obs.workflows[J1] = 'COMPLETED'; }]],
  waiting: [['an open job waiting for nothing', (obs) => { open('running')(obs); obs.workflows[J1] = 'RUNNING'; }]],
  unsettled: [['an unknown attempt still waiting', (obs) => { open('awaiting_resolution')(obs); obs.attempts.find((a) => a.id === 'a2')!.status = 'unknown'; obs.workflows[J1] = 'RUNNING'; }]],
  '5xx': [['a 500 outside any down window', (obs) => obs.exchanges.push(exchange('operator', 500, { title: 'Internal Server Error' }))]],
  replay: [
    ['a replay with another result', (obs) => obs.exchanges.push(exchange('replay:k1', 200, { ...stored(jobOf(obs, J2)), result: { summary: 'other', priority: 'low' } }, true))],
    ['a replay without Idempotent-Replayed', (obs) => obs.exchanges.push(exchange('replay:k1', 200, stored(jobOf(obs, J2)), false))],
  ],
  attempts: [['four attempts in a run', (obs) => obs.attempts.push(attempt('b3', J2, 3, 'sim-primary', { status: 'failed', errorClass: 'bad_request' }), attempt('b4', J2, 4, 'sim-backup', { status: 'failed', errorClass: 'bad_request' }))]],
  crash: [['a worker that died', (obs) => obs.crashes.push({ name: 'worker-1', at: 1_500, detail: 'worker-1 exited with 1' })]],
  usage: [
    ['a report without the late usage', (obs) => Object.assign(obs.usage!.reported, { providerCost: '0.0003', inputTokens: 500, outputTokens: 100 })],
    ['a report that could not be read', (obs) => (obs.usage!.status = 500)],
  ],
  budget: [
    ['a job admitted after the spend reached the budget', (obs) => { obs.budgetTokens = 600; obs.jobs.push(job('00000000-0000-4000-8000-0000000000f2', 'gw.lookup', 'late', { createdAt: 7_000, terminalAt: null, status: 'running', result: null })); obs.workflows['00000000-0000-4000-8000-0000000000f2'] = 'RUNNING'; obs.intents.push({ label: 'late', operation: 'gw.lookup', key: 'late', retryAfterMs: {} }); obs.attempts.push(attempt('z1', '00000000-0000-4000-8000-0000000000f2', 1, 'sim-primary', { status: 'unknown' })); }],
    ['a reopened run admitted past the budget', (obs) => { obs.budgetTokens = 400; obs.events.push({ jobId: J1, type: 'job.reopened', at: 8_000 }); }],
  ],
  'canary-stop': [
    ['a canary left running after its window crossed', (obs) => { canary(obs).events.pop(); canary(obs).state = 'running'; obs.jobs.find((j) => j.id === K3)!.routeVersion = CANARY; }],
    ['a canary stopped long after the crossing', (obs) => (canary(obs).events[1]!.at = 9_000)],
    ['a canary stopped by itself with no crossing', (obs) => obs.attempts.filter((a) => a.errorClass === 'contract_violation').forEach((a) => (a.errorClass = 'bad_request'))],
    [
      'a job blocked on an unknown attempt crosses before it ends',
      (obs) => {
        obs.attempts.filter((a) => a.errorClass === 'contract_violation').forEach((a) => (a.errorClass = 'bad_request'));
        canary(obs).thresholds!.unknownsPercent = 5;
        obs.events.push({ jobId: K1, type: 'attempt.unknown', at: 1_200 });
      },
    ],
  ],
  'canary-route': [
    ['a job admitted to a stopped canary', (obs) => (obs.jobs.find((j) => j.id === K3)!.routeVersion = CANARY)],
    [
      'a rolled-back promoted canary serving the baseline instead of the version it replaced',
      (obs) => {
        const promoted = { ...canary(obs), version: 'gw-first', state: 'superseded', thresholds: null, events: [{ type: 'canary.started', at: 100, by: 'op' }, { type: 'canary.promoted', at: 200, by: 'op' }] };
        const second = { ...canary(obs), version: 'gw-second', state: 'rolled_back', previousVersion: 'gw-first', thresholds: null, events: [{ type: 'canary.started', at: 300, by: 'op' }, { type: 'canary.promoted', at: 400, by: 'op' }, { type: 'canary.rolled_back', at: 450, by: 'op' }] };
        obs.canary!.versions = [promoted, second];
        for (const j of obs.jobs.filter((j) => j.operation === 'gw.canary-ticket')) j.routeVersion = BASE;
      },
    ],
  ],
  attention: [
    ['a hedged job blocked on an unknown attempt showing running', (obs) => (obs.samples[0]!.status = 'running')],
    ['an effect in review missing from the needs_review list', (obs) => obs.samples.push({ at: 3_000, jobId: J1, reason: 'review', status: 'running', listed: false, waitedMs: 1_700 })],
  ],
  'effect-once': [
    ['a succeeded effect whose key arrived twice', (obs) => sendAgain(obs)],
    ['a succeeded effect that arrived by another method', (obs) => Object.assign(obs.downstream.requests[0]!, { method: 'GET' })],
    ['a request at the redirect target', (obs) => sendAgain(obs, { server: 'elsewhere', host: '127.0.0.1:7401', kind: 'other', headers: { host: '127.0.0.1:7401' }, answer: '200' })],
    ['a succeeded effect the downstream never got', (obs) => (obs.downstream.requests = [])],
    ['a 3xx settled failed though the downstream acted', (obs) => { obs.effects[0]!.status = 'failed'; Object.assign(obs.downstream.requests[0]!, { answer: '303' }); }],
  ],
  liar: [
    ['a key the liar got twice: a repeat through a false deduplication', (obs) => sendAgain(obs, { server: 'liar', host: LIAR, path: '/twice/v1/tickets/T-k0/comments', key: 'L1', headers: { host: LIAR, 'idempotency-key': 'L1' }, answer: '201' })],
    ['a comment the liar stored twice', (obs) => obs.downstream.comments.push({ key: 'L1', server: 'liar', id: 'cmt_3' })],
    ['an effect settled succeeded from a false "found": the liar stored nothing', (obs) => Object.assign(obs, { effects: obs.effects.map((e) => (e.key === 'L1' ? { ...e, resolved: false } : e)), downstream: { ...obs.downstream, comments: obs.downstream.comments.filter((c) => c.key !== 'L1') } })],
    ['a send the liar reset that recovery did not refuse to rely on', (obs) => (obs.events = obs.events.filter((e) => e.type !== 'effect.repeat_refused'))],
  ],
  'secret-host': [['the secret sent to the redirect target', (obs) => sendAgain(obs, { server: 'elsewhere', host: '127.0.0.1:7401', kind: 'other', key: 'X', headers: { host: '127.0.0.1:7401', authorization: `Bearer ${SECRET}` } })]],
  backoff: [
    [
      'the provider asked again before its Retry-After, the route come round',
      (obs) => obs.attempts.push(attempt('a3', J1, 3, 'sim-primary', { status: 'failed', errorClass: 'rate_limited', startedAt: 1_400, endedAt: 1_410 })),
    ],
    [
      'attempts_exhausted where the backoff would overrun the deadline',
      (obs) => {
        Object.assign(jobOf(obs, J1), { status: 'failed', result: null, completedBy: null, error: { type: 'attempts_exhausted' }, deadlineAt: 2_500 });
        Object.assign(obs.settlements[0]!, { jobStatus: 'failed', billable: '0' });
        Object.assign(obs.attempts.find((a) => a.id === 'a2')!, { status: 'failed', errorClass: 'rate_limited' });
        obs.attempts.push(attempt('a3', J1, 3, 'sim-primary', { status: 'failed', errorClass: 'rate_limited', startedAt: 2_200, endedAt: 2_210 }));
        obs.effects = [];
        obs.downstream.requests = [];
        obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay:k0');
      },
    ],
  ],
};

const EXCUSED: Array<[string, Mutation]> = [
  ['a 429 asked again after its Retry-After', (obs) => { obs.attempts.push(attempt('a3', J1, 3, 'sim-primary', { status: 'failed', errorClass: 'rate_limited', startedAt: 2_130, endedAt: 2_140 })); obs.settlements[0]!.attempts = 3; }],
  ['a canary promoted before its window crossed', (obs) => { canary(obs).events[1] = { type: 'canary.promoted', at: 2_400, by: 'op' }; canary(obs).state = 'promoted'; obs.jobs.find((j) => j.id === K3)!.routeVersion = CANARY; }],
  ['a job admitted to the canary while its stop raced', (obs) => { obs.jobs.find((j) => j.id === K3)!.routeVersion = CANARY; obs.jobs.find((j) => j.id === K3)!.createdAt = 3_040; }],
  ['an effect in review showing running, listed', (obs) => obs.samples.push({ at: 3_000, jobId: J1, reason: 'review', status: 'running', listed: true, waitedMs: 1_700 })],
  ['a usage report read while late usage landed', (obs) => Object.assign(obs.usage!, { unstable: true, reported: { ...obs.usage!.reported, providerCost: '0.0003' } })],
  ['a job admitted as the budget was being reached', (obs) => { obs.budgetTokens = 600; obs.jobs[1]!.createdAt = 4_100; }],
  [
    'a reopened job: run 1 failed and billed as such, run 2 succeeded, the first answer was the failure',
    (obs) => {
      jobOf(obs, J1).run = 2;
      obs.attempts.filter((a) => a.jobId === J1).forEach((a) => (a.run = 2));
      obs.settlements[0]!.run = 2;
      obs.settlements.push({ jobId: J1, run: 1, jobStatus: 'failed', providerCost: '0', billable: '0', inputTokens: 0, outputTokens: 0, attempts: 0, settledAt: 900 });
      obs.exchanges.push(exchange('submit:k0', 200, { id: J1, status: 'failed', error: { type: 'deadline_exceeded' } }, true, 950));
    },
  ],
  ['an effect settled failed after a redirect not followed, nothing performed', (obs) => { obs.effects[0]!.status = 'failed'; obs.downstream.performed = []; Object.assign(obs.downstream.requests[0]!, { answer: '307' }); }],
  ['an effect an operator settled failed', (obs) => Object.assign(obs.effects[0]!, { status: 'failed', resolved: true })],
  [
    "a liar's send answered 201, settled without review",
    (obs) => {
      Object.assign(obs.effects.find((e) => e.key === 'L1')!, { resolved: false });
      Object.assign(obs.downstream.requests.find((r) => r.key === 'L1')!, { answer: '201' });
      obs.events = obs.events.filter((e) => e.type !== 'effect.repeat_refused');
    },
  ],
  ["a liar's send refused with a 4xx, settled failed, nothing stored", (obs) => { Object.assign(obs.effects.find((e) => e.key === 'L1')!, { status: 'failed', resolved: false }); Object.assign(obs.downstream.requests.find((r) => r.key === 'L1')!, { answer: '400' }); obs.downstream.comments.pop(); obs.downstream.performed = ['E1']; obs.events.pop(); }],
];

function checkCases(): SelfTestResult[] {
  const results: SelfTestResult[] = [];
  const describe = (obs: GatewayObservation) => checkGatewayTrial(obs).map((v) => `${v.kind}: ${v.detail}`).join('; ') || 'none';
  const clean = checkGatewayTrial(cleanGatewayObservation());
  results.push({ name: 'gateway: a clean trial has no violation', ok: clean.length === 0, detail: describe(cleanGatewayObservation()) });
  for (const [name, mutate] of EXCUSED) {
    const obs = cleanGatewayObservation();
    mutate(obs);
    results.push({ name: `gateway excused: ${name}`, ok: checkGatewayTrial(obs).length === 0, detail: describe(obs) });
  }
  for (const kind of Object.keys(GATEWAY_VIOLATION_KINDS) as GatewayViolationKind[]) {
    const cases = VIOLATING[kind];
    if (!cases.length) results.push({ name: `gateway: ${kind} has a fabricated violation`, ok: false, detail: 'none given' });
    for (const [name, mutate] of cases) {
      const obs = cleanGatewayObservation();
      mutate(obs);
      const found = checkGatewayTrial(obs);
      results.push({ name: `gateway: ${kind} fires on ${name}`, ok: found.some((v) => v.kind === kind), detail: found.map((v) => `${v.kind}: ${v.detail}`).join('; ') || 'nothing fired' });
    }
  }
  return results;
}

function drawCases(): SelfTestResult[] {
  const results: SelfTestResult[] = [];
  const same = JSON.stringify(drawGatewayPlan(7, 12, '')) === JSON.stringify(drawGatewayPlan(7, 12, ''));
  results.push({ name: 'gateway: the same seed and trial draw the same plan', ok: same, detail: same ? 'equal' : 'plans differ' });
  const repeat = drawGatewayPlan(7, 12, 'r1');
  const base = drawGatewayPlan(7, 12, '');
  const sameDraws = repeat.kind === base.kind && JSON.stringify(repeat.intents.map((i) => i.directives)) === JSON.stringify(base.intents.map((i) => i.directives));
  const renamed = repeat.principal !== base.principal && repeat.intents.every((intent, i) => intent.key !== base.intents[i]!.key);
  results.push({ name: 'gateway: a repeat tag changes names, not draws', ok: sameDraws && renamed, detail: `${repeat.principal} vs ${base.principal}` });
  const seen = new Set<string>();
  for (let trial = 1; trial <= 1_500; trial++) for (const kind of gatewayFaultKinds(drawGatewayPlan(1, trial, ''))) seen.add(kind.replace(/^effect:(\S+) (un)?acted$/, 'effect:$1'));
  const wanted = [
    ...['canary', 'hedge', 'storm429', 'effect', 'budget', 'reopen', 'liar'].map((k) => `gw:${k}`),
    ...['twice', 'unfound', 'anything'].map((k) => `liar:${k}`),
    ...['redirect-301', 'redirect-302', 'redirect-303', 'redirect-307', 'redirect-308', 'redirect-no-location-300', 'redirect-no-location-302', 'redirect-no-location-303', 'redirect-no-location-307', 'reset', 'status-500', 'ok'].map((k) => `effect:${k}`),
    ...['500', '401', 'hang'].map((k) => `lookup:${k}`),
    ...['extra-key', 'prose', 'hang', 'review'].map((k) => `canary-harm:${k}`),
    ...['promote', 'stop', 'rollback', 'second-start', 'second-promote', 'second-rollback'].map((k) => `canary:${k}`),
    ...['dot-dot', 'slashes', 'at-host', 'query-fragment', 'backslash'].map((k) => `hostile-ticket:${k}`),
    ...['status=429', 'status=429,retry-after=0', 'status=429,retry-after=2', 'status=429,retry-after=3', 'hang', 'late', 'delay', 'reset'].map((k) => `primary:${k}`),
    ...['hang', 'late', 'status=429,retry-after=1'].map((k) => `backup:${k}`),
    'both:status=400',
    'deadline',
    'race-resolution',
    'storm',
    'reopen-retry',
    'budget-burst',
    'late-usage',
  ];
  const missing = wanted.filter((w) => !seen.has(w));
  results.push({ name: 'gateway: the catalogue reaches every trial kind and fault', ok: missing.length === 0, detail: missing.length ? `never drawn: ${missing.join(', ')}` : `${wanted.length} kinds and faults drawn` });
  return results;
}

export function gatewaySelfTestResults(): SelfTestResult[] {
  return [...checkCases(), ...drawCases()];
}

export function runGatewaySelfTest(): number {
  const results = gatewaySelfTestResults();
  for (const result of results) console.log(`${result.ok ? 'pass' : 'FAIL'}  ${result.name}${result.ok ? '' : `: ${result.detail}`}`);
  const failed = results.filter((r) => !r.ok).length;
  console.log(`\nchaos gateway self-test: ${results.length - failed} of ${results.length} passed`);
  return failed ? 1 : 0;
}
