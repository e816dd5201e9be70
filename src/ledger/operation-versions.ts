import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { JsonSchema } from '../operations/operation';
import { OperationsFileError, type OperationProblem } from '../operations/problems';
import type { OperationRegistry } from '../operations/registry';
import type { Queryable } from './queryable';

/** `sha256:` + hex of the RFC 8785 canonical form of an input schema. */
export function schemaDigest(schema: JsonSchema): string {
  const canonical = canonicalize(schema);
  if (canonical === undefined) throw new TypeError('the schema cannot be canonicalized');
  return `sha256:${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
}

/**
 * Records the input schema of every (operation, schemaVersion) in the
 * registry, refusing a schema that changed under a version jobs were made with.
 * @throws OperationsFileError naming each such version (file, pointer, operation, version).
 */
export async function recordOperationVersions(db: Queryable, operations: OperationRegistry): Promise<void> {
  const refused: OperationProblem[] = [];
  for (const operation of operations.values()) {
    for (const version of operation.versions) {
      const digest = schemaDigest(version.input);
      // A new version is recorded; a changed schema replaces the old one only while no job of that version exists.
      let { rows } = await db.query<{ schema_digest: string }>(
        `WITH written AS (
           INSERT INTO operation_versions AS v (operation, schema_version, schema_digest)
           VALUES ($1, $2, $3)
           ON CONFLICT (operation, schema_version) DO UPDATE SET schema_digest = EXCLUDED.schema_digest, updated_at = now()
             WHERE v.schema_digest <> EXCLUDED.schema_digest
               AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.operation = v.operation AND jobs.schema_version = v.schema_version)
           RETURNING schema_digest
         )
         SELECT schema_digest FROM written
         UNION ALL
         SELECT schema_digest FROM operation_versions WHERE operation = $1 AND schema_version = $2 AND NOT EXISTS (SELECT 1 FROM written)`,
        [operation.name, version.schemaVersion, digest],
      );
      // No row: another process (the API and a worker start together) inserted it after this statement's snapshot was
      // taken, and the insert waited for its commit; a new statement sees what it recorded.
      if (rows.length === 0) {
        ({ rows } = await db.query<{ schema_digest: string }>('SELECT schema_digest FROM operation_versions WHERE operation = $1 AND schema_version = $2', [operation.name, version.schemaVersion]));
      }
      if (rows[0]?.schema_digest === digest) continue;
      const origin = version.origin ?? { file: `operation ${operation.name}`, pointer: '' };
      refused.push({
        file: origin.file,
        pointer: `${origin.pointer}/input`,
        problem: `the input schema of ${operation.name} v${version.schemaVersion} changed, and jobs of ${operation.name} v${version.schemaVersion} exist: declare the new schema as a new schemaVersion and keep v${version.schemaVersion} beside it`,
      });
    }
  }
  if (refused.length > 0) throw new OperationsFileError(refused);
}
