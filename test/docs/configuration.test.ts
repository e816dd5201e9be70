import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { codeSpans, ROOT, tableRows } from './markdown';

/**
 * docs/configuration.md lists exactly the environment variables Onceflow
 * reads: those of src/**\/*.ts and of the scripts in scripts/ that run its
 * processes. A variable read but not listed fails, and so does one listed
 * but read nowhere.
 */

/** Every file under `dir` whose name passes `keep`. */
function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return filesUnder(full, keep);
    return keep(name) ? [full] : [];
  });
}

const ENV_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

/**
 * The variables a TypeScript source reads: `env.NAME`, `env?.NAME`,
 * `env['NAME']` (process.env, io.env, an env parameter), and names passed as
 * strings to what reads them (`int(env, 'NAME', …)`, `fromEnv('NAME', env)`,
 * `{ name: 'SIM_PRIMARY_PORT' }`): a quoted ONCEFLOW_, TEMPORAL_ or SIM_
 * name, or a quoted upper-case name on a line that names `env`.
 */
export function variablesReadBySource(text: string): string[] {
  const names = [
    ...[...text.matchAll(/\benv\??\.([A-Z][A-Z0-9_]*)\b/g)].map((m) => m[1]!),
    ...[...text.matchAll(/\benv\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\]/g)].map((m) => m[1]!),
    ...[...text.matchAll(/['"`]((?:ONCEFLOW|TEMPORAL|SIM)_[A-Z0-9_]+)['"`]/g)].map((m) => m[1]!),
    ...text
      .split('\n')
      .filter((line) => /\benv\b/.test(line))
      .flatMap((line) => [...line.matchAll(/['"`]([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)['"`]/g)].map((m) => m[1]!)),
  ];
  return names.filter((name) => ENV_NAME.test(name));
}

/** The variables a shell script reads: `${NAME}`, `${NAME:-…}`, `$NAME` (bash's own BASH_* aside). */
export function variablesReadByScript(text: string): string[] {
  const code = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n');
  return [...code.matchAll(/\$\{?([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!).filter((name) => !name.startsWith('BASH_'));
}

function variablesRead(): Map<string, string[]> {
  const read = new Map<string, string[]>();
  const note = (names: string[], file: string) => names.forEach((name) => read.set(name, [...new Set([...(read.get(name) ?? []), path.relative(ROOT, file)])]));
  for (const file of filesUnder(path.join(ROOT, 'src'), (name) => name.endsWith('.ts'))) note(variablesReadBySource(readFileSync(file, 'utf8')), file);
  for (const file of filesUnder(path.join(ROOT, 'scripts'), () => true)) note(variablesReadByScript(readFileSync(file, 'utf8')), file);
  return read;
}

/** The names in the first column of every table of docs/configuration.md. */
function variablesListed(): string[] {
  return tableRows(readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8'))
    .flatMap((cells) => codeSpans(cells[0] ?? ''))
    .filter((name) => ENV_NAME.test(name));
}

describe('the variables of docs/configuration.md', () => {
  const read = variablesRead();
  const listed = variablesListed();

  it('finds what it compares', () => {
    // Assert: each way of reading a variable is seen.
    expect([...read.keys()]).toEqual(expect.arrayContaining(['DATABASE_URL', 'ONCEFLOW_API_PORT', 'TEMPORAL_TLS_CA', 'SIM_PRIMARY_PORT', 'CHROMIUM_PATH', 'ONCEFLOW_NODE_OLD_SPACE_MIB']));
    expect(listed.length).toBeGreaterThan(50);
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('sees the ways code reads a variable', () => {
    // Arrange
    const source = [
      "const a = process.env.ONE_A;",
      "const b = env?.TWO_B ?? io.env['THREE_C'];",
      "int(env, 'FOUR_D', 1);",
      "const names = { x: 'ONCEFLOW_FIVE' };",
      "throw new Error('ONCEFLOW_X must be set');",
    ].join('\n');

    // Act
    const names = variablesReadBySource(source);

    // Assert
    expect([...new Set(names)].sort()).toEqual(['FOUR_D', 'ONCEFLOW_FIVE', 'ONE_A', 'THREE_C', 'TWO_B']);
    expect(variablesReadByScript('# ${NOT_THIS}\nexport A="${A_B:-2}"; exec "$C_D" "${BASH_SOURCE[0]}"').sort()).toEqual(['A_B', 'C_D']);
  });

  it('lists every variable the code reads', () => {
    // Assert
    expect([...read.entries()].filter(([name]) => !listed.includes(name)).map(([name, files]) => `${name} (${files.join(', ')})`)).toEqual([]);
  });

  it('lists no variable the code does not read', () => {
    // Assert
    expect(listed.filter((name) => !read.has(name))).toEqual([]);
  });
});
