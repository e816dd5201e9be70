import type { Pool } from 'pg';
import type { OnceflowConfig } from '../config';
import type { HttpEffectDeclaration } from '../effects/http-declaration';
import { HttpEffectDeclarationError } from '../effects/http-effect';
import { createEffectRegistry } from '../effects/registry';
import { escapeToken } from '../operations/declared';
import type { OperationProblem } from '../operations/problems';
import type { OperationsInspection } from '../operations/load';
import { unsetEnvReferences } from '../providers/config';

/** The problems of the effects a worker would build, and the environment variables they read. */
export interface EffectsCheck {
  problems: OperationProblem[];
  variables: string[];
}

/** What record.write's adapter is built with here: it only keeps its database, and the check performs no effect (a use throws). */
const NO_DATABASE = new Proxy({} as Pool, {
  get() {
    throw new Error('onceflow check performs no effect');
  },
});

/**
 * What the worker finds when it builds the effects of `operations` with
 * `env` (createEffectRegistry), found before anything starts: every `${NAME}`
 * of a declared effect's URLs and headers that is unset, where it stands;
 * what else a declaration cannot be built with; and each built-in effect an
 * operation names that this deployment does not configure (webhook.notify
 * without ONCEFLOW_WEBHOOK_URL).
 */
export function checkEffects(operations: OperationsInspection, config: OnceflowConfig['effects'], env: NodeJS.ProcessEnv): EffectsCheck {
  const problems: OperationProblem[] = [];
  const variables = new Set<string>();
  const report = (pointer: string, problem: string, text?: string): void => {
    const position = operations.locate(pointer, text);
    problems.push({ file: operations.file, pointer, problem, ...(position ? { line: position.line, column: position.column } : {}) });
  };
  operations.httpEffects.forEach((declaration, index) => {
    const at = `/effects/${index}`;
    const withEnv: Array<[pointer: string, text: string]> = [
      [`${at}/url`, declaration.url],
      ...Object.entries(declaration.headers ?? {}).map(([header, value]): [string, string] => [`${at}/headers/${escapeToken(header)}`, String(value)]),
      ...(declaration.lookup ? [[`${at}/lookup/url`, declaration.lookup.url] as [string, string]] : []),
    ];
    let unset = 0;
    for (const [pointer, text] of withEnv) {
      for (const name of unsetEnvReferences(text, {})) variables.add(name);
      for (const name of unsetEnvReferences(text, env)) {
        report(pointer, `environment variable ${name} is not set`, `\${${name}}`);
        unset++;
      }
    }
    // The loader named this effect's placeholders already; the rest needs every variable set.
    const named = operations.problems.some((problem) => problem.file === operations.file && (problem.pointer === at || problem.pointer.startsWith(`${at}/`)));
    if (unset === 0 && !named) {
      const problem = buildProblem(declaration, config, env);
      if (problem) report(at, problem);
    }
  });

  for (const operation of operations.declared) {
    operation.effects.forEach((effect, index) => {
      if (effect !== 'webhook.notify' || config.webhookUrl) return;
      const origin = operation.origin;
      const pointer = `${origin.pointer}/effects/${index}`;
      const position = origin.file === operations.file ? operations.locate(pointer) : undefined;
      problems.push({ file: origin.file, pointer, problem: 'effect "webhook.notify" has no adapter in this deployment: ONCEFLOW_WEBHOOK_URL is not set', ...(position ? { line: position.line, column: position.column } : {}) });
    });
  }
  return { problems, variables: [...variables] };
}

/** Why the worker could not build this declared effect, if it could not. */
function buildProblem(declaration: HttpEffectDeclaration, config: OnceflowConfig['effects'], env: NodeJS.ProcessEnv): string | undefined {
  try {
    createEffectRegistry({ config, db: NO_DATABASE, declared: [declaration], env });
    return undefined;
  } catch (error) {
    if (error instanceof HttpEffectDeclarationError) return error.message;
    throw error;
  }
}
