import { uuid4 } from '@temporalio/workflow';
import type { AttemptReport, JobTimings, JobWorkflowInput } from '../temporal/contract';
import { awaitResolution, callAttempt } from './attempt-steps';
import { runEffects } from './effect-steps';
import { startJobRun, type JobRun } from './job-run';
import { ledger, ledgerSending } from './ledger-proxy';

/**
 * One workflow per job. It keeps no job state of its own: it asks the ledger
 * what the job needs next (one transaction decides, and opens the next
 * attempt when that is what is needed), does it, and asks again — until the
 * ledger says the job is terminal (invariant 11: the workflow never ends
 * before its job). Restarts, replays, a second run after a repair and a
 * continue-as-new are all safe.
 *
 * Revision 2 (JobWorkflowInput.revision): the step that opens an attempt
 * also sends it, and a winning answer's effects run in the same step, so a
 * job that wins at once is one local activity in one workflow task. A lost
 * worker is then told by the workflow task's timeout; the task runs again
 * elsewhere, the step finds its attempt already sent, and the ledger takes it
 * from there as from any call that did not report. Revision 1 runs (started
 * before) keep their path: the call as an activity of its own.
 */
export async function jobWorkflow(input: JobWorkflowInput): Promise<string> {
  const run = startJobRun(input);
  const sends = run.revision >= 2;
  for (let first = true; ; first = false) {
    // A wake-up from before this look is answered by it: only later ones may cut a wait short.
    run.beforeLook();
    // The attempt id is the workflow's own, so a retried step finds the attempt it opened.
    // `first` tells the ledger this is the run's first look (a new job's attempt may open the short way); the ledger checks.
    const request = { jobId: input.jobId, attemptId: uuid4(), ...(sends ? { send: true } : {}), ...(sends && first ? { first: true } : {}) };
    const step = await (sends ? ledgerSending : ledger).advanceJob(request);
    let terminal: string | undefined;
    switch (step.kind) {
      case 'terminal':
        terminal = step.status;
        break;
      case 'called':
        run.leaveWait();
        terminal = await afterCall(run, step.report, step.timings);
        break;
      case 'call':
        run.setStatus('running');
        terminal = await afterCall(run, await callAttempt(step.attemptId, step.timings), step.timings);
        break;
      case 'await':
        run.setStatus('awaiting_resolution');
        await awaitResolution(run, step.attemptId, step.timings);
        break;
      case 'backoff':
        if (sends) run.leaveWait();
        else run.setStatus('running');
        await run.waitForChange(step.ms);
        break;
      case 'effects':
        if (sends) run.leaveWait();
        else run.setStatus('running');
        terminal = await runEffects(run, step.names, step.timings);
        break;
    }
    if (terminal !== undefined) {
      run.setStatus(terminal);
      return terminal;
    }
    await run.continueAsNewIfLong();
  }
}

/** What a call left: the job's end, its winner's effects still to run, or (undefined) another step. */
async function afterCall(run: JobRun, report: AttemptReport | undefined, timings: JobTimings): Promise<string | undefined> {
  if (report?.jobTerminal) return report.jobStatus;
  if (report?.effects?.length) return runEffects(run, report.effects, timings);
  return undefined;
}
