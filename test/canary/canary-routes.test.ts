import { inCanaryShare } from '../../src/canary/share';
import { contractKeyOf } from '../../src/contracts/eligibility';
import { verifyContracts } from '../../src/contracts/verify';
import { recordVerification } from '../../src/ledger/contracts';
import { promoteCanary, stopCanaryIfRunning } from '../../src/ledger/route-versions';
import { createRegistry } from '../../src/operations/registry';
import { routeVersionOf } from '../../src/providers/route-version';
import { SIM_ROUTE } from '../../src/sim/providers';
import { pollUntil } from '../harness/poll';
import { auth, isTerminalJob, KEYS, runReply, startTestStack, submitReply, waitForJob, withoutEffectVerifications, type TestStack } from '../harness/stack';

const OPERATION = 'support.reply';
const BASELINE = routeVersionOf(SIM_ROUTE);
/** A new order: the backup first. */
const BACKUP_FIRST = [
  { provider: 'sim-backup', model: 'sim-large' },
  { provider: 'sim-primary', model: 'sim-small' },
];
/** A route with a step no baseline has: the primary provider with the large model as fallback. */
const WITH_NEW_MODEL = [
  { provider: 'sim-backup', model: 'sim-large' },
  { provider: 'sim-primary', model: 'sim-large' },
];

let names = 0;
const nameOf = (what: string) => `${what}-${++names}-${Date.now().toString(36)}`;
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
/** Waits until an instant has passed. */
const untilPast = (instant: string) => new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(instant) - Date.now()) + 100));

describe('canary routes', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Every change reaches the next job at once (the default keeps an operation's canary for a second).
    stack = await startTestStack({ env: { ONCEFLOW_ROUTES_CACHE_MS: '0' } });
    // The new model's step is verified, as an operator would before rolling it out.
    await verifyContracts({ db: stack.db.pool, operations: createRegistry(), providers: stack.providers, routeFor: () => WITH_NEW_MODEL }, {}, { samples: 1, timeoutMs: 5_000 });
  });
  afterAll(() => stack.close());

  const operator = (method: 'GET' | 'POST', url: string, payload?: unknown, key: string = KEYS.operator) =>
    stack.app.inject({ method, url, headers: auth(key), ...(payload === undefined ? {} : { payload: payload as object }) });

  const start = (body: Record<string, unknown>, key?: string) =>
    operator('POST', `/v1/routes/${OPERATION}/canaries`, { version: nameOf('canary'), steps: BACKUP_FIRST, owner: 'olga', expiresAt: inMs(3_600_000), sharePercent: 100, ...body }, key);

  const change = (version: string, action: 'promote' | 'stop' | 'rollback', reason = `${action} in a test`) =>
    operator('POST', `/v1/routes/${OPERATION}/canaries/${version}/${action}`, action === 'promote' ? {} : { reason });

  const routeVersionOfJob = async (jobId: string): Promise<string> => (await stack.db.pool.query('SELECT route_version FROM jobs WHERE id = $1', [jobId])).rows[0].route_version;

  const versionView = async (version: string) => {
    const routes = (await operator('GET', '/v1/routes')).json();
    return routes.operations.find((o: any) => o.operation === OPERATION).versions.find((v: any) => v.version === version);
  };

  /** Leaves no canary running for the next test. */
  afterEach(async () => {
    await stack.db.pool.query(`UPDATE route_versions SET state = 'stopped', ended_at = now() WHERE state = 'running'`);
    await stack.db.pool.query(`UPDATE route_versions SET state = 'rolled_back', ended_at = now() WHERE state = 'promoted'`);
  });

  it('admits a canary job to the canary version, records it, and runs the canary route', async () => {
    // Arrange
    const started = await start({});
    expect(started.statusCode).toBe(201);
    const version = started.json().version;

    // Act
    const job = await runReply(stack, 'Where is my order?');

    // Assert
    expect(job.status).toBe('succeeded');
    expect(await routeVersionOfJob(job.id)).toBe(version);
    expect(job.attempts.map((a: any) => `${a.provider}/${a.model}`)).toEqual(['sim-backup/sim-large']);
    expect(started.json()).toMatchObject({ kind: 'canary', state: 'running', owner: 'olga', sharePercent: 100, previousVersion: BASELINE, steps: BACKUP_FIRST });
    const view = await versionView(version);
    expect(view).toMatchObject({ admitted: 1, open: 0, window: { size: 200, jobs: 1, succeeded: 1, withContractViolations: 0 } });
    // The worker counts the job just after its terminal write commits: a moment after the job reads as terminal.
    const counted = async () => Object.fromEntries((await stack.metrics.jobOutcomes.get()).values.filter((v) => v.labels.route === version).map((v) => [v.labels.outcome, v.value]));
    await pollUntil(async () => (await counted()).succeeded !== undefined, { timeoutMs: 5_000, everyMs: 25 });
    expect(await counted()).toEqual({ admitted: 1, succeeded: 1 });
  });

  it('keeps a job on the canary it was admitted to after the canary stops; new jobs take the previous route', async () => {
    // Arrange: a canary job whose first attempt hangs (unknown)
    const version = (await start({ steps: WITH_NEW_MODEL })).json().version;
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-backup:hang)' });
    const waiting = await waitForJob(stack, submitted.json().id, (job) => job.status === 'awaiting_resolution');

    // Act: the canary stops; the unknown attempt is resolved; a new job arrives
    expect((await change(version, 'stop')).statusCode).toBe(200);
    const resolved = await operator('POST', `/v1/jobs/${waiting.id}/attempts/${waiting.attempts[0].id}/resolution`, { outcome: 'failed', reason: 'the provider has no such request' });
    const old = await waitForJob(stack, waiting.id, isTerminalJob);
    const fresh = await runReply(stack, 'A new one');

    // Assert: the old job's next attempt is the canary's fallback (a step no other version has)
    expect(resolved.statusCode).toBe(200);
    expect(old.status).toBe('succeeded');
    expect(old.attempts.map((a: any) => `${a.provider}/${a.model}`)).toEqual(['sim-backup/sim-large', 'sim-primary/sim-large']);
    expect(await routeVersionOfJob(old.id)).toBe(version);
    expect(await routeVersionOfJob(fresh.id)).toBe(BASELINE);
    expect(fresh.attempts.map((a: any) => `${a.provider}/${a.model}`)).toEqual(['sim-primary/sim-small']);
  });

  it('stops by itself within its window when its provider breaks the contract on 5 % of answers, says why, and new jobs take the previous route', async () => {
    // Arrange: at most 2 % of the last 50 jobs with a contract violation (one); every 20th answer of the canary's primary breaks it
    const version = (await start({ thresholds: { window: 50, contractViolationsPercent: 2 } })).json().version;

    // Act: jobs in batches of 5 until the canary has stopped (or 50 jobs went to it)
    let sent = 0;
    let state = 'running';
    while (state === 'running' && sent < 50) {
      await Promise.all(
        Array.from({ length: 5 }, () => {
          sent++;
          return runReply(stack, sent % 20 === 0 ? `Order ${sent} @sim(sim-backup:extra-key)` : `Order ${sent}`);
        }),
      );
      state = (await versionView(version)).state;
    }
    const after = await runReply(stack, 'After the stop');

    // Assert
    const view = await versionView(version);
    expect(view.state).toBe('stopped');
    expect(sent).toBeLessThanOrEqual(50);
    expect(view.window.withContractViolations).toBe(2);
    expect(view.changedBy).toBe('canary');
    const stopped = view.events.find((e: any) => e.type === 'canary.stopped');
    expect(stopped.detail).toMatchObject({ by: 'canary', cause: 'threshold', threshold: 'contract_violations', window: 50, rolledBackTo: BASELINE, counts: expect.objectContaining({ withContractViolations: 2 }) });
    expect(stopped.detail.reason).toMatch(/2 jobs with contract violations, over 2 % of the last 50 jobs/);
    expect(await routeVersionOfJob(after.id)).toBe(BASELINE);
  });

  it('stops by itself while its jobs still wait on unknown attempts, not only once they end', async () => {
    // Arrange: a canary whose primary black-holes every request; more than 5 % of a window of 20 is two jobs
    const version = (await start({ thresholds: { window: 20, unknownsPercent: 5 } })).json().version;

    // Act: two jobs hang on the canary's primary and wait for an operator
    for (const n of [1, 2]) {
      const submitted = await submitReply(stack, { message: `Black hole ${n} @sim(sim-backup:hang)` });
      await waitForJob(stack, submitted.json().id, (job) => job.status === 'awaiting_resolution');
    }
    await pollUntil(async () => (await versionView(version)).state !== 'running', { timeoutMs: 5_000, everyMs: 50 });
    const after = await runReply(stack, 'After the stop');

    // Assert
    const view = await versionView(version);
    expect(view.state).toBe('stopped');
    const stopped = view.events.find((e: any) => e.type === 'canary.stopped');
    expect(stopped.detail).toMatchObject({ by: 'canary', cause: 'threshold', threshold: 'unknowns', counts: expect.objectContaining({ withUnknowns: 2 }) });
    expect(await routeVersionOfJob(after.id)).toBe(BASELINE);
  });

  it('stops by itself at the first job with an effect in review, while that job waits for an operator', async () => {
    // Arrange: the default allows no effect in review; the downstream fails without recording, and its lookup is not verified, so recovery may rely on nothing
    const version = (await start({ thresholds: { window: 20 } })).json().version;
    const verifyAgain = await withoutEffectVerifications(stack);

    // Act
    const submitted = await submitReply(stack, { message: 'Lost send @sink(status=500)' });
    await waitForJob(stack, submitted.json().id, (job) => job.effects?.[0]?.status === 'needs_review');
    await verifyAgain();
    await pollUntil(async () => (await versionView(version)).state !== 'running', { timeoutMs: 5_000, everyMs: 50 });

    // Assert
    const view = await versionView(version);
    expect(view.state).toBe('stopped');
    expect(view.events.find((e: any) => e.type === 'canary.stopped').detail).toMatchObject({ threshold: 'effects_in_review', counts: expect.objectContaining({ withEffectsInReview: 1 }) });
  });

  it('rolls back by itself when it expires unpromoted: the next job takes the previous route, and an event says why', async () => {
    // Arrange
    const started = (await start({ expiresAt: inMs(3_000) })).json();
    const version = started.version;
    const during = await runReply(stack, 'While it runs');

    // Act
    await untilPast(started.expiresAt);
    const after = await runReply(stack, 'After it expired');

    // Assert
    expect(await routeVersionOfJob(during.id)).toBe(version);
    expect(await routeVersionOfJob(after.id)).toBe(BASELINE);
    const view = await versionView(version);
    expect(view.state).toBe('stopped');
    expect(view.events.find((e: any) => e.type === 'canary.stopped').detail).toMatchObject({ by: 'canary', cause: 'expired', rolledBackTo: BASELINE });
  });

  it('is stopped by the sweeper once expired, even when no job arrives', async () => {
    // Arrange
    const started = (await start({ expiresAt: inMs(3_000) })).json();
    const version = started.version;
    await untilPast(started.expiresAt);

    // Act
    await stack.activities.sweepJobs();

    // Assert
    const view = await versionView(version);
    expect(view.state).toBe('stopped');
    expect(view.reason).toMatch(/^expired at .* without promotion$/);
  });

  it("routes a new job to a running canary exactly when its id's hash falls in the share", async () => {
    // Arrange
    const version = (await start({ sharePercent: 50 })).json().version;

    // Act
    const submitted = await Promise.all(Array.from({ length: 16 }, (_, i) => submitReply(stack, { message: `Half ${i}` })));

    // Assert
    const ids = submitted.map((response) => response.json().id);
    for (const id of ids) expect(await routeVersionOfJob(id)).toBe(inCanaryShare(id, 5_000) ? version : BASELINE);
    await Promise.all(ids.map((id) => waitForJob(stack, id, isTerminalJob)));
  });

  it('rolls a promoted canary back to the version it replaced, and that one back to the baseline', async () => {
    // Arrange: A promoted, then B started against it and promoted (A superseded)
    const a = (await start({ steps: BACKUP_FIRST })).json().version;
    expect((await change(a, 'promote')).statusCode).toBe(200);
    const b = (await start({ steps: WITH_NEW_MODEL })).json();
    expect(b.previousVersion).toBe(a);
    expect((await change(b.version, 'promote')).statusCode).toBe(200);
    expect((await versionView(a)).state).toBe('superseded');

    // Act
    expect((await change(b.version, 'rollback')).statusCode).toBe(200);
    const afterB = await runReply(stack, 'After B rolled back');
    expect((await change(a, 'rollback')).statusCode).toBe(200);
    const afterA = await runReply(stack, 'After A rolled back');

    // Assert
    expect(await routeVersionOfJob(afterB.id)).toBe(a);
    expect(afterB.attempts.map((x: any) => `${x.provider}/${x.model}`)).toEqual(['sim-backup/sim-large']);
    const restored = await versionView(a);
    expect(restored.state).toBe('rolled_back');
    expect(restored.events.map((e: any) => e.type)).toEqual(['canary.started', 'canary.promoted', 'canary.superseded', 'canary.restored', 'canary.rolled_back']);
    expect(await routeVersionOfJob(afterA.id)).toBe(BASELINE);
  });

  it('rolls back to the version this one superseded, though it was started against another', async () => {
    // Arrange: A promoted, then B over it; C started against B; B rolled back (A restored); then C promoted over A
    const a = (await start({ steps: BACKUP_FIRST })).json().version;
    expect((await change(a, 'promote')).statusCode).toBe(200);
    const b = (await start({ steps: WITH_NEW_MODEL })).json().version;
    expect((await change(b, 'promote')).statusCode).toBe(200);
    const c = (await start({ steps: BACKUP_FIRST })).json();
    expect(c.previousVersion).toBe(b);
    expect((await change(b, 'rollback')).statusCode).toBe(200);
    expect((await change(c.version, 'promote')).statusCode).toBe(200);

    // Act
    expect((await change(c.version, 'rollback')).statusCode).toBe(200);
    const after = await runReply(stack, 'After C rolled back');

    // Assert
    expect(await routeVersionOfJob(after.id)).toBe(a);
  });

  it('serves every new job once promoted, and none once rolled back', async () => {
    // Arrange: a canary with the smallest share
    const version = (await start({ sharePercent: 0.01 })).json().version;

    // Act
    const promoted = await change(version, 'promote');
    const jobs = await Promise.all(Array.from({ length: 4 }, (_, i) => runReply(stack, `Promoted ${i}`)));
    const rolledBack = await change(version, 'rollback');
    const after = await runReply(stack, 'Rolled back');

    // Assert
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json()).toMatchObject({ state: 'promoted', promotedAt: expect.any(String) });
    for (const job of jobs) expect(await routeVersionOfJob(job.id)).toBe(version);
    expect(rolledBack.json()).toMatchObject({ state: 'rolled_back' });
    expect(await routeVersionOfJob(after.id)).toBe(BASELINE);
  });

  it('refuses to start a canary whose fallback has no passing verification (invariant 6), and writes nothing', async () => {
    // Arrange
    const version = nameOf('unverified');

    // Act
    const response = await start({ version, steps: [{ provider: 'sim-primary', model: 'sim-small' }, { provider: 'sim-backup', model: 'never-verified' }] });

    // Assert
    expect(response.statusCode).toBe(409);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ type: expect.stringMatching(/route-not-eligible$/), steps: [{ position: 1, provider: 'sim-backup', model: 'never-verified', reason: 'unverified' }] });
    expect(await versionView(version)).toBeUndefined();
  });

  it('lets exactly one of a promotion and an automatic stop racing win', async () => {
    for (let round = 0; round < 8; round++) {
      // Arrange
      const version = (await start({})).json().version;
      const key = { operation: OPERATION, version };

      // Act
      const [promote, stop] = await Promise.allSettled([
        promoteCanary(stack.db.pool, key, { by: 'operator:test', reason: 'looks good' }),
        stopCanaryIfRunning(stack.db.pool, key, { by: 'canary', reason: 'threshold crossed', detail: { cause: 'threshold' } }),
      ]);

      // Assert
      const promoted = promote.status === 'fulfilled';
      const stopped = stop.status === 'fulfilled' && stop.value !== undefined;
      expect([promoted, stopped].filter(Boolean)).toHaveLength(1);
      const view = await versionView(version);
      expect(view.state).toBe(promoted ? 'promoted' : 'stopped');
      expect(view.events.map((e: any) => e.type)).toEqual(['canary.started', promoted ? 'canary.promoted' : 'canary.stopped']);
      if (promoted) await change(version, 'rollback');
    }
  });

  it('answers a promotion of a stopped canary with 409 naming its state', async () => {
    const version = (await start({})).json().version;
    await change(version, 'stop');
    const response = await change(version, 'promote');
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ type: expect.stringMatching(/route-version-state$/), state: 'stopped' });
  });

  it('refuses to promote a canary past its expiry, which the sweeper has not stopped yet', async () => {
    const started = await start({ expiresAt: inMs(3_000) });
    expect(started.json()).toMatchObject({ state: 'running' });
    await untilPast(started.json().expiresAt);
    const response = await change(started.json().version, 'promote');
    expect(response.statusCode).toBe(409);
    expect((await versionView(started.json().version)).state).toBe('running');
  });

  it('allows one running canary per operation', async () => {
    expect((await start({})).statusCode).toBe(201);
    const second = await start({});
    expect(second.statusCode).toBe(409);
    expect(second.json().detail).toMatch(/already running/);
  });

  it('is for operators only: a tenant key gets 403 on every route', async () => {
    const version = (await start({})).json().version;
    const responses = await Promise.all([
      operator('GET', '/v1/routes', undefined, KEYS.alice),
      start({}, KEYS.alice),
      stack.app.inject({ method: 'POST', url: `/v1/routes/${OPERATION}/canaries/${version}/promote`, headers: auth(KEYS.alice), payload: {} }),
      stack.app.inject({ method: 'POST', url: `/v1/routes/${OPERATION}/canaries/${version}/stop`, headers: auth(KEYS.alice), payload: { reason: 'no' } }),
    ]);
    expect(responses.map((r) => r.statusCode)).toEqual([403, 403, 403, 403]);
    expect((await versionView(version)).state).toBe('running');
  });

  it.each([
    ['a share of 0', { sharePercent: 0 }, '/sharePercent'],
    ['a share under 0.01', { sharePercent: 0.001 }, '/sharePercent'],
    ['no owner', { owner: undefined }, '/owner'],
    ['an expiry in the past', { expiresAt: new Date(Date.now() - 1_000).toISOString() }, '/expiresAt'],
    ['an expiry too far away', { expiresAt: inMs(31 * 86_400_000) }, '/expiresAt'],
    ['a provider that is not declared', { steps: [{ provider: 'nobody', model: 'm' }] }, '/steps/0/provider'],
    ['a step given twice', { steps: [BACKUP_FIRST[0], BACKUP_FIRST[0]] }, '/steps'],
    ["a baseline's name", { version: 'config-abc' }, '/version'],
    ['an unknown threshold', { thresholds: { window: 50, typo: 1 } }, '/thresholds/typo'],
    ['a window too small', { thresholds: { window: 1 } }, '/thresholds/window'],
  ])('answers a canary with %s with 400 problem+json naming the field', async (_name, body, pointer) => {
    const response = await start(body);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json().errors.map((e: any) => e.pointer)).toContain(pointer);
  });

  it('answers 400 for a stop without a reason, 404 for an unknown operation or version', async () => {
    const version = (await start({})).json().version;
    const noReason = await operator('POST', `/v1/routes/${OPERATION}/canaries/${version}/stop`, {});
    const unknownOperation = await operator('POST', '/v1/routes/no.such/canaries', { version: 'x', steps: BACKUP_FIRST, owner: 'o', expiresAt: inMs(60_000), sharePercent: 5 });
    const unknownVersion = await change('no-such-version', 'stop');
    expect([noReason.statusCode, unknownOperation.statusCode, unknownVersion.statusCode]).toEqual([400, 404, 404]);
  });

  it('shows the baseline and what serves new jobs in GET /v1/routes', async () => {
    // Arrange
    const version = (await start({ sharePercent: 5 })).json().version;

    // Act
    const routes = (await operator('GET', '/v1/routes')).json();

    // Assert
    const operation = routes.operations.find((o: any) => o.operation === OPERATION);
    expect(operation).toMatchObject({ baseline: BASELINE, serving: { version: BASELINE, canary: { version, sharePercent: 5 } } });
    expect(operation.versions.find((v: any) => v.version === BASELINE)).toMatchObject({ kind: 'baseline', state: 'recorded', steps: SIM_ROUTE });
  });
  it("weighs a canary job's own primary, not the step the worker opened the job before at", async () => {
    // Arrange: a baseline job (the worker last opened sim-primary/sim-small), a canary that opens at sim-backup/sim-large,
    // and then a verification of that step that failed.
    const baseline = await runReply(stack, 'Where is my order?');
    expect((await start({})).statusCode).toBe(201);
    const failed = { ...contractKeyOf(createRegistry().get(OPERATION)!, BACKUP_FIRST[0]!), passed: false, samples: 1, evidence: {} };
    await recordVerification(stack.db.pool, failed);
    try {

      // Act
      const job = await runReply(stack, 'Where is my parcel?');

      // Assert: the canary's primary took no attempt; the long way skipped it for its failed verification.
      expect(baseline.attempts.map((a: any) => `${a.provider}/${a.model}`)).toEqual(['sim-primary/sim-small']);
      expect(job.attempts.map((a: any) => `${a.provider}/${a.model}`)).not.toContain('sim-backup/sim-large');
      expect(job.events.find((e: any) => e.type === 'route.fallback_skipped')?.detail).toMatchObject({ provider: 'sim-backup', reason: 'failed_verification' });
    } finally {
      await stack.db.pool.query('DELETE FROM provider_contracts WHERE operation = $1 AND provider = $2 AND model = $3 AND NOT passed', [failed.operation, failed.provider, failed.model]);
    }
  });
});
