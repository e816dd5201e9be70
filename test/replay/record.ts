/**
 * `npm run replay:record`: refreshes the committed histories of the replay
 * gate from the last test run (.data/replay/tests): one history per shape
 * (the sequence of its event types and activity names), so every path the
 * tests took is kept once. Run it after a change to workflow code that was
 * made with patched(), so the gate also holds the new paths.
 */
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { listHistories } from '../../src/temporal/histories';
import { TEST_HISTORIES_DIR } from '../harness/global-teardown';
import { COMMITTED_HISTORIES_DIR } from './paths';

interface HistoryEvent {
  eventType?: string;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  markerRecordedEventAttributes?: { markerName?: string };
}

/** What makes two histories the same path: their event types, with the activity of each scheduled task. */
function shapeOf(file: string): string {
  const events = (JSON.parse(readFileSync(file, 'utf8')) as { events?: HistoryEvent[] }).events ?? [];
  return events.map((event) => `${event.eventType}:${event.activityTaskScheduledEventAttributes?.activityType?.name ?? ''}`).join(',');
}

function main(): void {
  const max = Number(process.argv[2] ?? 60);
  const byShape = new Map<string, string>();
  for (const history of listHistories([TEST_HISTORIES_DIR])) {
    const shape = shapeOf(history.file);
    if (!byShape.has(shape)) byShape.set(shape, history.file);
  }
  rmSync(COMMITTED_HISTORIES_DIR, { recursive: true, force: true });
  mkdirSync(COMMITTED_HISTORIES_DIR, { recursive: true });
  const kept = [...byShape.values()].slice(0, max);
  for (const file of kept) copyFileSync(file, path.join(COMMITTED_HISTORIES_DIR, path.basename(file)));
  console.log(`kept ${kept.length} of ${byShape.size} shapes in ${COMMITTED_HISTORIES_DIR}`);
}

main();
