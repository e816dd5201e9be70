/**
 * The operations file (ONCEFLOW_OPERATIONS_FILE; the demo file when unset):
 * read once at start, checked against schemas/operations.schema.json and
 * then against what the schema cannot say, and turned into the registry.
 * Every problem names the file, the JSON pointer and, for YAML, line:column.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv, { type AnySchema, type ValidateFunction } from 'ajv';
import YAML, { LineCounter } from 'yaml';
import { promptPlaceholders } from '../contracts/prompt';
import { BUILT_IN_EFFECTS } from '../effects/built-in';
import { unknownPlaceholders } from '../effects/http-template';
import type { HttpEffectDeclaration } from '../effects/http-declaration';
import { operationsDir, schemasDir } from '../paths';
import { aliasDefinition, type AliasSpec } from './alias';
import { compileChecks, compileResult, escapeToken, pointerTokens } from './declared';
import type { OperationSpec } from './define';
import { ModuleNotLoadedError, requireOperationModule, type ModuleLoadOptions } from './modules';
import { BUILT_IN_RECEIPT_FIELDS, declaredReceiptFields } from './receipt-fields';
import { schemaProblems } from './schema-problems';
import { registerOperation, type DeclarationOrigin, type InputVersion, type JsonSchema, type OperationDefinition } from './operation';
import { OperationsFileError, yamlLocator, type Locator, type OperationProblem } from './problems';
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

/** Reports a problem at a pointer; `text`, when given, is where inside the value it stands. */
type Report = (pointer: string, problem: string, text?: string) => void;

/** How the operations file is loaded in this process. */
export interface LoadOperationsOptions {
  /**
   * Whether `module:` entries may be TypeScript (.ts, .mts, .cts), loaded
   * through tsx: true under `npm start` and `onceflow check`; false (the
   * default) under `npm run api` and `npm run worker`, which run compiled
   * JavaScript and refuse a TypeScript module, saying how to compile it.
   */
  typeScriptModules?: boolean;
}

const fileSchema = JSON.parse(readFileSync(OPERATIONS_SCHEMA_FILE, 'utf8')) as JsonSchema & { $id: string };
// strictRequired off: the check rules are told apart by `oneOf: [{required: [nonBlank]}, …]`, which
// names properties declared one level up. verbose: a oneOf's error reads its schema's description.
const schemaAjv = new Ajv({ allErrors: true, strict: true, strictRequired: false, verbose: true });
schemaAjv.addSchema(fileSchema);
const validateFile = schemaAjv.getSchema(fileSchema.$id)!;
const validateModuleSpec = schemaAjv.getSchema(`${fileSchema.$id}#/definitions/operation`)!;

/**
 * What reading an operations file found: every problem, and whatever could be
 * used all the same, so that one run can check everything else too.
 */
export interface OperationsInspection {
  file: string;
  problems: OperationProblem[];
  /** The operations that have no problem of their own. */
  registry: OperationRegistry;
  /** Every operation that could be read (with problems of its own or not): what the providers and effects are checked against. */
  declared: DeclaredOperation[];
  /** The HTTP effects the file declares, once the file fits its schema (none before). */
  httpEffects: HttpEffectDeclaration[];
  /** Where a pointer is in the file (nothing known for a file that could not be read or parsed). */
  locate: Locator;
}

/** An operation as far as its route and effects go, from a declaration or a module that fits the schema. */
export interface DeclaredOperation {
  name: string;
  defaultRoute: readonly string[];
  effects: readonly string[];
  origin: DeclarationOrigin;
}

/**
 * Reads, checks and registers the operations of `file` (default: the demo file).
 * Modules named by `module:` entries are loaded with Node's require, relative
 * to the file (TypeScript through tsx when `options.typeScriptModules`).
 * @throws OperationsFileError listing every problem found.
 */
export function loadOperations(file: string = DEMO_OPERATIONS_FILE, options: LoadOperationsOptions = {}): LoadedOperations {
  return usable(readOperations(file, options));
}

/** Reads and checks `file` as loadOperations does, returning the problems instead of throwing them. */
export function readOperations(file: string = DEMO_OPERATIONS_FILE, options: LoadOperationsOptions = {}): OperationsInspection {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { file, problems: [{ file, pointer: '', problem: `cannot read the file (${code ?? String(error)})` }], registry: new Map(), declared: [], httpEffects: [], locate: () => undefined };
  }
  return inspectOperations(text, file, options);
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
export function parseOperations(text: string, file: string, options: LoadOperationsOptions = {}): LoadedOperations {
  return usable(inspectOperations(text, file, options));
}

/** @throws OperationsFileError listing the inspection's problems, when it found any. */
function usable(inspection: OperationsInspection): LoadedOperations {
  if (inspection.problems.length > 0) throw new OperationsFileError(inspection.problems);
  return { file: inspection.file, registry: inspection.registry, httpEffects: inspection.httpEffects };
}

/** Checks the operations in `text`, which came from `file`: every problem, and the operations that have none. */
export function inspectOperations(text: string, file: string, options: LoadOperationsOptions = {}): OperationsInspection {
  const moduleOptions: ModuleLoadOptions = { typeScriptModules: options.typeScriptModules === true };
  const problems: OperationProblem[] = [];
  const lines = new LineCounter();
  const document = YAML.parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const nothing = { file, problems, registry: new Map(), declared: [], httpEffects: [] };
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const position = lines.linePos(error.pos[0]);
      problems.push({ file, pointer: '', problem: `invalid YAML: ${error.message.split('\n')[0]}`, line: position.line, column: position.col });
    }
    return { ...nothing, locate: () => undefined };
  }
  const locate = yamlLocator(document, lines, text);
  const report = (atFile: string): Report => (pointer, problem, text) => {
    const position = atFile === file ? locate(pointer, text) : undefined;
    problems.push({ file: atFile, pointer, problem, ...(position ? { line: position.line, column: position.column } : {}) });
  };
  const inFile = report(file);

  const data: unknown = document.toJS();
  if (!validateFile(data)) {
    for (const error of schemaProblems(validateFile.errors ?? [])) inFile(error.pointer, error.problem);
    return { ...nothing, locate };
  }
  const content = data as { operations?: Array<JsonSchema>; effects?: HttpEffectDeclaration[]; aliases?: AliasSpec[] };

  const httpEffects = (content.effects ?? []).map(withStatusStrings);
  // Every effect an operation may name, with the fields each of its receipts has.
  const receipts = new Map<string, readonly string[]>(Object.entries(BUILT_IN_RECEIPT_FIELDS));
  httpEffects.forEach((effect, index) => {
    if (receipts.has(effect.name)) inFile(`/effects/${index}/name`, `effect ${JSON.stringify(effect.name)} is ${(BUILT_IN_EFFECTS as readonly string[]).includes(effect.name) ? 'built in' : 'declared twice'}`);
    else receipts.set(effect.name, declaredReceiptFields(effect));
    checkPlaceholders(effect, `/effects/${index}`, inFile);
  });

  const definitions: OperationDefinition[] = [];
  const declared: DeclaredOperation[] = [];
  const names = new Map<string, string>();
  (content.operations ?? []).forEach((entry, index) => {
    const at = `/operations/${index}`;
    const loaded = typeof entry.module === 'string' ? loadModule(file, entry.module, `${at}/module`, moduleOptions, inFile, report) : { spec: entry as OperationSpec, file, pointer: at, report: inFile };
    if (!loaded) return;
    const { spec, pointer } = loaded;
    const previous = names.get(spec.name);
    if (previous !== undefined) loaded.report(`${pointer}/name`, `operation ${JSON.stringify(spec.name)} is already declared at ${previous}`);
    names.set(spec.name, loaded.file === file ? pointer : loaded.file);
    declared.push({ name: spec.name, defaultRoute: [...spec.route], effects: [...(spec.effects ?? [])], origin: { file: loaded.file, pointer } });
    const definition = checkSpec(spec, { file: loaded.file, pointer }, receipts, loaded.report);
    if (definition && previous === undefined) definitions.push(definition);
  });
  // Aliases are operations too (one namespace: a job is keyed by the name), declared in this file only.
  (content.aliases ?? []).forEach((alias, index) => {
    const pointer = `/aliases/${index}`;
    const previous = names.get(alias.name);
    if (previous !== undefined) inFile(`${pointer}/name`, `${JSON.stringify(alias.name)} is already declared at ${previous}`);
    names.set(alias.name, pointer);
    declared.push({ name: alias.name, defaultRoute: [...alias.route], effects: [], origin: { file, pointer } });
    const definition = checkAlias(alias, { file, pointer }, inFile);
    if (definition && previous === undefined) definitions.push(definition);
  });
  return {
    file,
    problems,
    registry: new Map(definitions.map((definition) => [definition.name, registerOperation(definition)])),
    declared,
    httpEffects,
    locate,
  };
}

/**
 * The placeholders of a declared effect's body and URLs name what a job has
 * (createHttpEffect refuses the others when the worker starts; here each is
 * named where it stands, all at once).
 */
function checkPlaceholders(effect: HttpEffectDeclaration, at: string, report: Report): void {
  const check = (text: string, pointer: string): void => {
    for (const path of unknownPlaceholders(text)) report(pointer, `{{${path}}} names nothing a job has; placeholders may name input, output, job.id, job.operation and key`, `{{${path}`);
  };
  const visit = (value: unknown, pointer: string): void => {
    if (typeof value === 'string') check(value, pointer);
    else if (Array.isArray(value)) value.forEach((item, index) => visit(item, `${pointer}/${index}`));
    else if (value !== null && typeof value === 'object') for (const [key, item] of Object.entries(value)) visit(item, `${pointer}/${escapeToken(key)}`);
  };
  check(effect.url, `${at}/url`);
  if (effect.lookup) check(effect.lookup.url, `${at}/lookup/url`);
  visit(effect.body, `${at}/body`);
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
function loadModule(file: string, modulePath: string, at: string, options: ModuleLoadOptions, inFile: Report, report: (file: string) => Report): { spec: OperationSpec; file: string; pointer: string; report: Report } | undefined {
  const resolved = path.resolve(path.dirname(file), modulePath);
  const moduleFile = path.join(path.dirname(file), modulePath);
  let exported: unknown;
  try {
    const required = requireOperationModule(resolved, modulePath, path.resolve(file), options) as { default?: unknown } | null;
    exported = required?.default ?? required;
  } catch (error) {
    inFile(at, error instanceof ModuleNotLoadedError ? error.message : `cannot load ${modulePath}: ${(error as Error).message.split('\n')[0]}`);
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

/** What the schema cannot say of an alias; its operation when nothing is wrong. */
function checkAlias(alias: AliasSpec, origin: { file: string; pointer: string }, report: Report): OperationDefinition | undefined {
  const at = origin.pointer;
  const found: Array<[pointer: string, problem: string]> = [];
  if (alias.output) {
    try {
      new Ajv({ allErrors: true, strict: true }).compile(alias.output as AnySchema);
    } catch (error) {
      found.push([`${at}/output`, `does not compile as a JSON Schema (Ajv strict mode): ${(error as Error).message}`]);
    }
    for (const loose of looseObjects(alias.output, '')) found.push([`${at}/output${loose}`, 'an object in the output contract must say additionalProperties: false']);
  }
  (alias.checks ?? []).forEach((check, index) => {
    if (!alias.output) found.push([`${at}/checks/${index}`, 'checks apply to JSON answers: declare an output contract first']);
    else if (schemaAt(alias.output, check.field) === undefined) found.push([`${at}/checks/${index}/field`, `${check.field} names no property of the output contract`]);
  });
  const maxMessages = alias.limits?.maxMessages;
  alias.probes.forEach((probe, index) => {
    if (maxMessages !== undefined && probe.messages.length > maxMessages) found.push([`${at}/probes/${index}/messages`, `has ${probe.messages.length} messages; the alias's limit is ${maxMessages}`]);
  });
  for (const [pointer, problem] of found) report(pointer, problem);
  return found.length > 0 ? undefined : aliasDefinition(alias, origin);
}

/** What the schema of the file cannot say; the definition when nothing is wrong. */
function checkSpec(spec: OperationSpec, origin: { file: string; pointer: string }, receipts: ReadonlyMap<string, readonly string[]>, report: Report): OperationDefinition | undefined {
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
    if (!receipts.has(name)) counted(`${at}/effects/${index}`, `effect ${JSON.stringify(name)} has no adapter: it is neither built in (${BUILT_IN_EFFECTS.join(', ')}) nor declared under effects`);
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
    const pointer = `${at}/result/fields/${escapeToken(field)}`;
    if (!(spec.effects ?? []).includes(from.effect)) counted(`${pointer}/effect`, `${JSON.stringify(from.effect)} is not one of this operation's effects`);
    // A field no receipt of the effect has would be missing from every result.
    const fields = receipts.get(from.effect);
    if (fields && !fields.includes(from.field)) counted(`${pointer}/field`, `${JSON.stringify(from.field)} is not a field of the receipt of ${from.effect} (its fields: ${fields.join(', ')})`);
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
