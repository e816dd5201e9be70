/**
 * `npm run chaos -- --trials N --seed S [--concurrency C] [--trial T ...]`:
 * the chaos suite. See --help, and the README's "Chaos" section.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { RunContext } from './context';
import { drawPlan, runsAlone } from './faults';
import { renderReport, trialLine } from './report';
import { schedule } from './scheduler';
import { runLiveSelfTest } from './live-self-test';
import { runSelfTest } from './self-test';
import { runGatewayRound } from './gateway/round';
import { runGatewaySelfTest } from './gateway/self-test';
import { runEntriesRound } from './entries/round';
import { runEntriesSelfTest } from './entries/self-test';
import { startStack, type ChaosStack } from './stack';
import { Supervisor } from './supervisor';
import { runTrial, type TrialRecord } from './trial';

const HELP = `usage: npm run chaos -- [options]

Runs the real stack as separate processes (PostgreSQL, the Temporal dev server,
the simulators, workers, the API) and, per trial, a seeded random draw of
faults: storms of identical POSTs and the same key with another body; SIGKILL
of a worker or the API (restarted after a pause); every provider and sink fault
of SIM.md; an operator resolution racing a late answer or a reconciliation
(with the simulators SIGSTOPped during a lookup); a second worker, a paused
worker; a restart of PostgreSQL. Then it checks from the outside and prints a
table by fault kind. Exit 1 on any violation (or a trial the suite could not
finish), with one reproduction line per failed trial.

options:
  --round R         core (default), gateway or entries. The gateway round runs the stack
                    with an operations file of its own (chaos/gateway/) and
                    draws canary routes promoted, stopped and rolled back while
                    they stop by themselves; hedged read-only jobs with hangs
                    and late answers; 429 storms with Retry-After, with and
                    without deadlines; a declared HTTP effect against a
                    recording downstream that redirects, resets, fails and
                    fails its lookup; principals at their daily budget; failed
                    jobs reopened by the same intent. Checked: usage equals the
                    attempts' costs, budgets, canary stops and routes, the
                    operators' attention lists, one request per effect, secrets
                    on their host, backoff after 429, and the core's that apply.
                    The entries round is an app on the official openai and
                    @anthropic-ai/sdk clients (their retries on) against both
                    entries: bursts of clients on one key, answers cut after
                    Onceflow sent them, provider faults, streamed reads, another
                    message on a used key, the API or the worker killed while
                    the SDKs wait. Checked: one job and, for an intent its
                    providers served, one attempt; every answer the stored one,
                    its usage the winner's; replays byte for byte; the conflict
                    error; no 4xx or 5xx unexplained; and the core's that apply
  --trials N        how many trials (default 30); numbered 1..N
  --from F          number them F..F+N-1 instead (to go on with a seed later)
  --minutes M       start no trial after M minutes; the report covers the
                    trials that ran (a long run that must end on time)
  --seed S          the run's seed, a 32-bit integer (default: random, printed);
                    the same seed draws the same faults for every trial
  --trial T         run only trial T of the seed (repeatable): exactly the draws
                    it had in the full run
  --repeat K        run each selected trial K times (default 1): the draws are
                    the same each time, the timing of the races they set up is
                    not, so a timing-dependent failure may need a few runs
  --concurrency C   trials at once (default 2); trials with process faults,
                    a second worker or paused simulators always run alone
  --settle-ms MS    how long a trial may take before its job counts as
                    unsettled (default 90000)
  --keep            keep the run folder (.data/chaos/run-*) with every log
  --json FILE       write every trial's plan, events, observation and verdict
  --histories DIR   keep each job's workflow history (JSON, for the replay gate)
  --self-test       no stack: show that each check fires on fabricated data,
                    and that the draws are reproducible and cover the catalogue
  --live-self-test  on the real stack: break each invariant on purpose (from
                    outside, or by a ledger write where nothing else can) and
                    show that the check reports it
  -h, --help        this text

The stack's timeouts are short (chaos/settings.ts). DATABASE_URL: use that
server (a fresh database in it, dropped at the end) instead of an embedded
PostgreSQL; PostgreSQL restarts are then counted as not run.`;

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      round: { type: 'string' },
      trials: { type: 'string' },
      from: { type: 'string' },
      minutes: { type: 'string' },
      seed: { type: 'string' },
      trial: { type: 'string', multiple: true },
      concurrency: { type: 'string' },
      repeat: { type: 'string' },
      'settle-ms': { type: 'string' },
      keep: { type: 'boolean' },
      json: { type: 'string' },
      histories: { type: 'string' },
      'self-test': { type: 'boolean' },
      'live-self-test': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  const int = (raw: string | undefined, name: string, fallback: number, min: number): number => {
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) throw new Error(`--${name} must be a whole number ≥ ${min}, not ${raw}`);
    return value;
  };
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int(values.seed, 'seed', 0, -(2 ** 31));
  const trials = int(values.trials, 'trials', 30, 1);
  const only = (values.trial ?? []).map((t) => int(t, 'trial', 1, 1));
  const from = int(values.from, 'from', 1, 1);
  const round = values.round ?? 'core';
  if (round !== 'core' && round !== 'gateway' && round !== 'entries') throw new Error(`--round must be core, gateway or entries, not ${round}`);
  return {
    round: round as 'core' | 'gateway' | 'entries',
    help: values.help ?? false,
    selfTest: values['self-test'] ?? false,
    liveSelfTest: values['live-self-test'] ?? false,
    seed: seed | 0,
    trialNumbers: only.length ? only : Array.from({ length: trials }, (_, i) => from + i),
    minutes: values.minutes === undefined ? undefined : int(values.minutes, 'minutes', 0, 1),
    concurrency: int(values.concurrency, 'concurrency', 2, 1),
    repeat: int(values.repeat, 'repeat', 1, 1),
    settleMs: int(values['settle-ms'], 'settle-ms', 90_000, 5_000),
    keep: values.keep ?? false,
    json: values.json,
    histories: values.histories ? path.resolve(values.histories) : undefined,
  };
}

async function main(): Promise<number> {
  let options;
  try {
    options = parse(process.argv.slice(2));
  } catch (err) {
    console.error(`chaos: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (options.help) {
    console.log(HELP);
    return 0;
  }
  if (options.selfTest) return runSelfTest() | runGatewaySelfTest() | runEntriesSelfTest();
  if (options.liveSelfTest && options.round !== 'core') {
    console.error(`chaos: --live-self-test covers the core round; the ${options.round} round's checks are shown on fabricated data by --self-test`);
    return 2;
  }

  const log = (line: string): void => console.log(`chaos: ${line}`);
  const supervisor = new Supervisor();
  let stack: ChaosStack | undefined;
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping everything this run started`);
    void (stack ? stack.stop() : supervisor.stopAll()).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const started = Date.now();
  if (!options.liveSelfTest) log(`${options.round} round; seed ${options.seed}; ${options.trialNumbers.length === 1 ? `trial ${options.trialNumbers[0]}` : `${options.trialNumbers.length} trials`}; concurrency ${options.concurrency}`);
  if (options.round === 'gateway') {
    return runGatewayRound(supervisor, { ...options, log, started, interrupted: () => interrupted, onStack: (started) => (stack = started) });
  }
  if (options.round === 'entries') {
    return runEntriesRound(supervisor, { ...options, log, started, interrupted: () => interrupted, onStack: (started) => (stack = started) });
  }
  stack = await startStack(supervisor, { log, keepRunDir: options.keep });
  const ctx: RunContext = { stack, windows: [], log, ...(options.histories ? { historiesDir: options.histories } : {}) };
  if (options.liveSelfTest) {
    try {
      return await runLiveSelfTest(ctx);
    } finally {
      if (!interrupted) await stack.stop();
    }
  }
  let records: TrialRecord[];
  try {
    const runs = options.trialNumbers.flatMap((trial) => Array.from({ length: options.repeat }, (_, k) => ({ trial, tag: k === 0 ? '' : `r${k}` })));
    const jobs = runs.map(({ trial, tag }) => {
      const plan = drawPlan(options.seed, trial, tag);
      return { alone: runsAlone(plan), run: () => runTrial(ctx, plan, { settleMs: options.settleMs }) };
    });
    const stopAt = options.minutes === undefined ? Infinity : started + options.minutes * 60_000;
    records = await schedule(jobs, options.concurrency, (record) => log(trialLine(record)), () => interrupted || Date.now() >= stopAt);
    if (records.length < jobs.length && !interrupted) log(`--minutes ${options.minutes}: ${records.length} of ${jobs.length} trials ran in the time given`);
  } finally {
    if (!interrupted) await stack.stop();
  }
  if (interrupted) return 130;
  records.sort((a, b) => a.plan.trial - b.plan.trial);
  if (options.json) writeFileSync(path.resolve(options.json), JSON.stringify({ seed: options.seed, records }, null, 1));
  console.log('');
  console.log(renderReport({ seed: options.seed, concurrency: options.concurrency, durationMs: Date.now() - started, records }));
  if (options.keep) log(`logs kept in ${stack.runDir}`);
  return records.some((r) => r.violations.length > 0 || r.error) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`chaos: ${(err as Error).stack ?? String(err)}`);
    process.exit(2);
  },
);
