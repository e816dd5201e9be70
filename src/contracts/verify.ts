import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { recordVerification, type VerificationRecord } from '../ledger/contracts';
import type { RegisteredOperation } from '../operations/operation';
import type { OperationRegistry } from '../operations/registry';
import { ProviderCallError, type ProviderAdapter } from '../providers/types';
import type { RouteStep } from '../temporal/contract';
import { checkOutput, excerpt } from './output';
import { checkRender } from './render-check';
import { ONCEFLOW_VERSION } from '../version';

export interface VerifyDeps {
  db: Pool;
  operations: OperationRegistry;
  providers: ReadonlyMap<string, ProviderAdapter>;
  routeFor(operation: string): RouteStep[];
}

export interface VerifyOptions {
  /** Samples per probe fixture (low temperature, but models still vary). */
  samples: number;
  timeoutMs: number;
  /** Probe inputs; by default the operation's own. */
  fixtures?: Array<{ name: string; input: Record<string, unknown> }>;
}

/**
 * Runs the operation's probe fixtures against one provider and model, several
 * samples each at temperature 0: every prompt must render and fit the model's
 * window, every answer must keep the output contract. Records the outcome.
 */
export async function verifyProvider(deps: VerifyDeps, operation: RegisteredOperation, step: RouteStep, options: VerifyOptions): Promise<VerificationRecord> {
  const provider = deps.providers.get(step.provider);
  const fixtures = options.fixtures ?? operation.probes ?? [];
  const results = [];
  let passed = fixtures.length > 0 && provider !== undefined;
  let templateHashValue = '';
  for (const fixture of fixtures) {
    const render = checkRender(operation, step.model, fixture.input);
    templateHashValue = render.templateHash;
    const samples = [];
    if (render.ok && provider) {
      for (let sample = 0; sample < options.samples; sample++) {
        // Each probe keeps what a job's attempt would: its request id, route, terminal state and usage.
        const requestId = `verify-${randomUUID()}`;
        const probe = { requestId, route: { provider: step.provider, model: step.model } };
        try {
          const answer = await provider.complete({ model: step.model, messages: render.messages!, requestId, timeoutMs: options.timeoutMs, temperature: 0 });
          const check = checkOutput(operation, answer.content);
          const usage = answer.usage ? { usage: answer.usage } : {};
          samples.push(check.ok ? { ok: true, ...probe, outcome: 'succeeded', ...usage } : { ok: false, ...probe, outcome: 'contract_violation', ...usage, violations: check.violations, output: check.excerpt });
        } catch (err) {
          const outcome = err instanceof ProviderCallError ? `${err.failure.outcome}:${err.failure.class}` : 'unknown:error';
          samples.push({ ok: false, ...probe, outcome, error: err instanceof ProviderCallError ? `${err.failure.outcome} (${err.failure.class}): ${err.failure.detail}` : excerpt(String((err as Error).message), 500) });
        }
      }
    }
    const fixturePassed = render.ok && samples.length > 0 && samples.every((s) => s.ok);
    passed &&= fixturePassed;
    results.push({ name: fixture.name, passed: fixturePassed, render: { ok: render.ok, promptTokens: render.promptTokens, budgetTokens: render.budgetTokens, problems: render.problems }, samples });
  }
  const hash = templateHashValue || checkRender(operation, step.model, {}).templateHash;
  // The configuration this verification holds for: re-pointing the provider makes it stale (eligibility).
  const config = { ...(provider?.baseUrl ? { baseUrl: provider.baseUrl } : {}), model: step.model, templateHash: hash, schemaVersion: operation.schemaVersion, onceflowVersion: ONCEFLOW_VERSION };
  return recordVerification(deps.db, {
    operation: operation.name,
    schemaVersion: operation.schemaVersion,
    templateHash: hash,
    provider: step.provider,
    model: step.model,
    passed,
    samples: options.samples,
    evidence: { config, fixtures: results, ...(provider ? {} : { error: `provider ${step.provider} is not configured` }), ...(fixtures.length ? {} : { error: 'the operation has no probe fixtures' }) },
  });
}

/** Verifies every (operation, provider, model) of the routes, optionally filtered. */
export async function verifyContracts(deps: VerifyDeps, filter: { operation?: string; provider?: string }, options: VerifyOptions): Promise<VerificationRecord[]> {
  const records: VerificationRecord[] = [];
  for (const operation of deps.operations.values()) {
    if (filter.operation && operation.name !== filter.operation) continue;
    const seen = new Set<string>();
    for (const step of deps.routeFor(operation.name)) {
      if (filter.provider && step.provider !== filter.provider) continue;
      if (seen.has(`${step.provider}/${step.model}`)) continue;
      seen.add(`${step.provider}/${step.model}`);
      records.push(await verifyProvider(deps, operation, step, options));
    }
  }
  return records;
}
