import { existsSync } from 'node:fs';
import { listHistories, replayHistories } from '../../src/temporal/histories';
import { workflowBundle } from '../harness/temporal';
import { COMMITTED_HISTORIES_DIR } from './paths';

/**
 * The replay gate: histories recorded from earlier runs of the job workflow
 * (committed in test/replay/histories) replay against today's workflow code.
 * A change that would break a running workflow fails here; such changes are
 * made with patched().
 */
describe('the replay gate', () => {
  it('replays every committed history against the current workflow code', async () => {
    // Arrange
    const histories = listHistories([COMMITTED_HISTORIES_DIR]);

    // Act
    const failures = await replayHistories(histories, { workflowBundle: workflowBundle() });

    // Assert
    expect(histories.length).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  }, 120_000);

  // ONCEFLOW_REPLAY_DIRS: more folders of recorded histories (`.ci/run` gives the chaos round's).
  const extraDirs = (process.env.ONCEFLOW_REPLAY_DIRS ?? '').split(',').filter((dir) => dir.trim() !== '');
  (extraDirs.length > 0 ? it : it.skip)(`replays the histories in ONCEFLOW_REPLAY_DIRS (${extraDirs.join(', ') || 'none given'})`, async () => {
    // Arrange
    const missing = extraDirs.filter((dir) => !existsSync(dir));
    const histories = listHistories(extraDirs);

    // Act
    const failures = await replayHistories(histories, { workflowBundle: workflowBundle() });

    // Assert
    expect(missing).toEqual([]);
    expect(histories.length).toBeGreaterThan(0);
    expect(failures).toEqual([]);
  }, 300_000);
});
