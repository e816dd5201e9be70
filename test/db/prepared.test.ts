import type { PoolClient, QueryConfig } from 'pg';
import { prepared, statementName } from '../../src/db/prepared';
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
}

describe("a job's happy path", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  it('runs only prepared statements, in the API and in the worker', async () => {
    // Arrange: every statement the shared pool runs from here on is recorded (the API and the worker's activities use it).
    const ran: Ran[] = [];
    let recording = true;
    const recorded = new WeakSet<PoolClient>();
    const record = (client: PoolClient) => {
      if (recorded.has(client)) return;
      recorded.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (first: unknown, ...rest: unknown[]) => {
        if (!recording) return query(first, ...rest);
        if (typeof first === 'string') ran.push({ text: first, values: Array.isArray(rest[0]) ? rest[0] : [] });
        else if (first && typeof first === 'object' && 'text' in first) {
          const config = first as QueryConfig;
          ran.push({ text: config.text, ...(config.name ? { name: config.name } : {}), values: config.values ?? [] });
        }
        return query(first, ...rest);
      };
    };
    stack.db.pool.on('acquire', record);
    const key = `prepared-${Date.now()}`;

    // Act
    const response = await submitReply(stack, { key, message: 'Where is my order?', wait: 20 });
    stack.db.pool.removeListener('acquire', record);
    recording = false;

    // Assert: the statements that carried this job's key or ids (not a sweeper's or a canary's meanwhile) were all prepared.
    const job = response.json();
    expect(job.status).toBe('succeeded');
    const { rows } = await stack.db.pool.query<{ id: string }>('SELECT id FROM attempts WHERE job_id = $1 UNION ALL SELECT id FROM effects WHERE job_id = $1', [job.id]);
    const ours = new Set<unknown>([key, job.id, ...rows.map((row) => row.id)]);
    const ofThisJob = ran.filter((statement) => statement.values.some((value) => ours.has(value)));
    expect(ofThisJob.length).toBeGreaterThanOrEqual(12);
    expect(ofThisJob.filter((statement) => statement.name === undefined).map((statement) => statement.text.replace(/\s+/g, ' ').slice(0, 80))).toEqual([]);
  });
});
