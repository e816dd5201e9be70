import { startSimStackClearOf, type SimStack } from '../../src/sim/stack';

/** A stand-in for startSimStack: each start hands out the next ports of `starts`, and counts the closes. */
function fakeStarts(starts: Array<[number, number, number]>) {
  const state = { started: 0, closed: 0 };
  const start = async (): Promise<SimStack> => {
    const [primary, backup, downstream] = starts[Math.min(state.started++, starts.length - 1)]!;
    return {
      primary: { port: primary },
      backup: { port: backup },
      downstream: { port: downstream },
      close: async () => {
        state.closed++;
      },
    } as unknown as SimStack;
  };
  return { start, state };
}

describe('the simulators of npm start, kept clear of the ports the stack listens on next', () => {
  it('starts them again when the system handed one of them the API port', async () => {
    // Arrange: the first start's backup got 3000, the API's port, while it was still free.
    const { start, state } = fakeStarts([
      [41001, 3000, 41003],
      [41004, 41005, 41006],
    ]);

    // Act
    const sims = await startSimStackClearOf({}, new Set([3000, 9464]), start);

    // Assert
    expect([sims.primary.port, sims.backup.port, sims.downstream.port]).toEqual([41004, 41005, 41006]);
    expect(state).toEqual({ started: 2, closed: 1 });
  });

  it('keeps a port asked for by number, and gives up after five starts', async () => {
    // Arrange
    const asked = fakeStarts([[3000, 41002, 41003]]);
    const unlucky = fakeStarts([[9464, 41002, 41003]]);

    // Act
    await startSimStackClearOf({ primaryPort: 3000 }, new Set([3000]), asked.start);
    await startSimStackClearOf({}, new Set([9464]), unlucky.start);

    // Assert
    expect(asked.state).toEqual({ started: 1, closed: 0 });
    expect(unlucky.state).toEqual({ started: 5, closed: 4 });
  });
});
