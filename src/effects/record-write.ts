import type { Pool, PoolClient } from 'pg';
import type { EffectAdapter, EffectContext, LookupResult } from './types';

/**
 * `record.write`: a row in the application's own database (effect_records),
 * written in the same transaction as the effect's settlement. Either both
 * commit or neither, so a pending effect with no row provably did not happen,
 * and repeating it is safe.
 */
export function createRecordWrite(db: Pool, name = 'record.write'): EffectAdapter {
  return {
    name,
    repeatSafe: true,
    async performInTransaction(tx: PoolClient, context: EffectContext) {
      const { rows } = await tx.query<{ written_at: Date }>(
        `INSERT INTO effect_records (effect_key, job_id, payload) VALUES ($1, $2, $3) RETURNING written_at`,
        [context.key, context.jobId, JSON.stringify({ operation: context.operation, output: context.output })],
      );
      return { recordKey: context.key, writtenAt: rows[0]!.written_at.toISOString() };
    },
    async lookup(key: string): Promise<LookupResult> {
      const { rows } = await db.query<{ written_at: Date }>('SELECT written_at FROM effect_records WHERE effect_key = $1', [key]);
      return rows[0] ? { found: true, receipt: { recordKey: key, writtenAt: rows[0].written_at.toISOString() } } : { found: false };
    },
  };
}
