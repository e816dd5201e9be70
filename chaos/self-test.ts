/**
 * Shows that the suite cannot pass vacuously: every check fires on a
 * fabricated observation that holds its violation (and stays quiet on a clean
 * one and on the excused cases); the draws are reproducible; and the
 * catalogue's draws reach every behaviour of SIM.md and every process fault.
 */
import type { Exchange } from './api-client';
import { canonical, checkTrial, VIOLATION_KINDS, type ViolationKind } from './checks';
import { describeProvider, describeSink, drawPlan } from './faults';
import type { Observation } from './observe';

export interface SelfTestResult {
  name: string;
  ok: boolean;
  detail: string;
}

const JOB = '00000000-0000-4000-8000-000000000001';
const OTHER = '00000000-0000-4000-8000-000000000002';
const A1 = '00000000-0000-4000-8000-0000000000a1';
const A2 = '00000000-0000-4000-8000-0000000000a2';
const KEY = 'chaos-self-test';

function exchange(label: string, status: number, body?: unknown, replayed = false, at = 1_000): Exchange {
  return { label, method: label === 'poll' ? 'GET' : 'POST', path: '/v1/jobs', startedAt: at, endedAt: at + 10, status, replayed, body };
}

/** A trial that went right: one job, one winner, one message, answers equal to the stored result. */
export function cleanObservation(): Observation {
  const result = { reply: 'sim-primary: Thanks', escalate: false, messageId: 'msg_1' };
  const view = { id: JOB, status: 'succeeded', workflowId: 'wf', result, attempts: [], effects: [] };
  return {
    idempotencyKey: KEY,
    maxAttempts: 3,
    exchanges: [
      exchange('submit', 202, { ...view, status: 'running', result: undefined }),
      exchange('submit', 200, view, true),
      exchange('conflict', 409, { title: 'Idempotency-Key reused' }),
      exchange('poll', 500, { title: 'Internal Server Error' }, false, 5_000),
      exchange('replay', 200, view, true),
    ],
    windows: [{ what: 'postgres', from: 4_000, to: 6_000 }],
    jobs: [{ id: JOB, idempotencyKey: KEY, status: 'succeeded', result, error: null, completedBy: A1, terminalAt: 2_000, workflowId: 'wf', deadlineAt: null }],
    attempts: [
      { id: A2, jobId: JOB, seq: 1, provider: 'sim-primary', status: 'failed', errorClass: 'bad_request', resolved: false, atProvider: 'absent', startedAt: 1_010 },
      { id: A1, jobId: JOB, seq: 2, provider: 'sim-backup', status: 'succeeded', errorClass: null, resolved: false, atProvider: 'completed', startedAt: 1_200 },
    ],
    effects: [{ name: 'message.send', key: 'k', status: 'succeeded', receipt: { messageId: 'msg_1' }, resolved: false }],
    settlements: [{ jobId: JOB, jobStatus: 'succeeded', providerCost: '0.0003875', billable: '0.0003875', attempts: 2 }],
    deliveries: [{ messageId: 'msg_1', idempotencyKey: 'k' }],
    workflow: 'COMPLETED',
    conflictSent: true,
    crashes: [],
    expectSuccess: true,
  };
}

type Mutation = (obs: Observation) => void;

const job0 = (obs: Observation) => obs.jobs[0]!;
/** The job's bill as a job ended with another status has it: nothing billable unless it succeeded. */
const settledAs = (obs: Observation, status: string): void => {
  Object.assign(obs.settlements[0]!, { jobStatus: status, billable: status === 'succeeded' ? obs.settlements[0]!.billable : '0' });
};
/** The job as one failed at its deadline (3 s after its attempts opened) shows it. */
const failedAtDeadline: Mutation = (obs) => {
  obs.expectSuccess = false;
  obs.requestDeadline = 4_500;
  Object.assign(job0(obs), { status: 'failed', result: null, error: { type: 'deadline_exceeded' }, completedBy: null, deadlineAt: 4_500, terminalAt: 4_600 });
  settledAs(obs, 'failed');
  Object.assign(obs.attempts[1]!, { status: 'failed', errorClass: 'not_executed', atProvider: 'absent' });
  obs.deliveries = [];
  obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay' && e.label !== 'submit');
  obs.exchanges.push(exchange('replay', 200, { id: JOB, status: 'failed', error: { type: 'deadline_exceeded' }, attempts: [] }, true, 5_000));
};
const notTerminal = (status: string): Mutation => (obs) => {
  Object.assign(job0(obs), { status, result: null, completedBy: null, terminalAt: null });
  obs.settlements = [];
  obs.deliveries = [];
  obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay' && e.label !== 'submit');
};

/** For each kind, fabricated observations that hold that violation. */
const VIOLATING: Record<ViolationKind, Array<[string, Mutation]>> = {
  'one-job': [
    ['a second job for the intent', (obs) => obs.jobs.push({ ...job0(obs), id: OTHER, idempotencyKey: `${KEY}-2` })],
    ['a 2xx naming another job', (obs) => obs.exchanges.push(exchange('submit', 200, { id: OTHER, status: 'running', attempts: [] }, true))],
  ],
  'conflict-409': [
    ['another body answered 200', (obs) => obs.exchanges.splice(2, 1, exchange('conflict', 200, { id: JOB, status: 'running', attempts: [] }, true))],
    ['another body never answered', (obs) => obs.exchanges.splice(2, 1, exchange('conflict', 0))],
  ],
  'one-winner': [
    ['two succeeded attempts', (obs) => (obs.attempts[0]!.status = 'succeeded')],
    ['completed by a failed attempt', (obs) => (job0(obs).completedBy = A2)],
  ],
  'dup-msg': [['two deliveries', (obs) => obs.deliveries.push({ messageId: 'msg_2', idempotencyKey: 'k' })]],
  'lost-msg': [
    ['a succeeded job without delivery', (obs) => (obs.deliveries = [])],
    ['a delivery with another messageId', (obs) => (obs.deliveries = [{ messageId: 'msg_9', idempotencyKey: 'k' }])],
  ],
  'stray-msg': [
    [
      'a failed job whose message was delivered',
      (obs) => {
        Object.assign(job0(obs), { status: 'failed', result: null, error: { type: 'effect_failed' } });
        obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay' && e.label !== 'submit');
        obs.exchanges.push(exchange('replay', 200, { id: JOB, status: 'failed', error: { type: 'effect_failed' }, attempts: [] }, true));
      },
    ],
  ],
  stuck: [
    ['running, workflow completed', (obs) => { notTerminal('running')(obs); obs.workflow = 'COMPLETED'; }],
    ['awaiting_resolution, no workflow at all', (obs) => { notTerminal('awaiting_resolution')(obs); obs.attempts[1]!.status = 'unknown'; obs.workflow = 'NOT_FOUND'; }],
  ],
  waiting: [
    ['running with an open workflow and nothing to wait for', (obs) => { notTerminal('running')(obs); obs.attempts[1]!.status = 'failed'; obs.workflow = 'RUNNING'; }],
    ['awaiting_resolution without an unknown attempt', (obs) => { notTerminal('awaiting_resolution')(obs); obs.attempts[1]!.status = 'failed'; obs.workflow = 'RUNNING'; }],
  ],
  unsettled: [
    ['an unknown attempt still waiting', (obs) => { notTerminal('awaiting_resolution')(obs); obs.attempts[1]!.status = 'unknown'; obs.workflow = 'RUNNING'; }],
    ['an effect still in review', (obs) => { notTerminal('running')(obs); obs.effects[0]!.status = 'needs_review'; obs.workflow = 'RUNNING'; }],
  ],
  '5xx': [
    ['a 500 outside every down window', (obs) => obs.exchanges.push(exchange('poll', 500, { title: 'Internal Server Error' }, false, 9_000))],
    ['a 503 from the submit', (obs) => obs.exchanges.push(exchange('submit', 503, { title: 'Temporarily unavailable' }, false, 100))],
  ],
  replay: [
    ['a replay with another result', (obs) => obs.exchanges.push(exchange('replay', 200, { id: JOB, status: 'succeeded', result: { reply: 'other', escalate: false, messageId: 'msg_1' }, attempts: [] }, true))],
    ['a replay without Idempotent-Replayed', (obs) => obs.exchanges.push(exchange('replay', 200, (obs.exchanges[1]!.body as object), false))],
    ['a terminal answer with another status', (obs) => obs.exchanges.push(exchange('poll', 200, { id: JOB, status: 'failed', error: { type: 'x' }, attempts: [] }))],
    ['no replay made', (obs) => (obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay'))],
  ],
  attempts: [['four attempts with a maximum of three', (obs) => obs.attempts.unshift(
    { id: 'x1', jobId: JOB, seq: 0, provider: 'sim-primary', status: 'failed', errorClass: 'not_sent', resolved: false, atProvider: 'absent', startedAt: 1_005 },
    { id: 'x2', jobId: JOB, seq: -1, provider: 'sim-primary', status: 'failed', errorClass: 'not_sent', resolved: false, atProvider: 'absent', startedAt: 1_006 },
  )]],
  outcome: [
    [
      'a good job failed before its effect was claimed',
      (obs) => {
        Object.assign(job0(obs), { status: 'failed', result: null, error: { type: 'effect_failed', detail: 'message.send could not be claimed' } });
        obs.effects = [];
        obs.deliveries = [];
        obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay' && e.label !== 'submit');
        obs.exchanges.push(exchange('replay', 200, { id: JOB, status: 'failed', error: { type: 'effect_failed', detail: 'message.send could not be claimed' }, attempts: [] }, true));
      },
    ],
    [
      'a job failed after its attempt won, no effect failed, though the plan had a cause',
      (obs) => {
        obs.expectSuccess = false;
        Object.assign(job0(obs), { status: 'failed', result: null, error: { type: 'effect_failed' } });
        obs.effects = [];
        obs.deliveries = [];
        obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay' && e.label !== 'submit');
        obs.exchanges.push(exchange('replay', 200, { id: JOB, status: 'failed', error: { type: 'effect_failed' }, attempts: [] }, true));
      },
    ],
  ],
  phantom: [
    ['a not_sent attempt the provider executed', (obs) => Object.assign(obs.attempts[0]!, { errorClass: 'not_sent', atProvider: 'completed' })],
    ['a not_executed attempt the provider is executing', (obs) => Object.assign(obs.attempts[0]!, { errorClass: 'not_executed', atProvider: 'executing' })],
  ],
  'bad-input': [
    ['a NUL in the body answered 500', (obs) => obs.exchanges.push({ ...exchange('bad-input', 500, { title: 'Internal error' }), path: '/v1/jobs' })],
    ['a lone surrogate answered 202', (obs) => obs.exchanges.push({ ...exchange('bad-input', 202, { id: OTHER, status: 'accepted', attempts: [] }), path: '/v1/jobs' })],
  ],
  'one-bill': [
    ['a succeeded job without a settlement', (obs) => (obs.settlements = [])],
    ['a settlement of another status', (obs) => (obs.settlements[0]!.jobStatus = 'failed')],
    ['a settlement missing an attempt', (obs) => (obs.settlements[0]!.attempts = 1)],
    ['an open job with a settlement', (obs) => { notTerminal('running')(obs); obs.workflow = 'RUNNING'; obs.settlements = [{ jobId: JOB, jobStatus: 'running', providerCost: '0', billable: '0', attempts: 2 }]; }],
    ['a failed job billed', (obs) => {
      Object.assign(job0(obs), { status: 'failed', result: null, error: { type: 'attempts_exhausted' }, completedBy: null });
      obs.settlements[0]!.jobStatus = 'failed'; // its billable left as the winner's
    }],
    ['billed more than its attempts cost', (obs) => (obs.settlements[0]!.billable = '1')],
  ],
  deadline: [
    ['a stored deadline other than the one sent', (obs) => { obs.requestDeadline = 10_000; job0(obs).deadlineAt = 20_000; }],
    ['a deadline sent and none stored', (obs) => { obs.requestDeadline = 10_000; }],
    ['an attempt opened with less than the minimum left', (obs) => { obs.requestDeadline = 2_000; job0(obs).deadlineAt = 2_000; }],
    ['deadline_exceeded with an attempt still unknown', (obs) => { failedAtDeadline(obs); obs.attempts[1]!.status = 'unknown'; }],
    ['deadline_exceeded long before the deadline', (obs) => { failedAtDeadline(obs); job0(obs).terminalAt = 2_000; Object.assign(obs, { requestDeadline: 9_000 }); job0(obs).deadlineAt = 9_000; }],
  ],
  crash: [['a worker that died of an unhandled error', (obs) => obs.crashes.push({ name: 'worker-1', at: 1_500, detail: 'worker-1 exited with 1: Error: Connection terminated unexpectedly' })]],
};

/** Cases that look like violations but are not: the checks must stay quiet. */
const EXCUSED: Array<[string, Mutation]> = [
  ['a 500 while PostgreSQL was down (kept in the clean trial)', () => undefined],
  ['a 502 while the API was down', (obs) => { obs.windows.push({ what: 'api', from: 7_000, to: 8_000 }); obs.exchanges.push(exchange('submit', 502, {}, false, 7_500)); }],
  ['a failed job the trial gave a cause (not expected to succeed)', (obs) => {
    obs.expectSuccess = false;
    Object.assign(job0(obs), { status: 'failed', result: null, error: { type: 'attempts_exhausted' }, completedBy: null });
    settledAs(obs, 'failed');
    Object.assign(obs.attempts[1]!, { status: 'failed', errorClass: 'contract_violation' });
    obs.deliveries = [];
    obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay' && e.label !== 'submit');
    obs.exchanges.push(exchange('replay', 200, { id: JOB, status: 'failed', error: { type: 'attempts_exhausted' }, attempts: [] }, true));
  }],
  ['a failed job whose effect an operator settled as failed', (obs) => {
    Object.assign(job0(obs), { status: 'failed', result: null, error: { type: 'effect_failed' } });
    settledAs(obs, 'failed');
    Object.assign(obs.effects[0]!, { status: 'failed', resolved: true, receipt: null });
    obs.deliveries = [];
    obs.exchanges = obs.exchanges.filter((e) => e.label !== 'replay' && e.label !== 'submit');
    obs.exchanges.push(exchange('replay', 200, { id: JOB, status: 'failed', error: { type: 'effect_failed' }, attempts: [] }, true));
  }],
  ['an off-contract answer (executed, failed for its answer)', (obs) => Object.assign(obs.attempts[0]!, { errorClass: 'contract_violation', atProvider: 'completed' })],
  ['an attempt an operator resolved while the provider still executes it', (obs) => Object.assign(obs.attempts[0]!, { errorClass: 'operator', resolved: true, atProvider: 'executing' })],
  ['bad bytes refused with 400', (obs) => obs.exchanges.push(exchange('bad-input', 400, { title: 'Invalid input' }))],
  ['a job failed at its deadline, every attempt ended', failedAtDeadline],
  ['no job: every submit came after the deadline and was refused for it', (obs) => {
    obs.requestDeadline = 500;
    obs.jobs = [];
    obs.attempts = [];
    obs.effects = [];
    obs.settlements = [];
    obs.deliveries = [];
    obs.exchanges = [exchange('submit', 400, { type: 'https://onceflow.dev/problems/invalid-deadline', title: 'Invalid Request-Deadline' }, false, 1_000), exchange('conflict', 0)];
  }],
  ['a non-terminal answer before the terminal one', (obs) => obs.exchanges.push(exchange('poll', 200, { id: JOB, status: 'awaiting_resolution', attempts: [] }))],
];

function checkCases(): SelfTestResult[] {
  const results: SelfTestResult[] = [];
  const clean = checkTrial(cleanObservation());
  results.push({ name: 'a clean trial has no violation', ok: clean.length === 0, detail: clean.map((v) => `${v.kind}: ${v.detail}`).join('; ') || 'none' });
  for (const [name, mutate] of EXCUSED) {
    const obs = cleanObservation();
    mutate(obs);
    const found = checkTrial(obs);
    results.push({ name: `excused: ${name}`, ok: found.length === 0, detail: found.map((v) => `${v.kind}: ${v.detail}`).join('; ') || 'no violation' });
  }
  for (const kind of Object.keys(VIOLATION_KINDS) as ViolationKind[]) {
    for (const [name, mutate] of VIOLATING[kind]) {
      const obs = cleanObservation();
      mutate(obs);
      const found = checkTrial(obs);
      const hit = found.find((v) => v.kind === kind);
      results.push({ name: `${kind} fires: ${name}`, ok: hit !== undefined, detail: hit?.detail ?? `found only ${found.map((v) => v.kind).join(', ') || 'nothing'}` });
    }
  }
  return results;
}

function drawCases(): SelfTestResult[] {
  const results: SelfTestResult[] = [];
  const same = canonical(drawPlan(7, 13, '')) === canonical(drawPlan(7, 13, ''));
  results.push({ name: 'the same seed and trial draw the same plan', ok: same, detail: same ? 'equal' : 'differ' });
  const plans = Array.from({ length: 3_000 }, (_, i) => drawPlan(1, i + 1, ''));
  const distinct = new Set(plans.slice(0, 50).map((p) => canonical({ ...p, trial: 0, ticketId: '', idempotencyKey: '' }))).size;
  results.push({ name: 'different trials draw different plans', ok: distinct > 40, detail: `${distinct} distinct plans among 50 trials` });
  const seen = new Set<string>();
  for (const plan of plans) {
    seen.add(`provider ${plan.primary.kind === 'status' ? describeProvider(plan.primary) : plan.primary.kind}`);
    seen.add(`sink ${plan.sink.kind === 'status' ? describeSink(plan.sink) : plan.sink.kind}`);
    seen.add(`process ${plan.process.kind}`);
    if (plan.process.kind !== 'none') seen.add(`anchor ${plan.process.anchor}`);
    seen.add(`race ${plan.race.kind}`);
    if (plan.secondWorker) seen.add('second worker');
    if (plan.burst > 1) seen.add('storm');
    if (plan.conflictingMessage) seen.add('conflict');
    if (plan.badInput) seen.add(`bad ${plan.badInput}`);
    if (plan.deadlineAfterMs !== undefined) seen.add('deadline');
  }
  const wanted = [
    ...['ok', 'delay', 'hang', 'late', 'refuse', 'reset', 'extra-key', 'prose', ...[429, 400, 500, 502, 503, 504].map((c) => `status=${c}`)].map((b) => `provider ${b}`),
    ...['ok', 'reset', 'delay', 'reset-once', ...[429, 400, 500, 502, 503].map((c) => `status=${c}`)].map((b) => `sink ${b}`),
    ...['none', 'kill-worker', 'kill-api', 'restart-pg', 'pause-worker'].map((k) => `process ${k}`),
    ...['submit', 'attempt-running', 'attempt-won', 'effect-claimed'].map((a) => `anchor ${a}`),
    ...['none', 'race-late', 'race-reconcile-paused'].map((k) => `race ${k}`),
    ...['nul-in-body', 'lone-surrogate-in-body', 'nul-in-query', 'nul-in-path'].map((b) => `bad ${b}`),
    'second worker',
    'storm',
    'conflict',
    'deadline',
  ];
  const missing = wanted.filter((w) => !seen.has(w));
  results.push({ name: 'the catalogue reaches every behaviour and fault', ok: missing.length === 0, detail: missing.length ? `never drawn: ${missing.join(', ')}` : `${wanted.length} behaviours and faults drawn` });
  return results;
}

export function selfTestResults(): SelfTestResult[] {
  return [...checkCases(), ...drawCases()];
}

export function runSelfTest(): number {
  const results = selfTestResults();
  for (const result of results) console.log(`${result.ok ? 'pass' : 'FAIL'}  ${result.name}${result.ok ? '' : `: ${result.detail}`}`);
  const failed = results.filter((r) => !r.ok).length;
  console.log(`\nchaos self-test: ${results.length - failed} of ${results.length} passed`);
  return failed ? 1 : 0;
}
