/**
 * How the module of a `module:` entry is loaded: with Node's require, from
 * the operations file; TypeScript through tsx where the process allows it,
 * and with `onceflow` and `onceflow/operations` resolving to this Onceflow's
 * defineOperation wherever the module lives.
 */
import Module from 'node:module';
import path from 'node:path';

/** The extensions loaded through tsx: TypeScript, as CommonJS or as an ES module. */
export const TYPESCRIPT_EXTENSIONS = ['.ts', '.mts', '.cts'] as const;

/**
 * The names an operation module may import defineOperation from. They resolve
 * to the running Onceflow's own module, so a module in a folder of its own (no
 * node_modules, or another copy of onceflow in it) builds its spec with the
 * code that checks and runs it.
 */
export const PACKAGE_IMPORTS = ['onceflow', 'onceflow/operations'] as const;

/** What the package names resolve to: define.ts under tsx and jest, define.js in dist. */
const DEFINE_MODULE = require.resolve('./define');

/** A module that was not loaded, and why: the sentence the operations file's problem carries. */
export class ModuleNotLoadedError extends Error {
  override readonly name = 'ModuleNotLoadedError';
}

/** How a TypeScript module may be loaded in this process. */
export interface ModuleLoadOptions {
  /** Load `.ts`, `.mts` and `.cts` modules through tsx (npm start, onceflow check); otherwise refuse them with how to compile them. */
  typeScriptModules: boolean;
}

type ResolveFilename = (request: string, parent: unknown, isMain: boolean, options?: unknown) => string;
// Node's resolver, which require, createRequire and tsx's require all go through (module-alias and tsconfig-paths hook it the same way).
const nodeModule = Module as typeof Module & { _resolveFilename: ResolveFilename };

/**
 * The module's exports, loaded with `onceflow` resolvable.
 * @param modulePath the path as the file gives it, for the messages.
 * @param fromFile the operations file it is relative to.
 * @throws ModuleNotLoadedError for a TypeScript module this process does not load, or when tsx is not installed.
 * @throws Error whatever loading the module throws (a missing file, a syntax error, an import that fails).
 */
export function requireOperationModule(resolved: string, modulePath: string, fromFile: string, options: ModuleLoadOptions): unknown {
  const typeScript = (TYPESCRIPT_EXTENSIONS as readonly string[]).includes(path.extname(resolved));
  if (typeScript && !options.typeScriptModules) throw new ModuleNotLoadedError(`${modulePath} is TypeScript, and this process loads JavaScript only (npm run api and npm run worker run compiled code; npm start and onceflow check load TypeScript through tsx): ${howToCompile(resolved, modulePath)}`);
  const load = typeScript ? tsxRequire(modulePath, resolved) : nodeModule.createRequire(fromFile);
  return withPackageImports(() => load(resolved, fromFile));
}

/** The tsc command line that compiles the module beside itself, and the entry that then names it. */
function howToCompile(resolved: string, modulePath: string): string {
  const extension = path.extname(resolved);
  // tsc makes an ES module of an .mts whatever --module says, and an ES module cannot import onceflow through require.
  if (extension === '.mts') return `rename it to .cts (tsc compiles an .mts to an ES module), compile it with tsc --module commonjs, and point module: at the .cjs file`;
  const outDir = path.join(path.dirname(resolved), 'dist');
  const compiled = `${path.basename(resolved, extension)}${extension === '.cts' ? '.cjs' : '.js'}`;
  const entry = `${path.posix.dirname(modulePath.split(path.sep).join('/'))}/dist/${compiled}`;
  return `compile it, e.g. \`npx tsc --module commonjs --target es2022 --outDir ${outDir} ${resolved}\`, and point module: at ${entry}`;
}

/** tsx's require, which compiles TypeScript for this one call (its hooks are gone after it). */
function tsxRequire(modulePath: string, resolved: string): (id: string, fromFile: string) => unknown {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional: only a process with TypeScript modules needs it
    return (require('tsx/cjs/api') as typeof import('tsx/cjs/api')).require;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    throw new ModuleNotLoadedError(`${modulePath} is TypeScript, and tsx, which loads it, is not installed (npm install --save-dev tsx); or ${howToCompile(resolved, modulePath)}`, { cause: error });
  }
}

/**
 * Runs `load` with the package's names resolving to defineOperation's module.
 * Only for the time of the (synchronous) load: other code resolves as before.
 */
function withPackageImports<T>(load: () => T): T {
  const original = nodeModule._resolveFilename;
  nodeModule._resolveFilename = function resolveFilename(this: unknown, request, ...rest) {
    if ((PACKAGE_IMPORTS as readonly string[]).includes(request)) return DEFINE_MODULE;
    return original.call(this, request, ...rest);
  };
  try {
    return load();
  } finally {
    nodeModule._resolveFilename = original;
  }
}
