import path from 'node:path';
import { checkOutput } from '../../src/contracts/output';
import { loadOperations } from '../../src/operations/load';
import { OperationsFileError } from '../../src/operations/problems';

const fixture = (name: string): string => path.join(__dirname, 'fixtures', name);

describe('an operation module (module: in the operations file)', () => {
  it('is loaded from its path relative to the file, its code check running after the declared ones', () => {
    // Arrange
    const operation = loadOperations(fixture('with-modules.yaml')).registry.get('ticket.tag')!;

    // Act
    const repeated = checkOutput(operation, '{"tags":["refund","refund"]}');
    const none = checkOutput(operation, '{"tags":[]}');
    const good = checkOutput(operation, '{"tags":["refund","damage"]}');

    // Assert
    expect(repeated).toMatchObject({ ok: false, violations: ['a tag is repeated'] });
    expect(none).toMatchObject({ ok: false, violations: ['one to five tags'] });
    expect(good).toMatchObject({ ok: true });
    expect(operation.finalize!({ tags: ['refund', 'damage'] }, {})).toEqual({ tags: ['damage', 'refund'] });
  });

  it('is checked like a declaration: a loose output contract is refused, naming the module and the pointer', () => {
    // Act
    const thrown = (() => {
      try {
        loadOperations(fixture('with-loose-module.yaml'));
      } catch (error) {
        return error;
      }
      return undefined;
    })();

    // Assert
    expect(thrown).toBeInstanceOf(OperationsFileError);
    expect((thrown as Error).message).toBe(`${path.join(path.dirname(fixture('with-loose-module.yaml')), './loose-output.ts')}: /output: an object in the output contract must say additionalProperties: false`);
  });

  it('that cannot be loaded is named with its entry in the file', () => {
    // Act / Assert
    expect(() => loadOperations(fixture('missing-module.yaml'))).toThrow(/missing-module\.yaml:2:5: \/operations\/0\/module: cannot load \.\/nowhere\.ts/);
  });
});
