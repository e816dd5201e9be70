/**
 * Invariants 7 and 14 from the downstream's side: what its recordings show,
 * not what Onceflow believes it did.
 */
import type { GatewayObservation } from '../observation';
import type { GatewayViolation } from './kinds';

export function checkEffectOnce(obs: GatewayObservation): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  const { host, method, requests, liars } = obs.downstream;
  for (const effect of obs.effects.filter((e) => e.status === 'succeeded' && !liars.includes(e.name))) {
    const sends = requests.filter((r) => r.server === 'declared' && r.kind === 'send' && r.key === effect.key);
    const name = `effect ${effect.name} of job ${effect.jobId}${effect.resolved ? ' (settled by an operator)' : ''}`;
    if (sends.length !== 1) violations.push({ kind: 'effect-once', detail: `${name} is succeeded, but the downstream recorded ${sends.length} requests with its key` });
    for (const send of sends.filter((s) => s.method !== method || s.host !== host)) {
      violations.push({ kind: 'effect-once', detail: `${name}: a request with its key came as ${send.method} to host ${send.host}, not ${method} to ${host}` });
    }
  }
  // The other half (invariant 7): an effect Onceflow settled failed by itself must not have happened downstream.
  for (const effect of obs.effects.filter((e) => e.status === 'failed' && !e.resolved && obs.downstream.performed.includes(e.key))) {
    violations.push({ kind: 'effect-once', detail: `effect ${effect.name} of job ${effect.jobId} settled failed, but the downstream acted on its key` });
  }
  for (const stray of requests.filter((r) => r.server === 'elsewhere')) {
    violations.push({ kind: 'effect-once', detail: `the redirect target recorded ${stray.method} ${stray.path}${stray.key ? ` with key ${stray.key}` : ''} (answered ${stray.answer})` });
  }
  return violations.slice(0, 4);
}

/**
 * Invariant 14 against the liar: recovery relies on no claim its drill found
 * false. Each key reaches the liar once (no repeat through a false
 * deduplication or a false "not found"), a succeeded effect is one stored
 * comment (no settling from a false "found"), and every send whose answer
 * proved nothing went to review through the repeat gate.
 */
export function checkLiars(obs: GatewayObservation): GatewayViolation[] {
  const violations: GatewayViolation[] = [];
  const { requests, comments, liars } = obs.downstream;
  for (const effect of obs.effects.filter((e) => liars.includes(e.name))) {
    const name = `effect ${effect.name} of job ${effect.jobId}${effect.resolved ? ' (settled by an operator)' : ''}`;
    const sends = requests.filter((r) => r.server === 'liar' && r.kind === 'send' && r.key === effect.key);
    const stored = comments.filter((c) => c.key === effect.key).length;
    if (sends.length > 1) violations.push({ kind: 'liar', detail: `${name}: the liar got ${sends.length} sends with its key (answered ${sends.map((s) => s.answer).join(', ')}): recovery repeated through a claim its drill found false` });
    if (stored > 1) violations.push({ kind: 'liar', detail: `${name}: the liar stored ${stored} comments with its key` });
    if (effect.status === 'succeeded' && stored === 0) violations.push({ kind: 'liar', detail: `${name} is succeeded, but the liar stored no comment with its key: settled from a lookup its drill found false` });
    const unproven = sends.find((s) => !/^[24]\d\d$/.test(s.answer));
    if (unproven && !obs.events.some((e) => e.jobId === effect.jobId && e.type === 'effect.repeat_refused')) {
      violations.push({ kind: 'liar', detail: `${name}: its send was answered ${unproven.answer}, and recovery did not refuse to rely on the liar's claim (no effect.repeat_refused)` });
    }
  }
  return violations.slice(0, 4);
}

export function checkSecretHost(obs: GatewayObservation): GatewayViolation[] {
  const { host, secret, requests } = obs.downstream;
  return requests
    .filter((r) => (r.server !== 'declared' || r.host !== host) && Object.values(r.headers).some((value) => value.includes(secret)))
    .slice(0, 3)
    .map((r) => ({ kind: 'secret-host' as const, detail: `${r.method} ${r.path} carried the declared secret to ${r.server === 'declared' ? '' : 'the other origin, '}host ${r.host}, not ${host}` }));
}
