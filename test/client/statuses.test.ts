import { isTerminal as clientIsTerminal, JobStatus as ClientJobStatus } from '../../packages/client';
import { isTerminal, JobStatus } from '../../src/jobs/status';

// The client package has no dependencies, so it states the job statuses itself; this keeps the two lists one.
describe("the browser client's job statuses", () => {
  it('are the server’s, each terminal exactly when the server says so', () => {
    expect(ClientJobStatus).toEqual(JobStatus);
    for (const status of Object.values(JobStatus)) expect({ status, terminal: clientIsTerminal(status) }).toEqual({ status, terminal: isTerminal(status) });
  });
});
