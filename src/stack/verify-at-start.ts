import type { OnceflowConfig } from '../config';
import { eligibility } from '../contracts/eligibility';
import { verifyContracts, type VerifyDeps } from '../contracts/verify';

export interface StartLog {
  info(line: string): void;
  /** Loud: what an operator must not miss (stderr). */
  warn(line: string): void;
}

/**
 * Before the stack takes jobs, verifies every route step of every operation
 * against its output contract, whatever the providers came from (the built-in
 * simulators or ONCEFLOW_PROVIDERS_FILE), so failover is on exactly where it
 * is safe (invariant 6). A step that fails is named with what that means for
 * its route. With ONCEFLOW_VERIFY_AT_START=0 nothing is called, and the
 * warning names every step left unverified and each fallback that therefore
 * cannot take attempts now.
 * @throws what the database throws; a provider's failure is a failed verification, not an error.
 */
export async function verifyAtStart(deps: VerifyDeps, config: OnceflowConfig, log: StartLog): Promise<void> {
  if (!config.verifyAtStart) {
    await warnUnverified(deps, config, log);
    return;
  }
  log.info(`verifying provider contracts (${config.contracts.samples} sample(s) per probe, up to ${config.attempts.timeoutMs} ms each)`);
  const records = await verifyContracts(deps, {}, { samples: config.contracts.samples, timeoutMs: config.attempts.timeoutMs });
  log.info(`contracts verified: ${records.map((r) => `${r.operation} ${r.provider}/${r.model} ${r.passed ? 'pass' : 'FAIL'}`).join(', ') || 'no route steps'}`);
  for (const record of records.filter((r) => !r.passed)) {
    const first = deps.routeFor(record.operation)[0];
    const isPrimary = first?.provider === record.provider && first.model === record.model;
    log.warn(
      `${record.provider}/${record.model} FAILED verification for ${record.operation}: ` +
        (isPrimary
          ? 'as the first step of its route it takes no attempts until it passes (the next verified step serves; `onceflow contracts verify`)'
          : 'it will not take failover attempts until it passes (`onceflow contracts verify`)') +
        '; GET /v1/providers shows the evidence',
    );
  }
}

async function warnUnverified(deps: VerifyDeps, config: OnceflowConfig, log: StartLog): Promise<void> {
  const steps = [...deps.operations.values()].flatMap((operation) => deps.routeFor(operation.name).map((step, index) => ({ operation, step, index })));
  log.warn(
    `provider contracts NOT verified at start (ONCEFLOW_VERIFY_AT_START=0): ${steps.map(({ operation, step }) => `${operation.name} ${step.provider}/${step.model}`).join(', ') || 'no route steps'}`,
  );
  for (const { operation, step } of steps.filter(({ index }) => index > 0)) {
    const gate = await eligibility(deps.db, operation, step, 'fallback', config.contracts, new Date(), deps.providers.get(step.provider)?.baseUrl);
    if (!gate.eligible) {
      log.warn(`${step.provider}/${step.model} will not take failover attempts for ${operation.name}: ${gate.detail} (\`onceflow contracts verify\`)`);
    }
  }
}
