/**
 * The operations file (ONCEFLOW_OPERATIONS_FILE; the demo file when unset):
 * read once at start, checked against schemas/operations.schema.json and
 * then against what the schema cannot say, and turned into the registry.
 * Every problem names the file, the JSON pointer and, for YAML, line:column.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv, { type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';
import YAML, { LineCounter } from 'yaml';
import { promptPlaceholders } from '../contracts/prompt';
import { BUILT_IN_EFFECTS } from '../effects/built-in';
import type { HttpEffectDeclaration } from '../effects/http-declaration';
import { operationsDir, schemasDir } from '../paths';
import { compileChecks, compileResult, escapeToken, pointerTokens } from './declared';
import type { OperationSpec } from './define';
import { registerOperation, type InputVersion, type JsonSchema, type OperationDefinition } from './operation';
import { OperationsFileError, positionOf, type OperationProblem } from './problems';
import type { OperationRegistry } from './registry';

/** The demo operations (support.reply), used when ONCEFLOW_OPERATIONS_FILE is unset. */
export const DEMO_OPERATIONS_FILE = path.join(operationsDir, 'demo.yaml');

/** The JSON Schema every operations file is checked against. */
export const OPERATIONS_SCHEMA_FILE = path.join(schemasDir, 'operations.schema.json');

export interface LoadedOperations {
  /** The file the operations came from. */
  file: string;
  registry: OperationRegistry;
  /** The HTTP effects the file declares (its `effects:` section), in file order. */
  httpEffects: HttpEffectDeclaration[];
}

type Report = (pointer: string, problem: string) => void;

const fileSchema = JSON.parse(readFileSync(OPERATIONS_SCHEMA_FILE, 'utf8')) as JsonSchema & { $id: string };
// strictRequired off: the check rules are told apart by `oneOf: [{required: [nonBlank]}, …]`, which
// names properties declared one level up. verbose: a oneOf's error reads its schema's description.
const schemaAjv = new Ajv({ allErrors: true, strict: true, strictRequired: false, verbose: true });
schemaAjv.addSchema(fileSchema);
const validateFile = schemaAjv.getSchema(fileSchema.$id)!;
const validateModuleSpec = schemaAjv.getSchema(`${fileSchema.$id}#/definitions/operation`)!;

/**
 * Reads, checks and registers the operations of `file` (default: the demo file).
 * Modules named by `module:` entries are loaded with require, relative to the file.
 * @throws OperationsFileError listing every problem found.
 */
export function loadOperations(file: string = DEMO_OPERATIONS_FILE): LoadedOperations {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new OperationsFileError([{ file, pointer: '', problem: `cannot read the file (${code ?? String(error)})` }], { cause: error });
  }
  return parseOperations(text, file);
}

let demo: LoadedOperations | undefined;

/**
 * The demo file's operations, loaded once per process.
 * @throws OperationsFileError when the demo file is broken.
 */
export function demoOperations(): LoadedOperations {
  demo ??= loadOperations(DEMO_OPERATIONS_FILE);
  return demo;
}

/**
 * Checks and registers the operations in `text`, which came from `file`.
 * @throws OperationsFileError listing every problem found.
 */
export function parseOperations(text: string, file: string): LoadedOperations {
  const problems: OperationProblem[] = [];
  const lines = new LineCounter();
  const document = YAML.parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const position = lines.linePos(error.pos[0]);
      problems.push({ file, pointer: '', problem: `invalid YAML: ${error.message.split('\n')[0]}`, line: position.line, column: position.col });
    }
    throw new OperationsFileError(problems);
  }
  const report = (atFile: string): Report => (pointer, problem) => {
    const position = atFile === file ? positionOf(document, lines, pointer) : undefined;
    problems.push({ file: atFile, pointer, problem, ...(position ? { line: position.line, column: position.column } : {}) });
  };
  const inFile = report(file);

  const data: unknown = document.toJS();
  if (!validateFile(data)) {
    for (const error of schemaProblems(validateFile.errors ?? [])) inFile(error.pointer, error.problem);
    throw new OperationsFileError(problems);
  }
  const content = data as { operations: Array<JsonSchema>; effects?: HttpEffectDeclaration[] };

  const httpEffects = content.effects ?? [];
  const knownEffects = new Set<string>(BUILT_IN_EFFECTS);
  httpEffects.forEach((effect, index) => {
    if (knownEffects.has(effect.name)) inFile(`/effects/${index}/name`, `effect ${JSON.stringify(effect.name)} is ${(BUILT_IN_EFFECTS as readonly string[]).includes(effect.name) ? 'built in' : 'declared twice'}`);
    knownEffects.add(effect.name);
  });

  const definitions: OperationDefinition[] = [];
  const names = new Map<string, string>();
  content.operations.forEach((entry, index) => {
    const at = `/operations/${index}`;
    const loaded = typeof entry.module === 'string' ? loadModule(file, entry.module, `${at}/module`, inFile, report) : { spec: entry as OperationSpec, file, pointer: at, report: inFile };
    if (!loaded) return;
    const { spec, pointer } = loaded;
    const previous = names.get(spec.name);
    if (previous !== undefined) loaded.report(`${pointer}/name`, `operation ${JSON.stringify(spec.name)} is already declared at ${previous}`);
    names.set(spec.name, loaded.file === file ? pointer : loaded.file);
    const definition = checkSpec(spec, { file: loaded.file, pointer }, knownEffects, loaded.report);
    if (definition) definitions.push(definition);
  });
  if (problems.length > 0) throw new OperationsFileError(problems);
  return {
    file,
    registry: new Map(definitions.map((definition) => [definition.name, registerOperation(definition)])),
    httpEffects: httpEffects.map(withStatusStrings),
  };
}

/** A declaration with its status codes as strings (YAML reads `[200]` as numbers), as HttpEffectDeclaration says. */
function withStatusStrings(effect: HttpEffectDeclaration): HttpEffectDeclaration {
  const strings = (list: unknown[] | undefined): string[] | undefined => list?.map(String);
  const copy = structuredClone(effect);
  if (copy.statuses) copy.statuses = Object.fromEntries(Object.entries(copy.statuses).map(([kind, list]) => [kind, strings(list)]));
  if (copy.lookup?.found) copy.lookup.found = strings(copy.lookup.found);
  if (copy.lookup?.notFound) copy.lookup.notFound = strings(copy.lookup.notFound);
  return copy;
}

/** An operation module's default export, checked against the file schema's operation. */
function loadModule(file: string, modulePath: string, at: string, inFile: Report, report: (file: string) => Report): { spec: OperationSpec; file: string; pointer: string; report: Report } | undefined {
  const resolved = path.resolve(path.dirname(file), modulePath);
  const moduleFile = path.join(path.dirname(file), modulePath);
  let exported: unknown;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- operation modules are loaded once, at start
    const required = require(resolved) as { default?: unknown };
    exported = required?.default ?? required;
  } catch (error) {
    inFile(at, `cannot load ${modulePath}: ${(error as Error).message.split('\n')[0]}`);
    return undefined;
  }
  const inModule = report(moduleFile);
  if (exported === null || typeof exported !== 'object') {
    inModule('', 'the default export must be an operation made with defineOperation({...})');
    return undefined;
  }
  const { businessChecks, finalize, ...data } = exported as OperationSpec;
  if (businessChecks !== undefined && typeof businessChecks !== 'function') inModule('/businessChecks', 'must be a function (output) => string[]');
  if (finalize !== undefined && typeof finalize !== 'function') inModule('/finalize', 'must be a function (output, receipts) => result');
  if (finalize !== undefined && data.result !== undefined) inModule('/finalize', 'give result or finalize, not both');
  if (!validateModuleSpec(structuredClone(data))) {
    for (const error of schemaProblems(validateModuleSpec.errors ?? [])) inModule(error.pointer, error.problem);
    return undefined;
  }
  return { spec: exported as OperationSpec, file: moduleFile, pointer: '', report: inModule };
}

/** What the schema of the file cannot say; the definition when nothing is wrong. */
function checkSpec(spec: OperationSpec, origin: { file: string; pointer: string }, knownEffects: ReadonlySet<string>, report: Report): OperationDefinition | undefined {
  const at = origin.pointer;
  // Collected here, so the definition is built only when this operation has none.
  const found: Array<[pointer: string, problem: string]> = [];
  const counted: Report = (pointer, problem) => {
    found.push([pointer, problem]);
  };
  const ajv = new Ajv({ allErrors: true, strict: true });
  const compile = (schema: JsonSchema, pointer: string): ValidateFunction | undefined => {
    try {
      return ajv.compile(schema as AnySchema);
    } catch (error) {
      counted(pointer, `does not compile as a JSON Schema (Ajv strict mode): ${(error as Error).message}`);
      return undefined;
    }
  };

  const versions = new Map<number, { validate?: ValidateFunction; input: JsonSchema }>();
  spec.versions.forEach((version, index) => {
    const pointer = `${at}/versions/${index}`;
    if (versions.has(version.schemaVersion)) counted(`${pointer}/schemaVersion`, `schema version ${version.schemaVersion} is declared twice`);
    const validate = compile(version.input, `${pointer}/input`);
    versions.set(version.schemaVersion, { input: version.input, ...(validate ? { validate } : {}) });
    if (validate && !validate(version.example)) {
      for (const error of validate.errors ?? []) counted(`${pointer}/example${error.instancePath}`, `does not fit the input schema: ${error.message ?? error.keyword}`);
    }
  });

  compile(spec.output, `${at}/output`);
  // Strict: an answer with a key the contract does not name is off-contract, never silently accepted.
  for (const loose of looseObjects(spec.output, '')) counted(`${at}/output${loose}`, 'an object in the output contract must say additionalProperties: false');

  (spec.checks ?? []).forEach((check, index) => {
    const pointer = `${at}/checks/${index}`;
    if (schemaAt(spec.output, check.field) === undefined) counted(`${pointer}/field`, `${check.field} names no property of the output contract`);
    if ('forbid' in check) {
      try {
        new RegExp(check.forbid);
      } catch (error) {
        counted(`${pointer}/forbid`, `is not a regular expression: ${(error as Error).message}`);
      }
    }
    if ('length' in check && check.length.min !== undefined && check.length.max !== undefined && check.length.min > check.length.max) counted(`${pointer}/length`, 'min is above max');
  });

  for (const part of ['system', 'user'] as const) {
    for (const name of promptPlaceholders(spec.prompt[part])) {
      for (const [schemaVersion, version] of versions) {
        const required = Array.isArray(version.input.required) && version.input.required.includes(name);
        const declared = typeof version.input.properties === 'object' && version.input.properties !== null && Object.prototype.hasOwnProperty.call(version.input.properties, name);
        if (!required || !declared) counted(`${at}/prompt/${part}`, `{{${name}}} is not a required field of the input of schema version ${schemaVersion}`);
      }
    }
  }

  const newest = spec.versions.reduce((a, b) => (b.schemaVersion > a.schemaVersion ? b : a));
  const newestValidate = versions.get(newest.schemaVersion)?.validate;
  (spec.probes ?? []).forEach((probe, index) => {
    if (newestValidate && !newestValidate(probe.input)) {
      for (const error of newestValidate.errors ?? []) counted(`${at}/probes/${index}/input${error.instancePath}`, `does not fit the input schema of version ${newest.schemaVersion}: ${error.message ?? error.keyword}`);
    }
  });

  (spec.effects ?? []).forEach((name, index) => {
    if (!knownEffects.has(name)) counted(`${at}/effects/${index}`, `effect ${JSON.stringify(name)} has no adapter: it is neither built in (${BUILT_IN_EFFECTS.join(', ')}) nor declared under effects`);
  });
  // Hedging sends a second request while the first may still be executing: only an operation with no side effects may.
  if (spec.retry?.hedge && (spec.effects ?? []).length > 0) {
    counted(`${at}/retry/hedge`, `an operation with effects (${(spec.effects ?? []).join(', ')}) may not hedge: a new attempt waits until the ledger says the last one did not run (invariant 4)`);
  }
  const deadline = spec.deadline;
  if (deadline?.defaultMs !== undefined && deadline.maxMs !== undefined && deadline.defaultMs > deadline.maxMs) {
    counted(`${at}/deadline/defaultMs`, `the default deadline (${deadline.defaultMs} ms) is later than the maximum (${deadline.maxMs} ms)`);
  }
  for (const [field, from] of Object.entries(spec.result?.fields ?? {})) {
    if (!(spec.effects ?? []).includes(from.effect)) counted(`${at}/result/fields/${escapeToken(field)}/effect`, `${JSON.stringify(from.effect)} is not one of this operation's effects`);
  }

  for (const [pointer, problem] of found) report(pointer, problem);
  if (found.length > 0) return undefined;
  const declaredChecks = spec.checks?.length ? compileChecks(spec.checks) : undefined;
  const codeChecks = spec.businessChecks;
  const businessChecks = declaredChecks && codeChecks ? (value: unknown) => [...declaredChecks(value), ...codeChecks(value)] : (declaredChecks ?? codeChecks);
  const finalize = spec.result ? compileResult(spec.result) : spec.finalize;
  const inputVersions: InputVersion[] = spec.versions.map((version, index) => ({ ...version, origin: { file: origin.file, pointer: `${at}/versions/${index}` } }));
  return {
    name: spec.name,
    description: spec.description,
    schemaVersion: newest.schemaVersion,
    input: newest.input,
    example: newest.example,
    versions: inputVersions,
    output: spec.output,
    prompt: { system: spec.prompt.system, user: spec.prompt.user },
    defaultRoute: [...spec.route],
    origin,
    ...(businessChecks ? { businessChecks } : {}),
    ...(finalize ? { finalize } : {}),
    ...(spec.effects ? { effects: [...spec.effects] } : {}),
    ...(spec.billing ? { billing: spec.billing } : {}),
    ...(spec.deadline ? { deadline: { ...spec.deadline } } : {}),
    ...(spec.effectsAfterDeadline !== undefined ? { effectsAfterDeadline: spec.effectsAfterDeadline } : {}),
    ...(spec.retry?.hedge ? { retry: { hedge: { ...spec.retry.hedge } } } : {}),
    ...(spec.reopenFailed !== undefined ? { reopenFailed: spec.reopenFailed } : {}),
    ...(spec.probes ? { probes: spec.probes } : {}),
  };
}

/** Pointers (relative to `schema`) of object schemas that allow keys they do not name. */
function looseObjects(schema: unknown, pointer: string): string[] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return [];
  const node = schema as JsonSchema;
  const found: string[] = [];
  const types = Array.isArray(node.type) ? node.type : [node.type];
  if ((types.includes('object') || 'properties' in node) && node.additionalProperties !== false) found.push(pointer);
  for (const key of ['properties', 'patternProperties', '$defs', 'definitions']) {
    const children = node[key];
    if (children && typeof children === 'object') for (const [name, child] of Object.entries(children)) found.push(...looseObjects(child, `${pointer}/${key}/${escapeToken(name)}`));
  }
  for (const key of ['items', 'additionalItems', 'contains', 'not', 'if', 'then', 'else', 'additionalProperties', 'propertyNames']) {
    const child = node[key];
    if (Array.isArray(child)) child.forEach((item, index) => found.push(...looseObjects(item, `${pointer}/${key}/${index}`)));
    else found.push(...looseObjects(child, `${pointer}/${key}`));
  }
  for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
    const children = node[key];
    if (Array.isArray(children)) children.forEach((child, index) => found.push(...looseObjects(child, `${pointer}/${key}/${index}`)));
  }
  return found;
}

/** The subschema a JSON pointer into an instance lands on, following `properties` (and `items` for list indexes). */
function schemaAt(schema: JsonSchema, pointer: string): JsonSchema | undefined {
  let node: JsonSchema | undefined = schema;
  for (const token of pointerTokens(pointer)) {
    if (!node) return undefined;
    const properties = node.properties as Record<string, JsonSchema> | undefined;
    if (properties && Object.prototype.hasOwnProperty.call(properties, token)) node = properties[token];
    else if (/^\d+$/.test(token) && node.items && typeof node.items === 'object' && !Array.isArray(node.items)) node = node.items as JsonSchema;
    else return undefined;
  }
  return node;
}

/** Ajv's errors against the file schema as problems: one per place, saying what is wrong there. */
function schemaProblems(errors: readonly ErrorObject[]): Array<{ pointer: string; problem: string }> {
  const branched = new Set(errors.filter((error) => error.keyword === 'oneOf').map((error) => error.instancePath));
  const out = new Map<string, { pointer: string; problem: string }>();
  for (const error of errors) {
    // An if/then/else names the branch that failed; the branch's own errors say why.
    if (error.keyword === 'if') continue;
    // A oneOf's branches each fail for their own reason; the oneOf says what was meant.
    if (/\/oneOf\/\d+\//.test(error.schemaPath) && branched.has(error.instancePath)) continue;
    const params = error.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
    let pointer = error.instancePath;
    let problem: string;
    if (error.keyword === 'additionalProperties') {
      pointer = `${pointer}/${escapeToken(params.additionalProperty ?? '')}`;
      problem = 'is not a known key';
    } else if (error.keyword === 'required') {
      problem = `must have ${params.missingProperty}`;
    } else if (error.keyword === 'oneOf') {
      problem = `must be ${(error.parentSchema as { description?: string } | undefined)?.description ?? 'exactly one of its forms'}`;
    } else if (params.allowedValues) {
      problem = `must be one of ${params.allowedValues.map((value) => JSON.stringify(value)).join(', ')}`;
    } else {
      problem = error.message ?? `fails ${error.keyword}`;
    }
    out.set(`${pointer} ${problem}`, { pointer, problem });
  }
  return [...out.values()];
}
