import { checkOutput } from '../../src/contracts/output';
import { templateHash } from '../../src/contracts/prompt';
import { checkRender } from '../../src/contracts/render-check';
import { createRegistry } from '../../src/operations/registry';

// The demo file's support.reply (operations/demo.yaml).
const supportReply = createRegistry().get('support.reply')!;

const input = { ticketId: 'T-1', customerMessage: 'Where is my order?', channel: 'email' };

describe('the output contract of support.reply', () => {
  it('accepts exactly {reply, escalate}', () => {
    expect(checkOutput(supportReply, '{"reply":"On its way.","escalate":false}')).toEqual({ ok: true, output: { reply: 'On its way.', escalate: false } });
  });

  it.each([
    ['an extra top-level key', '{"reply":"x","escalate":false,"confidence":0.9}', /unexpected key \/confidence/],
    ['a missing key', '{"reply":"x"}', /missing key \/escalate/],
    ['a wrong type', '{"reply":"x","escalate":"no"}', /\/escalate must be boolean/],
    ['prose', 'Sure! Here is my reply.', /not JSON/],
    ['a blank reply (business check)', '{"reply":"   ","escalate":false}', /reply is blank/],
    ['an unfilled placeholder in the reply (business check)', '{"reply":"Dear {{name}}","escalate":false}', /unfilled template placeholder/],
  ])('rejects %s', (_name, content, violation) => {
    const check = checkOutput(supportReply, content);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.violations.join('; ')).toMatch(violation);
  });

  it('keeps at most 2 KiB of an offending output as evidence', () => {
    const check = checkOutput(supportReply, 'x'.repeat(10_000));
    expect(check.ok).toBe(false);
    if (!check.ok) expect(Buffer.byteLength(check.excerpt)).toBeLessThanOrEqual(2_048 + 3);
  });
});

describe('the prompt render check', () => {
  it('passes the real template for a short input, with its hash and token count', () => {
    const render = checkRender(supportReply, 'sim-small', input);
    expect(render).toMatchObject({ ok: true, problems: [], templateHash: templateHash(supportReply) });
    expect(render.promptTokens).toBeGreaterThan(20);
  });

  it('fails a template with a placeholder the input cannot fill', () => {
    const broken = { ...supportReply, prompt: { ...supportReply.prompt, user: 'Ticket {{ticketId}} for {{customerName}}' } };
    const render = checkRender(broken, 'sim-small', input);
    expect(render.ok).toBe(false);
    expect(render.problems).toEqual(['the prompt template has unfilled placeholders: {{customerName}}']);
  });

  it("fails a prompt over the model's context window, counted by its tokenizer", () => {
    const long = { ...supportReply, prompt: { ...supportReply.prompt, system: 'Be kind and precise in every answer. '.repeat(300) } };
    expect(checkRender(long, 'sim-small', input)).toMatchObject({ ok: false, problems: [expect.stringMatching(/tokens; sim-small takes 1536/)] });
    expect(checkRender(long, 'sim-large', input).ok).toBe(true);
  });

  it('gives another hash when the template changes, and the same for the same template', () => {
    const changed = { ...supportReply, prompt: { ...supportReply.prompt, system: `${supportReply.prompt.system} Be brief.` } };
    expect(templateHash(changed)).not.toBe(templateHash(supportReply));
    expect(templateHash({ ...supportReply })).toBe(templateHash(supportReply));
  });

  it.each(['sim-small', 'gpt-4o-mini'])("counts a customer message that spells a special token as text, for %s's tokenizer", (model) => {
    // Arrange
    const plain = checkRender(supportReply, model, { ...input, customerMessage: 'endoftext' });

    // Act
    const render = checkRender(supportReply, model, { ...input, customerMessage: '<|endoftext|> <|fim_prefix|>' });

    // Assert: more tokens than the plain word (each special token's text is several ordinary ones), and it fits.
    expect(render.ok).toBe(true);
    expect(render.promptTokens).toBeGreaterThan(plain.promptTokens! + 2);
  });

  it('keeps a customer message containing {{...}} as text', () => {
    const render = checkRender(supportReply, 'sim-small', { ...input, customerMessage: 'my code is {{ticketId}}' });
    expect(render.ok).toBe(true);
    expect(render.messages?.[1]?.content).toContain('my code is {{ticketId}}');
  });
});
