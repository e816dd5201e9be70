import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { JOB_WORKFLOW } from './contract';

/** One recorded run of a workflow, as a file holds it. */
export interface RecordedHistory {
  workflowId: string;
  runId: string;
  file: string;
}

/**
 * Saves the history of every closed run of the job workflow in a namespace,
 * one JSON file per run (Temporal's own history JSON), so they can be
 * replayed against later workflow code.
 * @returns how many were saved.
 */
export async function collectHistories(client: Client, dir: string, opts: { limit?: number } = {}): Promise<number> {
  mkdirSync(dir, { recursive: true });
  let saved = 0;
  for await (const execution of client.workflow.list({ query: `WorkflowType = '${JOB_WORKFLOW}' AND ExecutionStatus != 'Running'` })) {
    if (opts.limit !== undefined && saved >= opts.limit) break;
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    writeFileSync(path.join(dir, `${execution.workflowId}__${execution.runId}.json`), historyToJSON(history));
    saved++;
  }
  return saved;
}

/** The recorded histories in some folders (files named by collectHistories). */
export function listHistories(dirs: string[]): RecordedHistory[] {
  return dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((file) => file.endsWith('.json'))
      .sort()
      .map((file) => {
        const [workflowId, runId] = file.replace(/\.json$/, '').split('__');
        return { workflowId: workflowId!, runId: runId ?? '', file: path.join(dir, file) };
      }),
  );
}

export interface ReplayFailure {
  workflowId: string;
  runId: string;
  file: string;
  error: string;
}

/**
 * Replays recorded histories against the current workflow code: a change
 * that would not replay a recorded history (a non-deterministic change made
 * without `patched()`) shows up here, before it reaches running workflows.
 * @returns the histories that failed to replay.
 */
export async function replayHistories(histories: RecordedHistory[], options: ReplayWorkerOptions): Promise<ReplayFailure[]> {
  const failures: ReplayFailure[] = [];
  const source = histories.map((recorded) => ({ workflowId: recorded.workflowId, history: historyFromJSON(JSON.parse(readFileSync(recorded.file, 'utf8'))) }));
  for await (const result of Worker.runReplayHistories(options, source)) {
    if (!result.error) continue;
    const recorded = histories.find((h) => h.workflowId === result.workflowId && (!h.runId || h.runId === result.runId));
    failures.push({ workflowId: result.workflowId, runId: result.runId, file: recorded?.file ?? '', error: result.error.message });
  }
  return failures;
}
