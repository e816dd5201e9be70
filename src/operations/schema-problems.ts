import type Ajv from 'ajv';
import type { ErrorObject } from 'ajv';
import { escapeToken } from './declared';

/**
 * A schema annotation Onceflow's file schemas use: what is wrong with a value
 * that fails the schema it stands in, said for a person ("must be a decimal
 * in quotes, ..."), where Ajv's own message would only say "must match pattern".
 * Editors ignore it; the loaders' Ajv instances must know it (addProblemKeyword).
 */
export const PROBLEM_KEYWORD = 'x-problem';

/** Lets `ajv` compile schemas that carry the x-problem annotation (it validates nothing). */
export function addProblemKeyword(ajv: Ajv): void {
  ajv.addKeyword({ keyword: PROBLEM_KEYWORD, schemaType: 'string' });
}

/** Ajv's errors against a file schema as problems: one per place, saying what is wrong there. Needs Ajv's `verbose`. */
export function schemaProblems(errors: readonly ErrorObject[]): Array<{ pointer: string; problem: string }> {
  const branched = new Set(errors.filter((error) => error.keyword === 'oneOf').map((error) => error.instancePath));
  const out = new Map<string, { pointer: string; problem: string }>();
  for (const error of errors) {
    // An if/then/else names the branch that failed; the branch's own errors say why.
    if (error.keyword === 'if') continue;
    // A oneOf's branches each fail for their own reason; the oneOf says what was meant.
    if (/\/oneOf\/\d+\//.test(error.schemaPath) && branched.has(error.instancePath)) continue;
    // A name that fails propertyNames is reported by the name's own error, at the name.
    if (error.keyword === 'propertyNames') continue;
    const params = error.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
    const parent = error.parentSchema as { description?: string; [PROBLEM_KEYWORD]?: string } | undefined;
    let pointer = error.propertyName === undefined ? error.instancePath : `${error.instancePath}/${escapeToken(error.propertyName)}`;
    let problem: string;
    if (error.keyword === 'additionalProperties') {
      pointer = `${pointer}/${escapeToken(params.additionalProperty ?? '')}`;
      problem = 'is not a known key';
    } else if (error.keyword === 'required') {
      problem = `must have ${params.missingProperty}`;
    } else if (parent?.[PROBLEM_KEYWORD] !== undefined) {
      problem = parent[PROBLEM_KEYWORD];
    } else if (error.keyword === 'oneOf') {
      problem = `must be ${parent?.description ?? 'exactly one of its forms'}`;
    } else if (params.allowedValues) {
      problem = `must be one of ${params.allowedValues.map((value) => JSON.stringify(value)).join(', ')}`;
    } else {
      problem = error.message ?? `fails ${error.keyword}`;
    }
    out.set(`${pointer} ${problem}`, { pointer, problem });
  }
  return [...out.values()];
}
