import { withDeadline } from '../../src/stack/deadline';

describe('withDeadline: a start-up step that never settles fails, naming itself, instead of hanging the caller', () => {
  it('rejects with the step and its limit when the work does not settle in time', async () => {
    const never = new Promise<void>(() => undefined);
    await expect(withDeadline(never, 50, 'embedded PostgreSQL: initdb')).rejects.toThrow('embedded PostgreSQL: initdb did not finish within 50 ms');
  }, 5_000);

  it("passes the work's own value and its own error through", async () => {
    await expect(withDeadline(Promise.resolve(7), 1_000, 'a step')).resolves.toBe(7);
    await expect(withDeadline(Promise.reject(new Error('initdb failed')), 1_000, 'a step')).rejects.toThrow('initdb failed');
  });

  it('leaves no timer behind once the work has settled (a finished start does not hold the process open)', async () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    await withDeadline(Promise.resolve(), 60_000, 'a step');
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBe(before);
  });
});
