import { checkOutput } from '../../src/contracts/output';
import { renderPrompt } from '../../src/contracts/prompt';
import { inspectOperations, parseOperations } from '../../src/operations/load';

/** Model aliases in the operations file: checked with the file, registered as operations whose prompt is the conversation. */
describe('model aliases', () => {
  const FILE = '/etc/onceflow/ops.yaml';
  const alias = (extra = '') => `aliases:
  - name: house-chat
    route: [sim-primary, sim-backup]
    probes:
      - { name: hello, messages: [{ role: user, content: Say hello. }] }
${extra}`;

  it('loads a file of aliases only, each an operation whose prompt is the conversation and whose answer is the text', () => {
    // Act
    const registry = parseOperations(alias('    limits: { maxTokens: 100 }\n'), FILE).registry;
    const chat = registry.get('house-chat')!;

    // Assert
    expect(chat.alias).toEqual({ json: false });
    expect(chat.defaultRoute).toEqual(['sim-primary', 'sim-backup']);
    expect(chat.probes).toEqual([{ name: 'hello', input: { messages: [{ role: 'user', content: 'Say hello.' }] } }]);
    expect(renderPrompt(chat, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi {{name}}' }] })).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi {{name}}' }]);
    expect(checkOutput(chat, 'any text at all')).toEqual({ ok: true, output: { content: 'any text at all' } });
    expect(chat.validateInput({ messages: [{ role: 'user', content: 'x' }], maxTokens: 101 })).toEqual([{ pointer: '/input/maxTokens', detail: 'must be <= 100' }]);
    expect(chat.validateInput({ messages: [{ role: 'tool', content: 'x' }] })).not.toEqual([]);
  });

  it('holds an alias with an output contract to it: JSON that fits, and its checks', () => {
    // Arrange
    const registry = parseOperations(
      alias(`    output: { type: object, additionalProperties: false, required: [answer], properties: { answer: { type: string } } }
    checks: [{ field: /answer, nonBlank: true, message: answer is blank }]
`),
      FILE,
    ).registry;
    const chat = registry.get('house-chat')!;

    // Act, Assert
    expect(checkOutput(chat, '{"answer": "yes"}')).toEqual({ ok: true, output: { content: '{"answer": "yes"}' } });
    expect(checkOutput(chat, 'yes')).toMatchObject({ ok: false, violations: ['the output is not JSON'] });
    expect(checkOutput(chat, '{"answer": " "}')).toMatchObject({ ok: false, violations: ['answer is blank'] });
    expect(checkOutput(chat, '{"answer": "yes", "more": 1}')).toMatchObject({ ok: false });
  });

  it.each([
    ['checks without an output contract', alias('    checks: [{ field: /answer, nonBlank: true, message: blank }]\n'), '/aliases/0/checks/0', /declare an output contract first/],
    ['a loose output contract', alias('    output: { type: object, properties: { answer: { type: string } } }\n'), '/aliases/0/output', /additionalProperties: false/],
    ['a field aliases do not have', alias('    prompt: { system: x, user: y }\n'), '/aliases/0/prompt', /is not a known key/],
  ])('names %s, with its pointer and line', (_name, text, pointer, problem) => {
    // Act
    const found = inspectOperations(text, FILE).problems;

    // Assert
    expect(found).toEqual([expect.objectContaining({ file: FILE, pointer: expect.stringContaining(pointer), problem: expect.stringMatching(problem), line: expect.any(Number) })]);
  });

  it('refuses an alias named as an operation is', () => {
    // Arrange: an operation file's operation, and an alias of the same name
    const text = `operations:
  - name: house-chat
    description: d
    versions: [{ schemaVersion: 1, input: { type: object, additionalProperties: false, properties: {} }, example: {} }]
    output: { type: object, additionalProperties: false, properties: {} }
    prompt: { system: s, user: u }
    route: [sim-primary]
${alias()}`;

    // Act
    const found = inspectOperations(text, FILE).problems;

    // Assert
    expect(found).toEqual([expect.objectContaining({ pointer: '/aliases/0/name', problem: expect.stringMatching(/"house-chat" is already declared at \/operations\/0/) })]);
  });
});
