/**
 * Per fault kind of a gateway trial, whether it acted: a fault that could
 * not (no attempt reached the provider, the downstream never got the
 * comment, the operator's change lost its race) is counted as not run,
 * never as a pass.
 */
import type { OperatorResult } from './operator';
import type { GatewayTrialRecord } from './trial';

export function judgeGatewayRan(record: GatewayTrialRecord, settled: OperatorResult): void {
  const obs = record.observation;
  if (!obs) return;
  const reached = (provider: string) => obs.attempts.some((a) => a.provider === provider);
  const second = record.plan.canary?.second.version;
  /** Whether an operator's change of that kind went through (on the second canary, or on the others). */
  const changed = (action: string, onSecond: boolean) =>
    obs.exchanges.some((e) => e.label.startsWith(`canary:${action} `) && (e.status === 200 || e.status === 201) && e.label.endsWith(` ${second}`) === onSecond);
  const answered = (key: string) => obs.exchanges.some((e) => e.label === `submit:${key}` && (e.status === 200 || e.status === 202));
  const sends = obs.downstream.requests.filter((r) => r.kind === 'send');
  for (const kind of record.kinds) {
    const [family, what = ''] = kind.split(':');
    let verdict: [boolean, string];
    if (family === 'gw') verdict = [obs.jobs.length > 0, 'no job was admitted'];
    else if (family === 'primary') verdict = [reached('sim-primary'), 'no attempt reached sim-primary'];
    else if (family === 'backup') verdict = [reached('sim-backup'), 'no attempt reached sim-backup'];
    else if (family === 'both') verdict = [reached('sim-primary') && reached('sim-backup'), 'not both providers were reached'];
    else if (kind === 'storm') verdict = [obs.intents.some((i) => obs.exchanges.filter((e) => e.label === `submit:${i.key}` && (e.status === 200 || e.status === 202)).length >= 2), 'no key got two 2xx answers'];
    else if (kind === 'deadline') verdict = [record.plan.intents.some((i) => i.deadlineAfterMs !== undefined && answered(i.key)), 'no submit with a deadline was admitted'];
    else if (kind === 'race-resolution') verdict = [settled.raced > 0, 'no racing resolution was accepted (the answer came first)'];
    else if (family === 'hostile-ticket') verdict = [sends.length > 0 || obs.effects.some((e) => e.status === 'failed'), 'the effect neither reached the downstream nor was refused'];
    else if (kind === 'reopen-retry') verdict = [obs.jobs.some((j) => j.run > 1), 'no job was reopened'];
    else if (family === 'effect') verdict = [sends.length > 0, 'the downstream got no comment'];
    else if (family === 'liar') verdict = [sends.some((r) => r.server === 'liar' && r.path.startsWith(`/${what}/`)), `the liar (${what}) got no comment`];
    else if (family === 'lookup') verdict = [obs.downstream.requests.some((r) => r.kind === 'lookup'), 'no lookup was made'];
    else if (family === 'canary-harm') verdict = [obs.jobs.some((j) => j.routeVersion === record.plan.canary?.broken.version), 'no job was admitted to the broken canary'];
    else if (family === 'canary') verdict = [changed(what.replace('second-', ''), what.startsWith('second-')), `no ${what} was accepted (a race lost, or the canary had already left that state)`];
    else if (kind === 'budget-burst') verdict = [obs.exchanges.some((e) => e.label.startsWith('submit:') && /-b\d+$/.test(e.label)), 'the burst was never sent'];
    else if (kind === 'late-usage') verdict = [obs.adjustments.length > 0, 'no late usage was adjusted'];
    else verdict = [true, ''];
    record.ran[kind] = verdict[0];
    if (!verdict[0]) record.notRun[kind] = verdict[1];
  }
}
