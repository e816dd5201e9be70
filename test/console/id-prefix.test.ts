import { admitJob } from '../../src/ledger/jobs';
import { idPrefixRange, searchJobs } from '../../src/ledger/job-search';
import { createTestDatabase, type TestDatabase } from '../harness/database';

describe("the console's search by the first characters of a job id", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  it('is a range of UUIDs from the prefix filled with 0s to the next prefix, and has no end after an all-f prefix', () => {
    expect(idPrefixRange('47aa')).toEqual({ from: '47aa0000-0000-0000-0000-000000000000', below: '47ab0000-0000-0000-0000-000000000000' });
    expect(idPrefixRange('47AA304E-8a')).toEqual({ from: '47aa304e-8a00-0000-0000-000000000000', below: '47aa304e-8b00-0000-0000-000000000000' });
    expect(idPrefixRange('12ff-')).toEqual({ from: '12ff0000-0000-0000-0000-000000000000', below: '13000000-0000-0000-0000-000000000000' });
    expect(idPrefixRange('ffff')).toEqual({ from: 'ffff0000-0000-0000-0000-000000000000' });
  });

  it('finds exactly the jobs whose id begins so, at both edges of the range', async () => {
    const ids = ['47a9ffff-ffff-4fff-bfff-ffffffffffff', '47aa0000-0000-0000-0000-000000000000', '47aaffff-ffff-4fff-bfff-ffffffffffff', '47ab0000-0000-0000-0000-000000000000', 'ffffffff-ffff-4fff-bfff-ffffffffffff'];
    for (const [n, id] of ids.entries()) {
      await admitJob(database.pool, { id, principalId: 'alice', operation: 'support.reply', idempotencyKey: `prefix-${n}`, requestDigest: `sha256:${n}`, schemaVersion: 1, input: {}, workflowId: `wf-${n}` });
    }
    const found = async (text: string) => (await searchJobs(database.pool, { text, limit: 50 })).map((hit) => hit.id).sort();

    expect(await found('47aa')).toEqual([ids[1], ids[2]]);
    expect(await found('47aaffff-ffff-4')).toEqual([ids[2]]);
    expect(await found('ffff')).toEqual([ids[4]]);
    expect(await found('47a9')).toEqual([ids[0]]);
    expect(await found('47ab')).toEqual([ids[3]]);
    // Fewer than four characters is not taken for a prefix (it would match a sixteenth of all jobs and more).
    expect(await found('47a')).toEqual([]);
  });

  it('takes a prefix written with hyphens only where a UUID has them; anything else is an idempotency key', async () => {
    await admitJob(database.pool, { id: '0abc1234-0000-4000-8000-000000000000', principalId: 'alice', operation: 'support.reply', idempotencyKey: '0abc-1234', requestDigest: 'sha256:k', schemaVersion: 1, input: {}, workflowId: 'wf-k' });

    const hits = await searchJobs(database.pool, { text: '0abc-1234', limit: 50 });

    // Not the id 0abc1234-…: the hyphen is not where a UUID has one, so the text is the other job's key.
    expect(hits.map((hit) => hit.idempotencyKey)).toEqual(['0abc-1234']);
  });
});
