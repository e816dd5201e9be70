import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { anchorsOf, docFiles, linksOf, ROOT } from './markdown';

/**
 * The README and the pages of docs/ point at each other and at the code: every
 * relative link must land on a file that exists, and every #anchor on a
 * heading of the page it names.
 */
describe('the links of the documentation', () => {
  const files = docFiles();
  const relative = files.flatMap(({ file, text }) =>
    linksOf(text)
      .filter(({ target }) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
      .map(({ target, line }) => ({ file, target, line })),
  );

  it('finds the links it checks', () => {
    // Assert: a parser that finds nothing would pass everything below.
    expect(files.map((f) => f.file)).toEqual(expect.arrayContaining(['README.md', 'docs/api.md', 'docs/configuration.md']));
    expect(relative.length).toBeGreaterThan(30);
  });

  it.each(relative.map((link) => [`${link.file}:${link.line} ${link.target}`, link] as const))('%s resolves', (_name, link) => {
    // Arrange
    const [pathPart, anchor] = link.target.split('#', 2) as [string, string | undefined];
    const target = pathPart === '' ? path.join(ROOT, link.file) : path.resolve(path.dirname(path.join(ROOT, link.file)), decodeURI(pathPart));

    // Assert
    expect(path.relative(ROOT, target).startsWith('..')).toBe(false);
    expect(existsSync(target)).toBe(true);
    if (anchor !== undefined) {
      expect(statSync(target).isFile() && target.endsWith('.md')).toBe(true);
      expect([...anchorsOf(readFileSync(target, 'utf8'))]).toContain(anchor);
    }
  });

  it('names nothing outside the project', () => {
    for (const { file, text } of files) {
      // Assert: the shared design notes are not the users'; the project carries its own.
      expect({ file, shared: /\.\.\/shared|shared\/(API|DESIGN|SIM|STYLE)\.md|\bSIM\.md\b/.test(text) }).toEqual({ file, shared: false });
    }
  });
});
