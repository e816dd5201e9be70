import path from 'node:path';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { admitJob } from '../../src/ledger/jobs';
import { recordOperationVersions, schemaDigest } from '../../src/ledger/operation-versions';
import { parseOperations } from '../../src/operations/load';
import { OperationsFileError } from '../../src/operations/problems';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { createTestDatabase, type TestDatabase } from '../harness/database';

const FIXTURE = path.join(__dirname, 'fixtures', 'two-versions.yaml');

/** The fixture as loaded, with version 1's input schema changed (a new optional field) when `changed`. */
function registry(changed: boolean) {
  const data = YAML.parse(readFileSync(FIXTURE, 'utf8'));
  if (changed) data.operations[0].versions[0].input.properties.note = { type: 'string' };
  return parseOperations(YAML.stringify(data), 'ops.yaml').registry;
}

describe('an input schema changed without a version bump', () => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(() => db.drop());

  const digests = async () => (await db.pool.query('SELECT operation, schema_version, schema_digest FROM operation_versions ORDER BY schema_version')).rows;

  it('is recorded as the version when no job of that version exists', async () => {
    // Arrange
    await recordOperationVersions(db.pool, registry(false));

    // Act
    await recordOperationVersions(db.pool, registry(true));

    // Assert
    expect(await digests()).toEqual([
      { operation: 'support.ask', schema_version: 1, schema_digest: schemaDigest(registry(true).get('support.ask')!.versions[0]!.input) },
      { operation: 'support.ask', schema_version: 2, schema_digest: schemaDigest(registry(true).get('support.ask')!.versions[1]!.input) },
    ]);
  });

  it('is refused at start once jobs of that version exist, naming the file, the pointer, the operation and the version', async () => {
    // Arrange
    await recordOperationVersions(db.pool, registry(false));
    const before = await digests();
    const input = { ticketId: 'T-1', question: 'Where?' };
    const scope = { principalId: 'alice', operation: 'support.ask', idempotencyKey: 'k-1' };
    await admitJob(db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest('support.ask', 1, input), workflowId: jobWorkflowId(scope) });

    // Act
    const refusal = recordOperationVersions(db.pool, registry(true));

    // Assert
    await expect(refusal).rejects.toThrow(OperationsFileError);
    await expect(refusal).rejects.toThrow(
      'ops.yaml: /operations/0/versions/0/input: the input schema of support.ask v1 changed, and jobs of support.ask v1 exist: declare the new schema as a new schemaVersion and keep v1 beside it',
    );
    expect(await digests()).toEqual(before);
  });

  it('is not refused for a version without jobs while another version has them', async () => {
    // Arrange
    await recordOperationVersions(db.pool, registry(false));
    const input = { ticketId: 'T-1', question: 'Where?', language: 'en' };
    const scope = { principalId: 'alice', operation: 'support.ask', idempotencyKey: 'k-2' };
    await admitJob(db.pool, { ...scope, input, schemaVersion: 2, requestDigest: requestDigest('support.ask', 2, input), workflowId: jobWorkflowId(scope) });

    // Act / Assert
    await expect(recordOperationVersions(db.pool, registry(true))).resolves.toBeUndefined();
  });

  it('an unchanged schema recorded by two processes at once (the API and a worker starting together) starts both', async () => {
    // Arrange: one process has inserted the versions and not committed yet.
    const other = await db.pool.connect();
    let second: Promise<void>;
    let waited = false;
    try {
      await other.query('BEGIN');
      await recordOperationVersions(other, registry(false));

      // Act: the other process's statement waits for that insert, which then commits.
      second = recordOperationVersions(db.pool, registry(false));
      second.catch(() => undefined);
      for (let i = 0; i < 500 && !waited; i++) {
        const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO operation_versions%'");
        waited = rows[0].n > 0;
        if (!waited) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await other.query('COMMIT');
    } finally {
      other.release();
    }

    // Assert: it waited, and it is not refused: the schema it would record is the one recorded.
    expect(waited).toBe(true);
    await expect(second).resolves.toBeUndefined();
    expect((await digests()).map((row) => row.schema_digest)).toEqual(registry(false).get('support.ask')!.versions.map((v) => schemaDigest(v.input)));
  });

  it('an unchanged schema starts again and again', async () => {
    await recordOperationVersions(db.pool, registry(false));
    await expect(recordOperationVersions(db.pool, registry(false))).resolves.toBeUndefined();
  });
});
