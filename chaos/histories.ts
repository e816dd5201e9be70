/**
 * Keeps the workflow history of each trial's job, so that a replay test
 * (`Worker.runReplayHistories`) can run them against newer workflow code and
 * catch a non-deterministic change. Stored as the history's JSON (protobufjs'
 * toJSON: camelCase fields, enum names), which the SDK's historyFromJSON reads.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';

/** Writes `<dir>/<trial>-<workflowId>.json`; @returns why a history could not be saved, if it could not. */
export async function saveHistory(client: Client, dir: string, trial: number, workflowId: string): Promise<string | undefined> {
  try {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${trial}-${workflowId}.json`), JSON.stringify(history));
    return undefined;
  } catch (err) {
    return `history of ${workflowId} not saved: ${(err as Error).message}`;
  }
}
