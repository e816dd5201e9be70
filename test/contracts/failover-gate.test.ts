import { randomUUID } from 'node:crypto';
import { eligibility, type GateSettings } from '../../src/contracts/eligibility';
import { verifyProvider } from '../../src/contracts/verify';
import { createRegistry } from '../../src/operations/registry';
import type { RegisteredOperation } from '../../src/operations/operation';
import { SIM_ROUTE } from '../../src/sim/providers';
import { auth, isTerminalJob, KEYS, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

// The demo file's support.reply (operations/demo.yaml).
const supportReply = createRegistry().get('support.reply')!;

const gate: GateSettings = { maxAgeMs: 24 * 3_600_000, demotion: { window: 20, minSamples: 5, threshold: 0.5 } };
const backup = SIM_ROUTE[1]!;
const primary = SIM_ROUTE[0]!;

/** Invariant 6 on the real stack: failover only to a provider verified against the contract. */
describe('the failover gate', () => {
  let stack: TestStack;
  let operation: RegisteredOperation;
  beforeAll(async () => {
    stack = await startTestStack({ verify: false, env: { ONCEFLOW_MAX_ATTEMPTS: '2' } });
    operation = createRegistry().get('support.reply')!;
  });
  afterAll(() => stack.close());

  const verify = (step = backup, fixtures?: Array<{ name: string; input: Record<string, unknown> }>, op = operation) =>
    verifyProvider({ db: stack.db.pool, operations: createRegistry(), providers: stack.providers, routeFor: () => SIM_ROUTE }, op, step, { samples: 2, timeoutMs: 5_000, fixtures });
  const jobRequests = (requests: Array<{ requestId: string }>) => requests.filter((r) => !r.requestId.startsWith('verify-'));
  const clearVerifications = () => stack.db.pool.query('DELETE FROM provider_contracts');

  it('never fails over to a fallback that answered off-contract during verification', async () => {
    // Arrange: the backup adds a top-level key while being verified.
    await clearVerifications();
    const failed = await verify(backup, [{ name: 'extra key', input: { ticketId: 'V-1', customerMessage: 'hello @sim(sim-backup:extra-key)', channel: 'email' } }]);
    expect(failed.passed).toBe(false);
    const before = jobRequests(stack.sims.backup.requests()).length;

    // Act: the primary breaks the contract, so the job would fail over.
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:extra-key)' });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(job.status).toBe('failed');
    expect(job.attempts.map((a: any) => a.provider)).toEqual(['sim-primary', 'sim-primary']);
    expect(jobRequests(stack.sims.backup.requests())).toHaveLength(before);
    const skipped = job.events.filter((e: any) => e.type === 'route.fallback_skipped');
    expect(skipped[0].detail).toMatchObject({ provider: 'sim-backup', reason: 'failed_verification' });
    expect(job.error.detail).toMatch(/fallbacks skipped: sim-backup\/sim-large: failed_verification/);
  });

  it('fails a job whose every fallback is unverified with the reason, and sends no attempt to them', async () => {
    // Arrange
    await clearVerifications();

    // Act
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:prose)' });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(job.status).toBe('failed');
    expect(job.error.detail).toMatch(/sim-backup\/sim-large: unverified/);
    expect(job.attempts.every((a: any) => a.provider === 'sim-primary')).toBe(true);
  });

  it('fails over from a primary answering off-contract to the verified backup', async () => {
    // Arrange
    await clearVerifications();
    expect((await verify()).passed).toBe(true);

    // Act
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:extra-key)' });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => [a.provider, a.status, a.error?.class])).toEqual([
      ['sim-primary', 'failed', 'contract_violation'],
      ['sim-backup', 'succeeded', undefined],
    ]);
  });

  it('no longer counts a verification once the prompt template changed', async () => {
    // Arrange
    await clearVerifications();
    await verify();
    const changed = { ...operation, prompt: { ...operation.prompt, system: `${operation.prompt.system} Always sign as "Support".` } };

    // Act
    const before = await eligibility(stack.db.pool, operation, backup, 'fallback', gate);
    const after = await eligibility(stack.db.pool, changed, backup, 'fallback', gate);

    // Assert
    expect(before.eligible).toBe(true);
    expect(after).toMatchObject({ eligible: false, reason: 'other_template' });
  });

  it('treats a verification older than the limit as stale', async () => {
    // Arrange
    await clearVerifications();
    await verify();
    await stack.db.pool.query(`UPDATE provider_contracts SET verified_at = now() - interval '25 hours'`);

    // Act
    const verdict = await eligibility(stack.db.pool, operation, backup, 'fallback', gate);

    // Assert
    expect(verdict).toMatchObject({ eligible: false, reason: 'stale' });
  });

  it('fails a verification whose prompt does not fit the model, without calling the provider', async () => {
    // Arrange
    const long = { ...operation, prompt: { ...operation.prompt, system: 'Be kind and precise in every answer. '.repeat(300) } };
    const calls = stack.sims.primary.requests().length;

    // Act
    const record = await verify(primary, undefined, long);

    // Assert
    expect(record.passed).toBe(false);
    expect(JSON.stringify(record.evidence)).toMatch(/tokens; sim-small takes 1536/);
    expect(stack.sims.primary.requests()).toHaveLength(calls);
  });

  it('demotes a primary whose answers keep breaking the contract, until it is verified again', async () => {
    // Arrange: five contract violations by the primary on record.
    await clearVerifications();
    for (let i = 0; i < 5; i++) {
      const { rows } = await stack.db.pool.query(
        `INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id)
         VALUES ('alice', 'support.reply', $1, 'sha256:x', 1, '{}', $1) RETURNING id`,
        [randomUUID()],
      );
      await stack.db.pool.query(
        `INSERT INTO attempts (job_id, operation, seq, provider, model, status, job_version, ended_at, error_class)
         VALUES ($1, 'support.reply', 1, 'sim-primary', 'sim-small', 'failed', 0, now(), 'contract_violation')`,
        [rows[0].id],
      );
    }

    // Act
    const demoted = await eligibility(stack.db.pool, operation, primary, 'primary', gate);
    await verify(primary);
    const restored = await eligibility(stack.db.pool, operation, primary, 'primary', gate);

    // Assert
    expect(demoted).toMatchObject({ eligible: false, reason: 'demoted' });
    expect(restored.eligible).toBe(true);
    await stack.db.pool.query(`DELETE FROM jobs WHERE request_digest = 'sha256:x'`);
  });

  it('keeps a primary whose current verification failed from taking first attempts (the verified backup serves), and one never verified serving', async () => {
    // Arrange: no run-time demotion left by the tests before; the primary answers off-contract while being verified; the backup passes
    await clearVerifications();
    await stack.db.pool.query(`UPDATE attempts SET error_class = 'cleared_by_test' WHERE provider = 'sim-primary' AND error_class = 'contract_violation'`);
    const unverified = await eligibility(stack.db.pool, operation, primary, 'primary', gate);
    const failed = await verify(primary, [{ name: 'extra key', input: { ticketId: 'V-2', customerMessage: 'hello @sim(sim-primary:extra-key)', channel: 'email' } }]);
    expect(failed.passed).toBe(false);
    expect((await verify(backup)).passed).toBe(true);

    // Act
    const submitted = await submitReply(stack, { message: 'Hi after a failed verification' });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(unverified.eligible).toBe(true);
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => a.provider)).toEqual(['sim-backup']);
    expect(job.events.find((e: any) => e.type === 'route.fallback_skipped')?.detail).toMatchObject({ provider: 'sim-primary', reason: 'failed_verification' });
    await clearVerifications();
  });

  it('shows operators each provider, its verification and why it may or may not take attempts', async () => {
    // Arrange: no run-time record (the earlier tests' violations would demote the primary), the backup verified.
    await stack.db.pool.query('DELETE FROM jobs');
    await clearVerifications();
    await verify();

    // Act
    const denied = await stack.app.inject({ method: 'GET', url: '/v1/providers', headers: auth(KEYS.alice) });
    const listed = await stack.app.inject({ method: 'GET', url: '/v1/providers', headers: auth(KEYS.operator) });

    // Assert
    expect(denied.statusCode).toBe(403);
    expect(listed.statusCode).toBe(200);
    const byName = Object.fromEntries(listed.json().providers.map((p: any) => [p.name, p]));
    expect(byName['sim-backup'].routes[0]).toMatchObject({ operation: 'support.reply', role: 'fallback', eligible: true, latestVerification: { passed: true } });
    expect(byName['sim-primary'].routes[0]).toMatchObject({ role: 'primary', eligible: true });
  });

  it('lets operators verify providers through the API', async () => {
    await clearVerifications();
    const response = await stack.app.inject({ method: 'POST', url: '/v1/providers/verify', headers: auth(KEYS.operator), payload: { provider: 'sim-backup' } });
    expect(response.statusCode).toBe(200);
    // Every operation whose route uses the provider: the two demo operations and the demo alias.
    expect(response.json().verifications.map((v: any) => [v.operation, v.provider, v.model, v.passed])).toEqual([
      ['support.reply', 'sim-backup', 'sim-large', true],
      ['ticket.summarize', 'sim-backup', 'sim-large', true],
      ['support-chat', 'sim-backup', 'sim-large', true],
    ]);
    expect((await eligibility(stack.db.pool, supportReply, backup, 'fallback', gate)).eligible).toBe(true);
  });
});
