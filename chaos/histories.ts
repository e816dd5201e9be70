/**
 * Keeps the workflow history of each trial's job, as JSON that
 * `Worker.runReplayHistories` (with historyFromJSON) can replay against newer
 * workflow code: the material of a replay gate for non-deterministic changes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';

/** Writes `<dir>/<trial>-<workflowId>.json`; a history that cannot be fetched is skipped, with a reason. */
export async function saveHistory(client: Client, dir: string, trial: number, workflowId: string): Promise<string | undefined> {
  try {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${trial}-${workflowId}.json`), historyToJSON(history));
    return undefined;
  } catch (err) {
    return `history of ${workflowId} not saved: ${(err as Error).message}`;
  }
}
