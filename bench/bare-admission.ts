import path from 'node:path';
import type { Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Pool } from 'pg';
import type { JobScope } from '../src/jobs/scope';

// Compiled by `npm run bench` into dist/, as bench/servers.ts loads the API (not transpiled on load).
const dist = (module: string): string => path.join(__dirname, '..', 'dist', module);
const { requestDigest } = require(dist('jobs/digest')) as typeof import('../src/jobs/digest');
const { jobWorkflowId } = require(dist('jobs/scope')) as typeof import('../src/jobs/scope');
const { JOB_WORKFLOW, searchAttributes } = require(dist('temporal/contract')) as typeof import('../src/temporal/contract');

/**
 * Admission's reference: one INSERT of the job and one workflow.start, and
 * nothing else. The front-door section runs it bare and behind a bare route.
 * @returns the new job's id.
 */
export async function bareAdmission(db: Pool, client: Client, taskQueue: string, scope: JobScope, input: Record<string, unknown>): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id)
     VALUES ($1, $2, $3, $4, 1, $5, $6) ON CONFLICT (principal_id, operation, idempotency_key) DO NOTHING RETURNING id`,
    [scope.principalId, scope.operation, scope.idempotencyKey, requestDigest(scope.operation, 1, input), input, jobWorkflowId(scope)],
  );
  await client.workflow.start(JOB_WORKFLOW, {
    taskQueue: `${taskQueue}-baseline`,
    workflowId: jobWorkflowId(scope),
    args: [{ jobId: rows[0]!.id, searchAttributes: true }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: new TypedSearchAttributes([
      { key: searchAttributes.principal, value: scope.principalId },
      { key: searchAttributes.operation, value: scope.operation },
      { key: searchAttributes.status, value: 'accepted' },
    ]),
  });
  return rows[0]!.id;
}
