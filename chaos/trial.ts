/**
 * One trial: submit the intent (a storm of identical POSTs, maybe the same key
 * with another body), strike the drawn process fault and operator race
 * meanwhile, let the operator drive the job to an end, then observe from the
 * outside, replay, and check.
 */
import { ApiClient, type Exchange } from './api-client';
import { checkTrial, type Violation } from './checks';
import { sleep, type RunContext, type TrialEvent, type TrialScope } from './context';
import { expectsSuccess, faultKinds, type TrialPlan } from './faults';
import { sendBadInput } from './bad-input';
import { saveHistory } from './histories';
import { isJobView } from './job-view';
import { observe, type Observation } from './observe';
import { settle, type SettleResult } from './operator';
import { race, type RaceResult } from './operator-race';
import { strike, type StrikeResult } from './process-faults';
import { SETTINGS } from './settings';

export interface TrialRecord {
  plan: TrialPlan;
  kinds: string[];
  /** Per fault kind: did the fault really act on the job (false: counted as not run). */
  ran: Record<string, boolean>;
  notRun: Record<string, string>;
  events: TrialEvent[];
  settle?: SettleResult;
  observation?: Observation;
  violations: Violation[];
  durationMs: number;
  /** The suite itself failed (not a finding about the product). */
  error?: string;
}

export interface TrialOptions {
  /** How long a trial may take before its job counts as unsettled. */
  settleMs: number;
  /** Only for the live self-test: break an invariant on purpose, to see the checks catch it. */
  sabotage?: Sabotage;
}

export interface Sabotage {
  /** Runs beside the submits and faults. */
  during?(scope: TrialScope): Promise<void>;
  /** Runs after the job settled, before it is observed. */
  after?(scope: TrialScope, jobId: string): Promise<void>;
  /** False: nobody resolves what waits. */
  operator?: boolean;
}

const SUBMIT_TIMEOUT_MS = 20_000;

function submitBody(plan: TrialPlan, message: string) {
  return { operation: 'support.reply', input: { ticketId: plan.ticketId, customerMessage: message, channel: plan.channel } };
}

/** Runs one trial; never throws (a failure of the suite itself is recorded as `error`). */
export async function runTrial(ctx: RunContext, plan: TrialPlan, options: TrialOptions): Promise<TrialRecord> {
  const startedAt = Date.now();
  const kinds = faultKinds(plan);
  const record: TrialRecord = { plan, kinds, ran: {}, notRun: {}, events: [], violations: [], durationMs: 0 };
  const client = new ApiClient(ctx.stack.apiUrl);
  const note = (what: string): number => {
    const at = Date.now();
    record.events.push({ at, what });
    return at;
  };
  try {
    await execute(ctx, plan, options, record, client, note);
  } catch (err) {
    record.error = (err as Error).stack ?? String(err);
  } finally {
    // Whatever happened, the next trial starts with worker-1 and the API up, and no second worker.
    await ensureBaseline(ctx).catch((err: unknown) => {
      record.error ??= `could not restore the stack: ${(err as Error).message}`;
    });
  }
  record.durationMs = Date.now() - startedAt;
  return record;
}

async function ensureBaseline(ctx: RunContext): Promise<void> {
  const { stack } = ctx;
  if (stack.providers.paused) stack.providers.resume();
  if (stack.workers[1].running) await stack.workers[1].stop();
  if (!stack.workers[0].running) await stack.workers[0].start();
  if (!stack.api.running) await stack.api.start();
}

async function execute(ctx: RunContext, plan: TrialPlan, options: TrialOptions, record: TrialRecord, client: ApiClient, note: (what: string) => number): Promise<void> {
  const { stack } = ctx;
  const startedAt = Date.now();
  if (plan.secondWorker) {
    await stack.workers[1].start();
    note('worker-2 up');
  }
  const deadline = Date.now() + options.settleMs;
  let announce: (id: string | undefined) => void = () => undefined;
  const jobId = new Promise<string | undefined>((resolve) => (announce = resolve));
  const submittedAt = note(`submit ×${plan.burst}`);
  // One deadline for the intent, as a client keeps it: every retry and the final replay send the same instant.
  const requestDeadline = plan.deadlineAfterMs === undefined ? undefined : Date.now() + plan.deadlineAfterMs;
  const scope: TrialScope = { ctx, client, events: record.events, note, deadline, jobId, submittedAt };

  const submit = (waitSeconds: number, label: string, message: string): Promise<Exchange> =>
    client
      .untilAnswered('POST', '/v1/jobs', {
        label,
        token: stack.apiKey,
        body: submitBody(plan, message),
        headers: {
          'idempotency-key': plan.idempotencyKey,
          ...(waitSeconds ? { prefer: `wait=${waitSeconds}` } : {}),
          ...(requestDeadline !== undefined ? { 'request-deadline': new Date(requestDeadline).toISOString() } : {}),
        },
        deadline,
        timeoutMs: SUBMIT_TIMEOUT_MS,
      })
      .then((exchange) => {
        if ((exchange.status === 200 || exchange.status === 202) && isJobView(exchange.body) && label === 'submit') announce(exchange.body.id);
        return exchange;
      });

  let submitsDone = false;
  const submits = Promise.all(plan.waitSeconds.map((wait) => submit(wait, 'submit', plan.customerMessage))).then(() => {
    submitsDone = true;
    announce(undefined);
  });
  // A POST with Prefer: wait answers late; the job is found by its scope as soon as it exists.
  const discover = (async () => {
    const query = `/v1/jobs?operation=support.reply&idempotencyKey=${encodeURIComponent(plan.idempotencyKey)}`;
    while (!submitsDone && Date.now() < deadline) {
      const found = await client.request('GET', query, { label: 'discover', token: stack.apiKey, timeoutMs: 5_000 });
      if (found.status === 200 && isJobView(found.body)) return announce(found.body.id);
      await sleep(25);
    }
  })();
  const conflict = plan.conflictingMessage
    ? jobId.then((id) => (id ? submit(0, 'conflict', plan.conflictingMessage!) : undefined))
    : Promise.resolve(undefined);
  // The operator works from the start, as one on call would; its patience leaves the drawn races their turn.
  let busy = 6;
  const done = <T>(task: Promise<T>): Promise<T> => task.finally(() => busy--);
  const [, strikeResult, raceResult, , , , , settled] = await Promise.all([
    done(submits),
    done(strike(scope, plan.process)),
    done(race(scope, plan.race)),
    done(conflict),
    done(options.sabotage?.during?.(scope) ?? Promise.resolve()),
    done(sendBadInput(scope, plan)),
    discover,
    // Gives up on a job without a workflow only once no client or fault can still start or move one.
    settle(scope, options.sabotage?.operator === false ? undefined : plan.operatorOutcome, () => busy === 0),
  ]);

  const id = await jobId;
  record.settle = settled;
  note(`settled: ${record.settle.endedBy}`);
  if (plan.secondWorker) {
    await stack.workers[1].stop();
    note('worker-2 stopped');
  }

  // A process that was paused may still act once it runs again (a late send): give it time to show before looking.
  await sleep(plan.process.kind === 'pause-worker' ? 3_000 : 500);
  if (id && options.sabotage?.after) await options.sabotage.after(scope, id);
  let observation = await observe({
    db: stack.db,
    temporal: stack.temporal,
    downstreamUrl: stack.downstreamUrl,
    providerUrls: stack.providerUrls,
    ticketId: plan.ticketId,
    idempotencyKey: plan.idempotencyKey,
    maxAttempts: SETTINGS.maxAttempts,
    exchanges: client.exchanges,
    windows: ctx.windows,
    ...(record.settle.view ? { view: record.settle.view } : {}),
    conflictSent: plan.conflictingMessage !== undefined,
    crashes: stack.crashes.filter((crash) => crash.at >= startedAt),
    expectSuccess: expectsSuccess(plan),
    ...(requestDeadline !== undefined ? { requestDeadline } : {}),
  });
  const job = observation.jobs.find((j) => j.idempotencyKey === plan.idempotencyKey);
  if (id && job?.terminalAt) {
    // Only a terminal job is replayed: a replay starts (or attaches) the workflow of one that is not, and would hide a stuck job.
    await submit(0, 'replay', plan.customerMessage);
    observation = { ...observation, exchanges: client.exchanges };
  }
  record.observation = observation;
  if (ctx.historiesDir && job) {
    const problem = await saveHistory(stack.temporal, ctx.historiesDir, plan.trial, job.workflowId);
    if (problem) note(problem);
  }
  record.violations = checkTrial(observation);
  judgeRan(record, observation, strikeResult, raceResult);
}

/** Per fault kind, whether it acted on the job; a fault that could not is counted apart, never as a pass. */
function judgeRan(record: TrialRecord, obs: Observation, struck: StrikeResult, raced: RaceResult): void {
  const job = obs.jobs.find((j) => j.idempotencyKey === record.plan.idempotencyKey);
  const openAt = (at: number | undefined): boolean => at !== undefined && job !== undefined && (job.terminalAt === null || job.terminalAt > at);
  const twoxx = obs.exchanges.filter((e) => e.label === 'submit' && (e.status === 200 || e.status === 202)).length;
  const workerTwoUp = record.events.find((e) => e.what === 'worker-2 up')?.at;
  for (const kind of record.kinds) {
    let ran: boolean;
    let why = '';
    if (kind.startsWith('provider:')) [ran, why] = [obs.attempts.some((a) => a.provider === 'sim-primary'), 'no attempt reached sim-primary'];
    else if (kind.startsWith('backup:')) [ran, why] = [obs.attempts.some((a) => a.provider === 'sim-backup'), 'no attempt reached sim-backup'];
    else if (kind.startsWith('sink:')) [ran, why] = [obs.effects.length > 0, 'the effect was never claimed'];
    else if (kind === 'storm') [ran, why] = [twoxx >= 2, 'fewer than two submits were answered 2xx'];
    else if (kind === 'conflict') [ran, why] = [obs.exchanges.some((e) => e.label === 'conflict' && e.status !== 0), 'the conflicting submit got no answer'];
    else if (kind === 'second-worker') [ran, why] = [openAt(workerTwoUp), 'the job ended before worker-2 was up'];
    else if (kind.startsWith('bad-input:')) [ran, why] = [obs.exchanges.some((e) => e.label === 'bad-input' && e.status !== 0), 'the bad request got no answer'];
    else if (kind.startsWith('race-')) [ran, why] = [raced.resolution?.status === 200 && !raced.notRun, raced.notRun ?? 'no resolution'];
    else [ran, why] = [openAt(struck.struckAt), struck.notRun ?? 'the job was terminal when it struck'];
    record.ran[kind] = ran;
    if (!ran) record.notRun[kind] = why;
  }
}
