import type { PoolClient, QueryConfig } from 'pg';
import { checkout, createPool } from '../../src/db/pool';
import { prepared, statementName } from '../../src/db/prepared';
import { rehearseJob, warmConnections } from '../../src/warm-up/rehearsal';
import { JOB_COLUMNS } from '../../src/ledger/jobs';
import { JOB_ENDED_COLUMNS } from '../../src/ledger/job-ended';
import { startTestStack, submitReply, type TestStack } from '../harness/stack';

describe('prepared statements', () => {
  it('names a statement by its text: the same text one name, another text another, within 63 bytes', () => {
    // Arrange
    const text = 'SELECT * FROM attempts WHERE id = $1';

    // Act
    const name = statementName(text);

    // Assert
    expect(statementName(text)).toBe(name);
    expect(statementName(`${text} FOR UPDATE`)).not.toBe(name);
    expect(name).toMatch(/^[a-z][a-z0-9_]{0,62}$/);
    expect(prepared(text, ['x'])).toEqual({ name, text, values: ['x'] });
  });
});

/** What one pooled client was asked to run: a statement's text, its name when prepared, its values. */
interface Ran {
  text: string;
  name?: string;
  values: unknown[];
  /** Which pooled client ran it (a transaction is one client's statements from BEGIN to COMMIT). */
  client: number;
}

/** A statement as a failure shows it: its first 80 characters, on one line. */
const shown = (statement: Ran): string => statement.text.replace(/\s+/g, ' ').slice(0, 80);

/** Records every statement `client` is asked to run into `ran`, while `recording()` says so. */
let clients = 0;
function recordStatements(client: PoolClient, ran: Ran[], recording: () => boolean): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const id = ++clients;
  (client as { query: unknown }).query = (first: unknown, ...rest: unknown[]) => {
    if (!recording()) return query(first, ...rest);
    if (typeof first === 'string') ran.push({ text: first, values: Array.isArray(rest[0]) ? rest[0] : [], client: id });
    else if (first && typeof first === 'object' && 'text' in first) {
      const config = first as QueryConfig;
      ran.push({ text: config.text, ...(config.name ? { name: config.name } : {}), values: config.values ?? [], client: id });
    }
    return query(first, ...rest);
  };
}

/** Whether the statement shown as `text` ran between a BEGIN and its COMMIT of its client. */
function insideTransaction(trips: Ran[], text: string): boolean {
  const at = trips.findIndex((statement) => shown(statement) === text);
  const mine = trips.slice(0, at).filter((statement) => statement.client === trips[at]!.client).map((statement) => statement.text.trim());
  return mine.lastIndexOf('BEGIN') > Math.max(mine.lastIndexOf('COMMIT'), mine.lastIndexOf('ROLLBACK'));
}

/**
 * A job's round trips and transactions among everything the pool ran: each
 * of its statements outside a transaction is one round trip and one
 * transaction; a transaction that ran one of its statements counts once,
 * with every statement in it (BEGIN and COMMIT included) a round trip.
 */
function jobWork(ran: Ran[], ofJob: Set<Ran>): { roundTrips: Ran[]; transactions: Ran[][] } {
  const roundTrips: Ran[] = [];
  const transactions: Ran[][] = [];
  const open = new Map<number, Ran[]>();
  for (const statement of ran) {
    const text = statement.text.trim();
    const block = open.get(statement.client);
    if (text === 'BEGIN') open.set(statement.client, [statement]);
    else if (block) {
      block.push(statement);
      if (text === 'COMMIT' || text === 'ROLLBACK') {
        open.delete(statement.client);
        if (block.some((inside) => ofJob.has(inside))) {
          roundTrips.push(...block);
          transactions.push(block);
        }
      }
    } else if (ofJob.has(statement)) {
      roundTrips.push(statement);
      transactions.push([statement]);
    }
  }
  return { roundTrips, transactions };
}

/** The transactions of a job's work that write, each as its statements shown. */
const writesOf = (work: { transactions: Ran[][] }): string[] =>
  work.transactions
    .filter((block) => block.some((statement) => /\b(INSERT|UPDATE|DELETE)\b|\bFROM ledger_(open_first_attempt|open_attempt|commit_answer|settle_effect)\(/.test(statement.text)))
    .map((block) => block.map((statement) => shown(statement)).join(' / '));

/**
 * Runs one reply job through `stack` and records its statements: those that
 * carried the job's key or ids (not a sweeper's or a canary's meanwhile), in
 * the order they ran, and its round trips and transactions.
 */
async function recordOneJob(stack: TestStack): Promise<{ ofThisJob: Ran[]; work: { roundTrips: Ran[]; transactions: Ran[][] } }> {
  // Every statement the shared pool runs while one job goes through is recorded (the API and the worker's activities use it).
  const ran: Ran[] = [];
  let recording = true;
  const recorded = new WeakSet<PoolClient>();
  const record = (client: PoolClient) => {
    if (recorded.has(client)) return;
    recorded.add(client);
    recordStatements(client, ran, () => recording);
  };
  stack.db.pool.on('acquire', record);
  const key = `prepared-${Date.now()}`;
  const response = await submitReply(stack, { key, message: 'Where is my order?', wait: 20 });
  stack.db.pool.removeListener('acquire', record);
  recording = false;
  const job = response.json();
  expect(job.status).toBe('succeeded');
  const { rows } = await stack.db.pool.query<{ id: string }>('SELECT id FROM attempts WHERE job_id = $1 UNION ALL SELECT id FROM effects WHERE job_id = $1', [job.id]);
  const ours = new Set<unknown>([key, job.id, ...rows.map((row) => row.id)]);
  // The reads of the job's route and of its provider's standing carry no id of the job: they name its operation with its route version or its provider.
  const { rows: of } = await stack.db.pool.query<{ operation: string; route_version: string; provider: string }>(
    'SELECT j.operation, j.route_version, a.provider FROM jobs j JOIN attempts a ON a.job_id = j.id WHERE j.id = $1',
    [job.id],
  );
  const named = (values: unknown[]) => of.some((row) => values.includes(row.operation) && (values.includes(row.route_version) || values.includes(row.provider)));
  const ofThisJob = ran.filter((statement) => statement.values.some((value) => ours.has(value)) || named(statement.values));
  return { ofThisJob, work: jobWork(ran, new Set(ofThisJob)) };
}

describe("a job's happy path", () => {
  let stack: TestStack;
  /** The statements that carried the job's key or ids (not a sweeper's or a canary's meanwhile), in the order they ran. */
  let ofThisJob: Ran[];
  /** The job's round trips and transactions: its statements, with BEGIN and COMMIT around them, and the statements inside its transactions. */
  let work: { roundTrips: Ran[]; transactions: Ran[][] };
  beforeAll(async () => {
    stack = await startTestStack();
    ({ ofThisJob, work } = await recordOneJob(stack));
  });
  afterAll(() => stack.close());

  it('runs only prepared statements, in the API and in the worker', () => {
    expect(ofThisJob.length).toBeGreaterThanOrEqual(7);
    expect(ofThisJob.filter((statement) => statement.name === undefined).map((statement) => shown(statement))).toEqual([]);
  });

  it('costs the ledger one call to commit the answer with its first claim, and one to settle the effect with the terminal write', () => {
    // Arrange: the job's round trips, as the shown statements, in order.
    const trips = work.roundTrips.map((statement) => shown(statement));
    const calls = (name: string) => work.roundTrips.filter((statement) => statement.text.includes(`FROM ${name}(`));

    // Assert: each step is one statement of its own, outside any BEGIN (its own transaction).
    expect(calls('ledger_commit_answer')).toHaveLength(1);
    expect(calls('ledger_settle_effect')).toHaveLength(1);
    expect(trips.filter((text) => /ledger_(commit_answer|settle_effect)\(/.test(text)).every((text) => !insideTransaction(work.roundTrips, text))).toBe(true);
    // What the job costs now: admission and the answer's read 3; the attempt's opening and its sending mark 2 the short
    // way (the job read without a lock beside its primary's standing, the call that locks the job row, checks it, opens
    // the attempt and marks it sent) and 3 on a worker's first job of a route version (its steps read once, as here);
    // the commit with the effect's claim born in its first try 1 (its lookup is verified: read once a while per worker,
    // not per job); the effect's settlement 1. No step grows back.
    expect(trips.length).toBeLessThanOrEqual(8);
    expect(trips.filter((text) => /^UPDATE effects SET phase = 'sending'/.test(text))).toEqual([]);
    // Each of those is a transaction of its own; four of them write (admission, the attempt's opening with its sending
    // mark, the commit with the claim's, and the effect's settlement: each mark committed before its request goes out);
    // the rest only read.
    expect(work.transactions.length).toBeLessThanOrEqual(8);
    expect(writesOf(work)).toHaveLength(4);
  });

  it("reads the new job and its route's primary's standing in one statement, before the call that opens its attempt", () => {
    // Arrange: the job's round trips that read a provider's standing, and the call that opens the first attempt.
    const standings = work.roundTrips.filter((statement) => /\bAS last_violation_at\b/.test(statement.text));
    const opening = work.roundTrips.findIndex((statement) => statement.text.includes('FROM ledger_open_first_attempt('));

    // Assert: one statement reads both (the job by its id, the standing of the primary the workflow's operation routes to), and no other reads the job before the opening.
    expect(standings.map((statement) => /\bFROM jobs\b/.test(statement.text))).toEqual([true]);
    expect(opening).toBeGreaterThan(work.roundTrips.indexOf(standings[0]!));
    const jobReads = work.roundTrips.slice(0, opening).filter((statement) => /^SELECT id, operation, status, version\b/.test(statement.text.trim()));
    expect(jobReads.map((statement) => shown(statement))).toEqual([]);
  });

  it("meters the winner's usage from what its commit returned: no read of its attempt after the answer is committed", () => {
    // The compare-and-swap that lets the answer in (invariant 5), then everything the job ran after it.
    const committed = ofThisJob.findIndex((statement) => /FROM ledger_commit_answer\(/.test(statement.text));
    expect(committed).toBeGreaterThan(0);
    const readsOfAnAttempt = ofThisJob.slice(committed).filter((statement) => /^SELECT\b[\s\S]*\bFROM attempts WHERE id = \$1\s*$/.test(statement.text.trim()));
    expect(readsOfAnAttempt.map((statement) => shown(statement))).toEqual([]);
  });

  it('takes no look at the job while it waits with Prefer: wait: the announcement of its end is heard', () => {
    const looks = ofThisJob.filter((statement) => statement.text === `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1`);
    expect(looks).toEqual([]);
  });

  it('counts its outcome from what its terminal write returned: no read of the ended job after it', () => {
    const reads = ofThisJob.filter((statement) => statement.text === `SELECT ${JOB_ENDED_COLUMNS} FROM ledger_job_ended($1)`);
    expect(reads).toEqual([]);
  });

  it('plans each of its statements once per connection: after the first executions, PostgreSQL keeps a generic plan', async () => {
    // Arrange: a new connection, through the job's way more often than PostgreSQL's five custom plans before it weighs a generic one.
    const pool = createPool(stack.db.url, { max: 1 });
    const { client, release } = await checkout(pool);
    let plans: Array<{ name: string; generic_plans: string; custom_plans: string }>;
    try {
      // Act
      for (let i = 0; i < 8; i++) await rehearseJob(client);
      plans = (await client.query('SELECT name, generic_plans, custom_plans FROM pg_prepared_statements')).rows;
    } finally {
      release();
      await pool.end();
    }

    // Assert: every statement of the job was executed eight times; none was planned anew each time.
    const ofTheJob = new Set(ofThisJob.map((statement) => statement.name!));
    const mine = plans.filter((plan) => ofTheJob.has(plan.name));
    expect(mine.length).toBeGreaterThanOrEqual(7);
    const replanned = mine.filter((plan) => Number(plan.custom_plans) > 5).map((plan) => shown(ofThisJob.find((statement) => statement.name === plan.name)!));
    expect(replanned).toEqual([]);
  });

  it('leaves nothing of the job to plan on a warmed connection: its first job runs every statement on the plan kept', async () => {
    // Arrange: a new connection, warmed as a process warms its connections at start.
    const pool = createPool(stack.db.url, { max: 1 });
    await warmConnections(pool, 1);
    const { client, release } = await checkout(pool);
    const plansOf = async () => new Map((await client.query<{ name: string; custom_plans: string }>('SELECT name, custom_plans FROM pg_prepared_statements')).rows.map((row) => [row.name, Number(row.custom_plans)]));
    let before: Map<string, number>;
    let after: Map<string, number>;
    try {
      before = await plansOf();

      // Act: the first job's statements on it.
      await rehearseJob(client);
      after = await plansOf();
    } finally {
      release();
      await pool.end();
    }

    // Assert: PostgreSQL planned none of them for this execution (it plans a statement's first five anew).
    const ofTheJob = ofThisJob.filter((statement) => after.has(statement.name!));
    expect(ofTheJob.length).toBeGreaterThanOrEqual(7);
    const planned = ofTheJob.filter((statement) => after.get(statement.name!)! > (before.get(statement.name!) ?? 0)).map((statement) => shown(statement));
    expect(planned).toEqual([]);
  });

  it('runs no statement that a rehearsed connection has not prepared already', async () => {
    // Arrange: a new connection, which nothing has run on.
    const pool = createPool(stack.db.url, { max: 1 });
    const { client, release } = await checkout(pool);
    let preparedHere: Set<string>;
    try {
      // Act
      await rehearseJob(client);
      preparedHere = new Set((await client.query<{ name: string }>('SELECT name FROM pg_prepared_statements')).rows.map((row) => row.name));
    } finally {
      release();
      await pool.end();
    }

    // Assert: the connection holds every statement of the job, prepared, after the rehearsal's rollback.
    const missed = ofThisJob.filter((statement) => !preparedHere.has(statement.name!)).map((statement) => shown(statement));
    expect(ofThisJob.length).toBeGreaterThanOrEqual(7);
    expect([...new Set(missed)]).toEqual([]);
  });
});

describe("a job's happy path, its effect's receipt lookup not verified", () => {
  let stack: TestStack;
  let work: { roundTrips: Ran[]; transactions: Ran[][] };
  beforeAll(async () => {
    // No drills ran: recovery may rely on none of the effect's claims, so none may be born in its first try.
    stack = await startTestStack({ verify: false });
    ({ work } = await recordOneJob(stack));
  });
  afterAll(() => stack.close());

  it("claims the effect `claimed` with the answer and marks its try `sending` in a commit of its own before it goes out", () => {
    // Arrange
    const trips = work.roundTrips.map((statement) => shown(statement));

    // Assert: the mark is its own write, after the commit and before the settlement.
    const commit = trips.findIndex((text) => /ledger_commit_answer\(/.test(text));
    const mark = trips.findIndex((text) => /^UPDATE effects SET phase = 'sending'/.test(text));
    const settle = trips.findIndex((text) => /ledger_settle_effect\(/.test(text));
    expect([commit >= 0, mark > commit, settle > mark]).toEqual([true, true, true]);
    expect(writesOf(work)).toHaveLength(5);
  });
});
