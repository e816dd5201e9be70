/**
 * The intents of a trial in flight: which job each one got, which jobs
 * are terminal (as the operator last saw them), and the submits themselves,
 * each at its time or after the job it follows ended.
 */
import type { Exchange } from '../api-client';
import { sleep } from '../context';
import type { GatewayDownstream } from './downstream';
import type { HostileTicket, IntentPlan } from './plan';
import { submitBurst, type SubmitTarget } from './submit';

/** The ticket id an intent really sends: a hostile one is built around its plain id, with the other origin's port. */
export function ticketIdOf(intent: IntentPlan, downstream: Pick<GatewayDownstream, 'elsewhereUrl'>): string {
  const other = new URL(downstream.elsewhereUrl).host;
  const forms: Record<HostileTicket, string> = {
    'dot-dot': `../${intent.ticketId}`,
    slashes: `${intent.ticketId}/../../v1/comments`,
    'at-host': `${intent.ticketId}@${other}`,
    'query-fragment': `${intent.ticketId}?to=${other}#x`,
    backslash: `${intent.ticketId}\\..\\..`,
  };
  return intent.hostile ? forms[intent.hostile] : intent.ticketId;
}

export class TrialIntents {
  /** Job id by intent label, once a POST was answered 2xx. */
  readonly jobOf = new Map<string, string>();
  /** Job id → when the operator last saw it terminal (a reopen makes it open again). */
  readonly terminal = new Map<string, number>();
  /** Intent label → when its POSTs were answered. */
  private readonly answeredAt = new Map<string, number>();
  readonly submitted = new Map<string, Promise<void>>();
  private readonly announce = new Map<string, () => void>();
  private pending = 0;

  constructor(
    private readonly target: SubmitTarget,
    private readonly downstream: GatewayDownstream,
  ) {}

  /** Resolves once the intent's first POST went out (canary actions are timed from it). */
  whenSubmitted(label: string): Promise<void> {
    let promise = this.submitted.get(label);
    if (!promise) {
      promise = new Promise<void>((resolve) => this.announce.set(label, resolve));
      this.submitted.set(label, promise);
    }
    return promise;
  }

  get busy(): boolean {
    return this.pending > 0;
  }

  /** Counts a task that may still submit (a budget trial's prefill) as busy until it ends. */
  async hold<T>(task: () => Promise<T>): Promise<T> {
    this.pending++;
    try {
      return await task();
    } finally {
      this.pending--;
    }
  }

  jobIds(): string[] {
    return [...new Set(this.jobOf.values())];
  }

  /** What the operator saw of a job just now. */
  observe(jobId: string, terminal: boolean): void {
    if (!terminal) this.terminal.delete(jobId);
    else this.terminal.set(jobId, Date.now());
  }

  /** Waits until the job of `label` was seen terminal after that intent was answered (or the trial's deadline). */
  async untilTerminal(label: string): Promise<void> {
    while (Date.now() < this.target.deadline) {
      const id = this.jobOf.get(label);
      // Answered without a job (refused): there is nothing to wait for.
      if (id === undefined && this.answeredAt.has(label)) return;
      const seenAt = id === undefined ? undefined : this.terminal.get(id);
      // A read that began before the answer may still show the old run's end: only a later one counts.
      if (seenAt !== undefined && seenAt >= (this.answeredAt.get(label) ?? 0) + 300) return;
      await sleep(100);
    }
  }

  /** Submits one intent at its time; @returns its answers. */
  async run(intent: IntentPlan, trialStartedAt: number): Promise<Exchange[]> {
    this.pending++;
    try {
      this.whenSubmitted(intent.label);
      if (intent.afterLabel) {
        await this.untilTerminal(intent.afterLabel);
        await sleep(intent.startMs);
      } else await sleep(trialStartedAt + intent.startMs - Date.now());
      const ticketId = ticketIdOf(intent, this.downstream);
      if (intent.downstream) this.downstream.plan(ticketId, intent.downstream);
      this.announce.get(intent.label)?.();
      const answers = await submitBurst(this.target, intent, ticketId);
      this.answeredAt.set(intent.label, Date.now());
      for (const answer of answers) {
        const id = (answer.body as { id?: unknown } | undefined)?.id;
        if ((answer.status === 200 || answer.status === 202) && typeof id === 'string') this.jobOf.set(intent.label, id);
      }
      return answers;
    } finally {
      this.pending--;
    }
  }
}
