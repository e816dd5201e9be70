import { schemaDigest } from '../ledger/operation-versions';
import type { Queryable } from '../ledger/queryable';
import { SqlState } from '../db/errors';
import type { OperationProblem } from '../operations/problems';
import type { OperationRegistry } from '../operations/registry';

/**
 * The input schemas of `operations` that differ from the one recorded for a
 * version jobs were already made with: what recordOperationVersions refuses
 * at start, found by reading only (nothing is recorded). A database that has
 * no operation_versions yet has no such version.
 * @throws Error when the database cannot be read.
 */
export async function changedInputSchemas(db: Queryable, operations: OperationRegistry): Promise<OperationProblem[]> {
  let rows: Array<{ operation: string; schema_version: number; schema_digest: string }>;
  try {
    // Only a version that has jobs is fixed: recordOperationVersions replaces the schema of one that has none.
    ({ rows } = await db.query<{ operation: string; schema_version: number; schema_digest: string }>(
      `SELECT v.operation, v.schema_version, v.schema_digest
         FROM operation_versions v
        WHERE v.operation = ANY($1::text[])
          AND EXISTS (SELECT 1 FROM jobs WHERE jobs.operation = v.operation AND jobs.schema_version = v.schema_version)`,
      [[...operations.keys()]],
    ));
  } catch (error) {
    if ((error as { code?: unknown }).code === SqlState.undefinedTable) return [];
    throw error;
  }
  const fixed = new Map(rows.map((row) => [`${row.operation}\n${row.schema_version}`, row.schema_digest]));
  const problems: OperationProblem[] = [];
  for (const operation of operations.values()) {
    for (const version of operation.versions) {
      const recorded = fixed.get(`${operation.name}\n${version.schemaVersion}`);
      if (recorded === undefined || recorded === schemaDigest(version.input)) continue;
      const origin = version.origin ?? { file: `operation ${operation.name}`, pointer: '' };
      const v = `v${version.schemaVersion}`;
      problems.push({
        file: origin.file,
        pointer: `${origin.pointer}/input`,
        problem: `the input schema of ${operation.name} ${v} changed, and jobs of ${operation.name} ${v} exist: declare the new schema as a new schemaVersion and keep ${v} beside it`,
      });
    }
  }
  return problems;
}
