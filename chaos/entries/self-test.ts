/**
 * The entries round cannot pass vacuously either: each of its checks fires
 * on a fabricated observation that holds its violation, stays quiet on a
 * clean one and on the excused cases; its draws are reproducible and reach
 * every fault of its catalogue.
 */
import { fabricatedAttempt, fabricatedJob } from '../gateway/fabricated';
import type { GwAttempt, GwJob } from '../gateway/observation';
import type { SelfTestResult } from '../self-test';
import { checkEntriesTrial, ENTRIES_VIOLATION_KINDS, type EntriesViolationKind } from './checks';
import { drawEntriesPlan, entriesFaultKinds } from './draw';
import type { EntriesObservation } from './observation';
import type { RawExchange, SdkCall } from './sdk-app';

const J1 = '00000000-0000-4000-8000-0000000000e1';
const J2 = '00000000-0000-4000-8000-0000000000e2';
const J3 = '00000000-0000-4000-8000-0000000000e3';
const OPENAI_BODY = `{"id":"chatcmpl-${J1}","object":"chat.completion","choices":[{"message":{"content":"Hello there."}}]}`;

const job = (id: string, alias: string, key: string, fields: Partial<GwJob> = {}): GwJob => fabricatedJob(id, alias, key, { ticketId: '', result: { content: 'Hello there.' }, ...fields });
const attempt = (id: string, jobId: string, seq: number, provider: string, fields: Partial<GwAttempt> = {}): GwAttempt => fabricatedAttempt(id, jobId, seq, provider, { cost: '0.0001', inputTokens: 12, outputTokens: 3, ...fields });

const raw = (label: string, key: string, status: number, fields: Partial<RawExchange> = {}): RawExchange => ({ label, key, startedAt: 1_000, endedAt: 1_010, status, cut: false, replayed: false, ...fields });

const call = (label: string, key: string, protocol: SdkCall['protocol'], fields: Partial<SdkCall> = {}): SdkCall => ({ label, key, protocol, stream: false, conflicting: false, startedAt: 1_000, endedAt: 1_500, ...fields });

/**
 * A trial that went right: k0 through the OpenAI entry, its first answer cut
 * and retried, two clients at once, then another message on its key; k1
 * streamed through the Anthropic entry, its primary hung and resolved, the
 * backup answered; k2's job failed, and its app was told so.
 */
export function cleanEntriesObservation(): EntriesObservation {
  const answer = (jobId: string, prefix: string) => ({ id: `${prefix}${jobId}`, text: 'Hello there.', inputTokens: 12, outputTokens: 3 });
  return {
    principal: 'en-self-test',
    intents: [
      { label: 'i0', key: 'k0', alias: 'ch.strict', protocol: 'openai', clean: true },
      { label: 'i1', key: 'k1', alias: 'ch.strict', protocol: 'anthropic', clean: false },
      { label: 'i2', key: 'k2', alias: 'ch.hedged', protocol: 'openai', clean: false },
    ],
    exchanges: [
      raw('submit:k0#0', 'k0', 200, { jobId: J1, cut: true }),
      raw('submit:k0#0', 'k0', 200, { jobId: J1, replayed: true, body: OPENAI_BODY }),
      raw('submit:k0#1', 'k0', 200, { jobId: J1, body: OPENAI_BODY }),
      raw('conflict:k0', 'k0', 409, { body: '{"error":{"type":"conflict_error"}}' }),
      raw('replay:k0', 'k0', 200, { jobId: J1, replayed: true, body: OPENAI_BODY }),
      raw('submit:k1#0', 'k1', 409, { jobId: J2 }),
      raw('submit:k1#0', 'k1', 200, { jobId: J2, replayed: true }),
      raw('replay:k1', 'k1', 200, { jobId: J2, replayed: true, body: `{"id":"msg_${J2}"}` }),
      raw('submit:k2#0', 'k2', 502, { jobId: J3 }),
      raw('replay:k2', 'k2', 502, { jobId: J3, replayed: true }),
      // While the API was down (the window below): a connection refused.
      raw('submit:k2#0', 'k2', 0, { startedAt: 5_000, endedAt: 5_001 }),
    ],
    calls: [
      call('submit:k0#0', 'k0', 'openai', { answer: answer(J1, 'chatcmpl-') }),
      call('submit:k0#1', 'k0', 'openai', { answer: answer(J1, 'chatcmpl-') }),
      call('conflict:k0', 'k0', 'openai', { conflicting: true, error: { name: 'ConflictError', status: 409, message: '409 Idempotency-Key already used for a different request' } }),
      call('replay:k0', 'k0', 'openai', { answer: answer(J1, 'chatcmpl-') }),
      call('submit:k1#0', 'k1', 'anthropic', { stream: true, answer: answer(J2, 'msg_') }),
      call('replay:k1', 'k1', 'anthropic', { answer: answer(J2, 'msg_') }),
      call('submit:k2#0', 'k2', 'openai', { error: { name: 'InternalServerError', status: 502, message: '502 job failed' } }),
      call('replay:k2', 'k2', 'openai', { error: { name: 'InternalServerError', status: 502, message: '502 job failed' } }),
    ],
    windows: [{ what: 'api', from: 4_900, to: 5_200 }],
    crashes: [],
    workerKilled: false,
    jobs: [
      job(J1, 'ch.strict', 'k0', { completedBy: 'a1' }),
      job(J2, 'ch.strict', 'k1', { completedBy: 'b2' }),
      job(J3, 'ch.hedged', 'k2', { status: 'failed', result: null, error: { type: 'attempts_exhausted' } }),
    ],
    attempts: [
      attempt('a1', J1, 1, 'sim-primary'),
      attempt('b1', J2, 1, 'sim-primary', { status: 'failed', resolved: true, usageReported: false, cost: null, inputTokens: 0, outputTokens: 0 }),
      attempt('b2', J2, 2, 'sim-backup'),
      attempt('c1', J3, 1, 'sim-primary', { status: 'failed', errorClass: 'server_error', usageReported: false, cost: null, inputTokens: 0, outputTokens: 0 }),
      attempt('c2', J3, 2, 'sim-backup', { status: 'failed', errorClass: 'server_error', usageReported: false, cost: null, inputTokens: 0, outputTokens: 0 }),
    ],
    effects: [],
    settlements: [
      { jobId: J1, run: 1, jobStatus: 'succeeded', providerCost: '0.0001', billable: '0.0001', inputTokens: 12, outputTokens: 3, attempts: 1, settledAt: 2_000 },
      { jobId: J2, run: 1, jobStatus: 'succeeded', providerCost: '0.0001', billable: '0.0001', inputTokens: 12, outputTokens: 3, attempts: 2, settledAt: 2_000 },
      { jobId: J3, run: 1, jobStatus: 'failed', providerCost: '0', billable: '0', inputTokens: 0, outputTokens: 0, attempts: 2, settledAt: 2_000 },
    ],
    workflows: {},
    settings: { maxAttempts: 3 },
  };
}

type Mutation = [string, (obs: EntriesObservation) => void];

const at = <T>(items: T[], index: number): T => items[index]!;

const VIOLATING: Record<EntriesViolationKind, Mutation[]> = {
  'one-job': [
    ['a second job for one key', (o) => o.jobs.push(job('00000000-0000-4000-8000-0000000000f1', 'ch.strict', 'k0', { completedBy: 'z1' }))],
    ['an answer naming another job', (o) => (at(o.calls, 1).answer!.id = 'chatcmpl-00000000-0000-4000-8000-0000000000f2')],
    ['an Onceflow-Job-Id header naming another job', (o) => (at(o.exchanges, 2).jobId = J2)],
    ['answers for a key with no job', (o) => (o.jobs = o.jobs.filter((j) => j.id !== J1))],
  ],
  'one-winner': [['two succeeded attempts', (o) => o.attempts.push(attempt('a2', J1, 2, 'sim-backup'))]],
  'one-bill': [['a job with no settlement', (o) => (o.settlements = o.settlements.filter((s) => s.jobId !== J1))]],
  'one-attempt': [['a second attempt for an intent its providers served', (o) => o.attempts.push(attempt('a0', J1, 2, 'sim-primary', { status: 'discarded' }))]],
  answer: [
    ['another text than the stored one', (o) => (at(o.calls, 0).answer!.text = 'Hello again.')],
    ['a streamed text that differs', (o) => (at(o.calls, 4).answer!.text = 'Hello')],
    ['usage other than the winner metered', (o) => (at(o.calls, 1).answer!.outputTokens = 30)],
    ['an answer for a failed job', (o) => (at(o.calls, 6).answer = { id: `chatcmpl-${J3}`, text: 'x' })],
  ],
  replay: [
    ['a replay not marked replayed', (o) => (at(o.exchanges, 4).replayed = false)],
    ['a replay with other bytes', (o) => (at(o.exchanges, 4).body = OPENAI_BODY.replace('Hello there.', 'Hello there!'))],
    ['a failed job answered on replay', (o) => (at(o.calls, 7).error = undefined)],
    ['the replay of a succeeded job refused', (o) => (at(o.calls, 3).answer = undefined)],
  ],
  conflict: [
    ['another message answered', (o) => (at(o.calls, 2).error = undefined) || (at(o.calls, 2).answer = { id: `chatcmpl-${J1}`, text: 'Hello there.' })],
    ['another message taken for a retry of the running job', (o) => (at(o.calls, 2).error!.message = '409 job still running')],
    ['another message refused with a 400', (o) => (at(o.calls, 2).error = { name: 'BadRequestError', status: 400, message: 'bad' })],
  ],
  unanswered: [
    ['a client left with a network error though the job succeeded', (o) => (at(o.calls, 1).answer = undefined) || (at(o.calls, 1).error = { name: 'APIConnectionError', message: 'Connection error.' })],
    ['a client left with "still running" after the job ended', (o) => (at(o.calls, 6).error = { name: 'ConflictError', status: 409, message: '409 job still running' })],
  ],
  refused: [['a 400 to a retry', (o) => o.exchanges.push(raw('submit:k0#1', 'k0', 400, { body: '{"error":{}}' }))]],
  '5xx': [
    ['a 500 while the API was up', (o) => o.exchanges.push(raw('submit:k0#1', 'k0', 500, { startedAt: 3_000, endedAt: 3_010 }))],
    ['a 502 for a job that succeeded', (o) => o.exchanges.push(raw('submit:k0#1', 'k0', 502, { jobId: J1, startedAt: 3_000, endedAt: 3_010 }))],
  ],
  stuck: [['a running job without a workflow', (o) => (at(o.jobs, 0).status = 'running') && ((at(o.jobs, 0).terminalAt = null), (o.settlements = o.settlements.slice(1)), (o.workflows[J1] = 'COMPLETED'))]],
  waiting: [['a running job waiting for nothing', (o) => (at(o.jobs, 0).status = 'running') && ((at(o.jobs, 0).terminalAt = null), (o.settlements = o.settlements.slice(1)), (o.workflows[J1] = 'RUNNING'))]],
  unsettled: [
    ['a job still blocked on an unknown attempt', (o) => {
      Object.assign(at(o.jobs, 0), { status: 'running', terminalAt: null });
      at(o.attempts, 0).status = 'unknown';
      o.settlements = o.settlements.slice(1);
      o.workflows[J1] = 'RUNNING';
    }],
  ],
  attempts: [['more attempts than the cap', (o) => o.attempts.push(...[3, 4].map((seq) => attempt(`c${seq}`, J3, seq, 'sim-backup', { status: 'failed', usageReported: false, cost: null })))]],
  crash: [['a process that died by itself', (o) => o.crashes.push({ name: 'worker-1', at: 1_500, detail: 'worker-1 exited with 1' })]],
};

const EXCUSED: Mutation[] = [
  ['a second attempt after a worker was killed', (o) => {
    o.workerKilled = true;
    at(o.attempts, 0).status = 'failed';
    o.attempts.push(attempt('a2', J1, 2, 'sim-primary'));
    at(o.jobs, 0).completedBy = 'a2';
    at(o.settlements, 0).attempts = 2;
  }],
  ['a 5xx while the API was down', (o) => o.exchanges.push(raw('submit:k0#1', 'k0', 503, { startedAt: 5_000, endedAt: 5_010 }))],
  ['a conflicting call that met the API down', (o) => (at(o.calls, 2).error = { name: 'APIConnectionError', message: 'Connection error.' }) && ((at(o.calls, 2).startedAt = 5_000), (at(o.calls, 2).endedAt = 5_100))],
  ["a running job's 409 to the SDK, retried", (o) => o.exchanges.push(raw('submit:k0#0', 'k0', 409, { jobId: J1 }))],
  ['an answer without usage (a stream that asked for none)', (o) => (delete at(o.calls, 4).answer!.inputTokens, delete at(o.calls, 4).answer!.outputTokens)],
];

function checkCases(): SelfTestResult[] {
  const results: SelfTestResult[] = [];
  const describe = (obs: EntriesObservation) => checkEntriesTrial(obs).map((v) => `${v.kind}: ${v.detail}`).join('; ');
  const clean = checkEntriesTrial(cleanEntriesObservation());
  results.push({ name: 'entries: a clean trial has no violation', ok: clean.length === 0, detail: describe(cleanEntriesObservation()) });
  for (const [name, mutate] of EXCUSED) {
    const obs = cleanEntriesObservation();
    mutate(obs);
    results.push({ name: `entries excused: ${name}`, ok: checkEntriesTrial(obs).length === 0, detail: describe(obs) });
  }
  for (const kind of Object.keys(ENTRIES_VIOLATION_KINDS) as EntriesViolationKind[]) {
    const cases = VIOLATING[kind];
    if (!cases.length) results.push({ name: `entries: ${kind} has a fabricated violation`, ok: false, detail: 'none given' });
    for (const [name, mutate] of cases) {
      const obs = cleanEntriesObservation();
      mutate(obs);
      const found = checkEntriesTrial(obs);
      results.push({ name: `entries: ${kind} fires on ${name}`, ok: found.some((v) => v.kind === kind), detail: found.map((v) => `${v.kind}: ${v.detail}`).join('; ') || 'nothing fired' });
    }
  }
  return results;
}

function drawCases(): SelfTestResult[] {
  const results: SelfTestResult[] = [];
  const same = JSON.stringify(drawEntriesPlan(7, 12, '')) === JSON.stringify(drawEntriesPlan(7, 12, ''));
  results.push({ name: 'entries: the same seed and trial draw the same plan', ok: same, detail: same ? 'equal' : 'plans differ' });
  const repeat = drawEntriesPlan(7, 12, 'r1');
  const base = drawEntriesPlan(7, 12, '');
  const sameDraws = JSON.stringify(repeat.intents.map((i) => [i.directives, i.burst, i.cuts, i.protocol])) === JSON.stringify(base.intents.map((i) => [i.directives, i.burst, i.cuts, i.protocol]));
  const renamed = repeat.principal !== base.principal && repeat.intents.every((intent, i) => intent.key !== base.intents[i]!.key);
  results.push({ name: 'entries: a repeat tag changes names, not draws', ok: sameDraws && renamed, detail: `${repeat.principal} vs ${base.principal}` });
  const seen = new Set<string>();
  for (let trial = 1; trial <= 500; trial++) for (const kind of entriesFaultKinds(drawEntriesPlan(1, trial, ''))) seen.add(kind);
  const wanted = [
    ...['openai', 'openai stream', 'anthropic', 'anthropic stream'].map((k) => `entry:${k}`),
    ...['hang', 'late', 'delay', 'reset', 'status=429', 'status=500', 'status=502', 'status=503', 'status=504'].map((k) => `primary:${k}`),
    ...['hang', 'status=500'].map((k) => `backup:${k}`),
    'sdk-storm',
    'answer-cut',
    'conflict',
    'kill-api',
    'kill-worker',
  ];
  const missing = wanted.filter((w) => !seen.has(w));
  results.push({ name: 'entries: the catalogue reaches every fault', ok: missing.length === 0, detail: missing.length ? `never drawn: ${missing.join(', ')}` : `${wanted.length} faults drawn` });
  return results;
}

export function entriesSelfTestResults(): SelfTestResult[] {
  return [...checkCases(), ...drawCases()];
}

export function runEntriesSelfTest(): number {
  const results = entriesSelfTestResults();
  for (const result of results) console.log(`${result.ok ? 'pass' : 'FAIL'}  ${result.name}${result.ok ? '' : `: ${result.detail}`}`);
  const failed = results.filter((r) => !r.ok).length;
  console.log(`\nchaos entries self-test: ${results.length - failed} of ${results.length} passed`);
  return failed ? 1 : 0;
}
