import { randomUUID } from 'node:crypto';
import { Drill, type DrillResult, type DrillSkipped, type EffectVerification } from '../../ledger/effect-verifications';
import { ONCEFLOW_VERSION } from '../../version';
import type { EffectAdapter, EffectContext, EffectProbe, LookupResult, PerformResult } from '../types';
import { startFaultProxy, type FaultProxy } from './fault-proxy';

/** The keys of one run of drills: recognisable downstream (`onceflow-verify-…`), fresh each run, with capitals (a key stored transformed shows). */
export const DRILL_KEY_PREFIX = 'onceflow-verify-';

/**
 * Checks the claims an effect's declaration makes before recovery relies on
 * them (invariant 14), the way a provider is verified against its contract:
 * drills with fresh keys against the downstream the declaration names (or its
 * verify target), every request through a fault proxy of Onceflow's own that
 * records it and can drop an answer after the downstream acted.
 *
 * 1. send K1: done, with a receipt R1;
 * 2. look K1 up: found, naming what R1 names;
 * 3. look up K2, never sent: not found;
 * 4. deduplicates: send K1 again: the same R1, and the lookup still finds R1;
 * 5. disconnect: send K3 with its answer dropped: the lookup finds it;
 * 6. classification: the malformed probe is refused (4xx), and not found.
 *
 * A drill whose claim is not made, or that cannot run (no probe, the send
 * failed), is recorded as skipped with why.
 * @throws when the fault proxy cannot start (nothing was sent).
 */
export async function runDrills(adapter: EffectAdapter, now: () => number = Date.now): Promise<Omit<EffectVerification, 'verifiedAt'>> {
  const verifiable = adapter.verifiable;
  if (!verifiable) throw new Error(`effect ${adapter.name} makes no claim to verify`);
  const proxy = await startFaultProxy({ target: verifiable.drillOrigin });
  try {
    const drills = await drill(adapter.name, verifiable.via(proxy.url), verifiable.probes[0], verifiable.malformed, proxy, now);
    const results = Object.values(drills).filter((result): result is DrillResult => !('skipped' in result));
    return {
      effect: adapter.name,
      declarationDigest: verifiable.declarationDigest,
      host: verifiable.host,
      onceflowVersion: ONCEFLOW_VERSION,
      passed: drills[Drill.send] !== undefined && !('skipped' in drills[Drill.send]!) && results.every((result) => result.passed),
      drills,
    };
  } finally {
    await proxy.close();
  }
}

async function drill(name: string, effect: EffectAdapter, probe: EffectProbe | undefined, malformed: EffectProbe | undefined, proxy: FaultProxy, now: () => number) {
  const drills: Partial<Record<Drill, DrillResult | DrillSkipped>> = {};
  const run = randomUUID().slice(0, 8);
  const keyOf = (label: string) => `${DRILL_KEY_PREFIX}${name}-${run}-${label}`;
  const context = (key: string, values: EffectProbe): EffectContext => ({ jobId: `${DRILL_KEY_PREFIX}${run}`, operation: 'onceflow.verify', input: values.input, output: values.output, key });
  const skip = (why: string): DrillSkipped => ({ skipped: true, why });
  const hasLookup = effect.lookup !== undefined;

  /** Runs one drill's steps, timed, with the requests the proxy saw meanwhile. */
  async function timed(keys: string[], steps: (receipts: Array<Record<string, unknown>>) => Promise<{ passed: boolean; detail: string }>): Promise<DrillResult> {
    const startedMs = now();
    const seen = proxy.requests().length;
    const receipts: Array<Record<string, unknown>> = [];
    let outcome: { passed: boolean; detail: string };
    try {
      outcome = await steps(receipts);
    } catch (err) {
      outcome = { passed: false, detail: (err as Error).message ?? String(err) };
    }
    const requests = proxy.requests().slice(seen).map((request) => ({ method: request.method, url: request.path, ...(request.status !== undefined ? { status: request.status } : {}), outcome: request.status === undefined ? 'no answer' : 'answered' }));
    return { ...outcome, keys, requests, receipts, ms: now() - startedMs };
  }
  const send = (key: string, values: EffectProbe): Promise<PerformResult> => effect.perform!(context(key, values));
  const look = (key: string, values: EffectProbe): Promise<LookupResult> => effect.lookup!(key, context(key, values));

  if (!probe) {
    drills[Drill.send] = skip('no probe is declared (verify.probes)');
    return drills;
  }
  const k1 = keyOf('K1');
  let r1: Record<string, unknown> | undefined;
  drills[Drill.send] = await timed([k1], async (receipts) => {
    const sent = await send(k1, probe);
    if (sent.kind !== 'done') return { passed: false, detail: `the send was ${sent.kind}: ${sent.detail}` };
    r1 = sent.receipt;
    receipts.push(sent.receipt);
    return { passed: true, detail: 'sent, with a receipt' };
  });
  const unsent = r1 === undefined ? skip('the send drill failed') : undefined;

  if (!hasLookup) {
    for (const each of [Drill.lookupFound, Drill.lookupNotFound, Drill.disconnect]) drills[each] = skip('no lookup is declared');
  } else {
    drills[Drill.lookupFound] =
      unsent ??
      (await timed([k1], async (receipts) => {
        const found = await look(k1, probe);
        if (!found.found) return { passed: false, detail: 'the lookup did not find a key it had just taken' };
        receipts.push(found.receipt);
        return sameThing(r1!, found.receipt);
      }));
    const k2 = keyOf('K2');
    drills[Drill.lookupNotFound] = await timed([k2], async (receipts) => {
      const found = await look(k2, probe);
      if (found.found) {
        receipts.push(found.receipt);
        return { passed: false, detail: 'the lookup found a key that was never sent' };
      }
      return { passed: true, detail: 'not found, as never sent' };
    });
    const k3 = keyOf('K3');
    drills[Drill.disconnect] =
      unsent ??
      (await timed([k3], async (receipts) => {
        proxy.dropNextAnswer();
        const sent = await send(k3, probe);
        if (sent.kind !== 'ambiguous') return { passed: false, detail: `with its answer dropped the send was ${sent.kind}, not ambiguous` };
        const found = await look(k3, probe);
        if (!found.found) return { passed: false, detail: 'the lookup did not find a send whose answer was lost: recovery would take it for not sent' };
        receipts.push(found.receipt);
        return { passed: true, detail: 'the lookup found the send whose answer was lost' };
      }));
  }

  if (!effect.repeatSafe) drills[Drill.dedupe] = skip('deduplicates is not claimed');
  else {
    drills[Drill.dedupe] =
      unsent ??
      (await timed([k1], async (receipts) => {
        const again = await send(k1, probe);
        if (again.kind !== 'done') return { passed: false, detail: `the same key again was ${again.kind}: ${again.detail}` };
        receipts.push(again.receipt);
        const same = sameThing(r1!, again.receipt);
        if (!same.passed) return { passed: false, detail: `the same key again made another: ${same.detail}` };
        if (!hasLookup) return { passed: true, detail: 'the same receipt' };
        const found = await look(k1, probe);
        if (!found.found) return { passed: false, detail: 'after the same key again, the lookup did not find it' };
        receipts.push(found.receipt);
        const still = sameThing(r1!, found.receipt);
        return still.passed ? { passed: true, detail: 'the same receipt, and the lookup finds the first' } : { passed: false, detail: `after the same key again, the lookup names another: ${still.detail}` };
      }));
  }

  if (!malformed) drills[Drill.classification] = skip('no malformed probe is declared (verify.malformed)');
  else {
    const k4 = keyOf('K4');
    drills[Drill.classification] = await timed([k4], async () => {
      const sent = await send(k4, malformed);
      if (sent.kind !== 'rejected') return { passed: false, detail: `the malformed probe was ${sent.kind}, not refused with a 4xx` };
      if (hasLookup && (await look(k4, malformed)).found) return { passed: false, detail: 'the malformed probe was refused, yet the lookup finds it: a 4xx does not mean "did not act"' };
      return { passed: true, detail: `refused (${sent.detail}), and not found` };
    });
  }
  return drills;
}

/**
 * Whether two receipts name the same thing: every field both have is equal,
 * and they have one at least (a receipt that is only the status says nothing
 * of which record it is).
 */
function sameThing(first: Record<string, unknown>, second: Record<string, unknown>): { passed: boolean; detail: string } {
  const shared = Object.keys(first).filter((field) => field in second && field !== 'foundBy');
  const named = shared.filter((field) => field !== 'status');
  if (named.length === 0) return shared.length > 0 ? { passed: true, detail: 'found (its receipt names only a status)' } : { passed: false, detail: 'the two receipts share no field' };
  const differ = named.filter((field) => JSON.stringify(first[field]) !== JSON.stringify(second[field]));
  if (differ.length) return { passed: false, detail: differ.map((field) => `${field} ${JSON.stringify(first[field])} then ${JSON.stringify(second[field])}`).join(', ') };
  return { passed: true, detail: `the same ${named.join(', ')}` };
}
