/**
 * Keeps the workflow history of each trial's job, so that a replay test
 * (`Worker.runReplayHistories`) can run them against newer workflow code and
 * catch a non-deterministic change. Stored as the binary protobuf of
 * temporal.api.history.v1.History (the SDK's JSON helpers, historyToJSON and
 * historyFromJSON, throw "type must be a Type" with the protobufjs copies this
 * install has); load one with
 * `temporal.api.history.v1.History.decode(readFileSync(file))` of @temporalio/proto.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';

interface EncodableMessage {
  constructor: { encode(message: unknown): { finish(): Uint8Array } };
}

/** Writes `<dir>/<trial>-<workflowId>.binpb`; @returns why a history could not be saved, if it could not. */
export async function saveHistory(client: Client, dir: string, trial: number, workflowId: string): Promise<string | undefined> {
  try {
    const history = (await client.workflow.getHandle(workflowId).fetchHistory()) as unknown as EncodableMessage;
    const bytes = history.constructor.encode(history).finish();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${trial}-${workflowId}.binpb`), bytes);
    return undefined;
  } catch (err) {
    return `history of ${workflowId} not saved: ${(err as Error).message}`;
  }
}
