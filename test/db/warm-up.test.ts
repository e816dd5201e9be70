import { Pool, type PoolClient } from 'pg';
import { warmConnections } from '../../src/db/pool';
import { warmAdmission, warmJobReads } from '../../src/ledger/warm-up';
import { createTestDatabase, type TestDatabase } from '../harness/database';

/** What each of the pool's two connections shows at once: its backend and the statements prepared in it. */
async function backends(pool: Pool): Promise<Array<{ pid: number; prepared: string[] }>> {
  const clients: PoolClient[] = await Promise.all([pool.connect(), pool.connect()]);
  try {
    return await Promise.all(
      clients.map(async (client) => ({
        pid: (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid,
        prepared: (await client.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((row) => row.name),
      })),
    );
  } finally {
    for (const client of clients) client.release();
  }
}

describe('warming pooled connections before the first request', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  beforeEach(() => {
    pool = new Pool({ connectionString: db.url, max: 2 });
  });
  afterEach(() => pool.end());
  afterAll(() => db.drop());

  it("takes each connection through admission's lookups and its insert, rolled back: both backends have the lookups prepared, and no row is left", async () => {
    await warmConnections(pool, 2, warmAdmission);

    const warmed = await backends(pool);
    expect(new Set(warmed.map((backend) => backend.pid)).size).toBe(2);
    for (const backend of warmed) expect(backend.prepared).toEqual(['job-details-by-id', 'job-details-by-scope']);
    const { rows } = await pool.query<{ jobs: number; events: number }>('SELECT (SELECT count(*) FROM jobs)::int AS jobs, (SELECT count(*) FROM job_events)::int AS events');
    expect(rows[0]).toEqual({ jobs: 0, events: 0 });
  });

  it("takes each connection through a running job's reads, by an id no job has, and writes nothing", async () => {
    await warmConnections(pool, 2, warmJobReads);

    for (const backend of await backends(pool)) expect(backend.prepared).toEqual(['job-details-by-id']);
    const { rows } = await pool.query<{ jobs: number }>('SELECT count(*)::int AS jobs FROM jobs');
    expect(rows[0]).toEqual({ jobs: 0 });
  });

  it('opens the connections asked for, asking each SELECT 1 when no warm-up is given', async () => {
    await warmConnections(pool, 2);

    expect(pool.totalCount).toBe(2);
    expect(pool.idleCount).toBe(2);
  });
});
