/**
 * Keeps the workflow history of each trial's job, so the replay gate
 * (`npm run replay -- DIR`) can run them against the workflow code and catch
 * a non-deterministic change. Saved as Temporal's history JSON, named as
 * `onceflow histories collect` names them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';

/** Writes `<dir>/<workflowId>__<runId>.json`; @returns why a history could not be saved, if it could not. */
export async function saveHistory(client: Client, dir: string, trial: number, workflowId: string): Promise<string | undefined> {
  try {
    const handle = client.workflow.getHandle(workflowId);
    const { runId } = await handle.describe();
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${workflowId}__${runId}.json`), historyToJSON(history));
    return undefined;
  } catch (err) {
    return `history of ${workflowId} (trial ${trial}) not saved: ${(err as Error).message}`;
  }
}
