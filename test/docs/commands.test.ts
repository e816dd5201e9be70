import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../../src/cli/main';
import type { CliIo } from '../../src/cli/io';
import { docFiles, partsOf, ROOT } from './markdown';

/**
 * What the documentation tells a person to type exists: every `npm run X` is
 * a script of package.json, and every `onceflow <group> [<command>]` is a
 * command the CLI's own usage lists.
 */

const scripts = Object.keys((JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
const files = docFiles();

/** Every `npm run X`, `npm start` and `npm test`, anywhere in the pages. */
const npmScripts = files.flatMap(({ file, text }) =>
  [...text.matchAll(/\bnpm (?:run ([a-z][\w:.-]*)|(start|test)\b)/g)].map((match) => ({ file, script: (match[1] ?? match[2])! })),
);

/**
 * Every onceflow command: `npx onceflow G [C]` anywhere, and `onceflow G [C]`
 * or `npm run onceflow -- G [C]` where a person types it: in shell blocks, and
 * in code spans that begin with it (prose says "the onceflow commands", and
 * a program's printed output may name them in a sentence).
 */
const cliReferences = files.flatMap(({ file, text }) => {
  const parts = partsOf(text);
  const code = [
    ...parts.blocks.filter((block) => /^(sh|bash|shell|console)$/.test(block.info)).map((block) => block.body),
    ...parts.spans.filter((span) => /^(npx |npm run )?onceflow /.test(span)),
  ].join('\n');
  const found = [
    ...[...text.matchAll(/\bnpx onceflow ([a-z][a-z-]*)(?:[ \t]+([a-z][a-z-]*))?/g)],
    ...[...code.matchAll(/(?:^|[\s(;&|])onceflow ([a-z][a-z-]*)(?:[ \t]+([a-z][a-z-]*))?/gm)],
    ...[...code.matchAll(/\bnpm run onceflow -- ([a-z][a-z-]*)(?:[ \t]+([a-z][a-z-]*))?/g)],
  ];
  return found.map((match) => ({ file, group: match[1]!, command: match[2] }));
});

/** The CLI's usage as a map of group to its commands (empty: a group that takes no command word). */
function commandsOf(usage: string): Map<string, Set<string>> {
  const commands = new Map<string, Set<string>>();
  for (const match of usage.matchAll(/\bonceflow ([a-z][a-z-]*)((?: [a-z][a-z|-]*)?)/g)) {
    const group = commands.get(match[1]!) ?? new Set<string>();
    for (const command of match[2]!.trim().split('|').filter(Boolean)) group.add(command);
    commands.set(match[1]!, group);
  }
  return commands;
}

/** The usage the CLI prints for a command line it does not take. */
async function cliUsage(): Promise<string> {
  let printed = '';
  const io: CliIo = { env: {}, out: (text) => void (printed += `${text}\n`), err: (text) => void (printed += `${text}\n`) };
  const code = await runCli([], io);
  expect(code).toBe(2);
  return printed;
}

/**
 * Commands another change is adding to the CLI: until their usage appears in
 * src/cli, their assertion waits (skipped, with the reason in its name); once
 * it does, they are checked like every other command.
 */
const LANDING = ['check'];
const cliSource = readdirSync(path.join(ROOT, 'src', 'cli'))
  .filter((name) => name.endsWith('.ts'))
  .map((name) => readFileSync(path.join(ROOT, 'src', 'cli', name), 'utf8'))
  .join('\n');
const landed = (group: string): boolean => new RegExp(`onceflow ${group}\\b`).test(cliSource);

describe('the commands the documentation names', () => {
  let usage: Map<string, Set<string>>;
  beforeAll(async () => {
    usage = commandsOf(await cliUsage());
  });

  it('finds the commands it checks', () => {
    // Assert: a parser that finds nothing would pass everything below.
    expect(npmScripts.length).toBeGreaterThan(20);
    expect(cliReferences.length).toBeGreaterThan(20);
    expect([...usage.keys()]).toEqual(expect.arrayContaining(['contracts', 'keys', 'jobs', 'routes']));
    expect([...usage.get('keys')!]).toEqual(['create', 'list', 'revoke']);
  });

  it.each([...new Set(npmScripts.map((s) => s.script))].sort())('npm %s is a script of package.json', (script) => {
    // Assert
    expect(scripts).toContain(script);
  });

  const references = [...new Map(cliReferences.map((r) => [`${r.group} ${r.command ?? ''}`.trim(), r])).values()].sort((a, b) => `${a.group} ${a.command}`.localeCompare(`${b.group} ${b.command}`));
  for (const reference of references) {
    const name = `onceflow ${reference.group}${reference.command ? ` ${reference.command}` : ''} (${reference.file}) is a command of the CLI`;
    const waiting = LANDING.includes(reference.group) && !landed(reference.group);
    (waiting ? it.skip : it)(waiting ? `${name} — waits for \`onceflow ${reference.group}\` to land in src/cli` : name, () => {
      // Assert
      const commands = usage.get(reference.group);
      expect({ group: reference.group, known: commands !== undefined }).toEqual({ group: reference.group, known: true });
      // A group whose usage takes no command word (onceflow check [...]) takes what follows as arguments.
      if (reference.command !== undefined && commands!.size > 0) expect([...commands!]).toContain(reference.command);
    });
  }
});
