/**
 * `npm run replay:record`: adds to the committed histories of the replay gate
 * the paths the last test run took (.data/replay/tests) that they do not hold
 * yet: one history per shape (the sequence of its event types and activity
 * names). Histories already committed stay: runs of earlier workflow
 * revisions must keep replaying. Run it after a change to workflow code
 * (made with patched() or a new revision), so the gate also holds its paths.
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
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
  const max = Number(process.argv[2] ?? 40);
  mkdirSync(COMMITTED_HISTORIES_DIR, { recursive: true });
  const committed = new Set(listHistories([COMMITTED_HISTORIES_DIR]).map((history) => shapeOf(history.file)));
  const added = new Map<string, string>();
  for (const history of listHistories([TEST_HISTORIES_DIR])) {
    const shape = shapeOf(history.file);
    if (!committed.has(shape) && !added.has(shape)) added.set(shape, history.file);
  }
  const kept = [...added.values()].slice(0, max);
  for (const file of kept) copyFileSync(file, path.join(COMMITTED_HISTORIES_DIR, path.basename(file)));
  console.log(`added ${kept.length} new shapes (of ${added.size}) to the ${committed.size} in ${COMMITTED_HISTORIES_DIR}`);
}

main();
