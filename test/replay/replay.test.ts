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
});
