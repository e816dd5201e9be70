import { uuid4 } from '@temporalio/workflow';
import type { JobWorkflowInput } from '../temporal/contract';
import { awaitResolution, callAttempt } from './attempt-steps';
import { runEffects } from './effect-steps';
import { startJobRun } from './job-run';
import { ledger } from './ledger-proxy';

/**
 * One workflow per job. It keeps no job state of its own: it asks the ledger
 * what the job needs next (one transaction decides, and opens the next
 * attempt when that is what is needed), does it, and asks again — until the
 * ledger says the job is terminal (invariant 11: the workflow never ends
 * before its job). Restarts, replays, a second run after a repair and a
 * continue-as-new are all safe.
 */
export async function jobWorkflow(input: JobWorkflowInput): Promise<string> {
  const run = startJobRun(input);
  for (;;) {
    // A wake-up from before this look is answered by it: only later ones may cut a wait short.
    run.beforeLook();
    // The attempt id is the workflow's own, so a retried step finds the attempt it opened.
    const step = await ledger.advanceJob({ jobId: input.jobId, attemptId: uuid4() });
    let terminal: string | undefined;
    switch (step.kind) {
      case 'terminal':
        terminal = step.status;
        break;
      case 'call': {
        // From revision 2 a first attempt publishes no 'running': a job that wins at once goes
        // from accepted to its end with one search-attribute write.
        if (run.revision < 2 || (step.seq ?? 2) > 1) run.setStatus('running');
        const report = await callAttempt(run, step.attemptId, step.timings);
        if (report?.jobTerminal) terminal = report.jobStatus;
        else if (report?.effects) terminal = await runEffects(run, report.effects, step.timings);
        break;
      }
      case 'await':
        run.setStatus('awaiting_resolution');
        await awaitResolution(run, step.attemptId, step.timings);
        break;
      case 'backoff':
        run.setStatus('running');
        await run.waitForChange(step.ms);
        break;
      case 'effects':
        run.setStatus('running');
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
