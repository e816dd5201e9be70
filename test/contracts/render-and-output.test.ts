import { countPromptTokens, encoder, inPieces, LONGEST_COUNTED_RUN, promptTokenBound } from '../../src/contracts/models';
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

  it('gives a changed template its own hash when the same operation object is edited in place', () => {
    // Arrange: an operation object hashed once, then its prompt and version edited where they are.
    const edited = { ...supportReply, prompt: { ...supportReply.prompt } };
    const before = templateHash(edited);

    // Act
    edited.prompt.user = `${edited.prompt.user} Be brief.`;
    const afterUser = templateHash(edited);
    edited.schemaVersion += 1;
    const afterVersion = templateHash(edited);

    // Assert
    expect(afterUser).not.toBe(before);
    expect(afterVersion).not.toBe(afterUser);
    expect(afterUser).toBe(templateHash({ ...supportReply, prompt: { ...supportReply.prompt, user: `${supportReply.prompt.user} Be brief.` } }));
  });

  it('keeps a customer message containing {{...}} as text', () => {
    const render = checkRender(supportReply, 'sim-small', { ...input, customerMessage: 'my code is {{ticketId}}' });
    expect(render.ok).toBe(true);
    expect(render.messages?.[1]?.content).toContain('my code is {{ticketId}}');
  });
});

describe('counting a prompt with long runs of one kind of character', () => {
  const cjk = Array.from({ length: 4_000 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20_000))).join('');

  it('keeps ordinary text whole: words and sentences with their punctuation are counted as the tokenizer counts them', () => {
    const zh = '您好，我的订单号是一二三四五，已经过了一个星期还没有收到货物，请问什么时候能够发货？'.repeat(40);
    expect(inPieces(zh)).toEqual([zh]);
    expect(inPieces('Where is my order? '.repeat(200))).toHaveLength(1);
    expect(countPromptTokens([{ role: 'user', content: zh }], 'o200k_base')).toBe(3 + 4 + encoder('o200k_base').encode(zh, [], []).length);
  });

  it.each([
    ['CJK characters without punctuation', cjk],
    ['one letter', 'a'.repeat(4_000)],
    ['punctuation', '!'.repeat(4_000)],
    ['spaces', `x${' '.repeat(4_000)}y`],
    ['a word without spaces', 'abcdefg'.repeat(570)],
  ])('cuts a run of %s into pieces of at most 64 code points, and counts the pieces', (_, text) => {
    // Act
    const pieces = inPieces(`Order 7: ${text} thanks`);

    // Assert: nothing lost or added, no piece longer than the longest run counted whole.
    expect(pieces.join('')).toBe(`Order 7: ${text} thanks`);
    expect(pieces.length).toBeGreaterThan(4_000 / LONGEST_COUNTED_RUN - 2);
    expect(Math.max(...pieces.map((piece) => Array.from(piece).length))).toBeLessThanOrEqual(LONGEST_COUNTED_RUN);
    const tokenizer = encoder('cl100k_base');
    expect(countPromptTokens([{ role: 'user', content: `Order 7: ${text} thanks` }], 'cl100k_base')).toBe(3 + 4 + pieces.reduce((sum, piece) => sum + tokenizer.encode(piece, [], []).length, 0));
  });

  it('counts a word run in pieces no lower than whole (a prompt that fits still fits), within a few per cent', () => {
    const text = 'abcdefg'.repeat(570);
    const whole = encoder('cl100k_base').encode(text, [], []).length;
    const counted = countPromptTokens([{ role: 'user', content: text }], 'cl100k_base') - 7;
    expect(counted).toBeGreaterThanOrEqual(whole);
    expect(counted).toBeLessThanOrEqual(whole * 1.05);
  });
});

describe('deciding that a prompt fits before a request is sent', () => {
  const texts = [
    'Where is my order? ',
    '您好，我的订单号是一二三四五，已经过了一个星期还没有收到货物。',
    '👩‍👩‍👧‍👦🇯🇵 e\u0301 ',
    '<|endoftext|> <|fim_prefix|><|im_start|>',
    '                                                                                ',
    '0123456789'.repeat(20),
  ];

  it.each(['cl100k_base', 'o200k_base'] as const)('bounds the count from above by its UTF-8 bytes and framing, for %s', (encoding) => {
    for (const text of texts) {
      for (const times of [1, 7, 40]) {
        const messages = [
          { role: 'system' as const, content: text.repeat(times) },
          { role: 'user' as const, content: `Ticket T-1: ${text}` },
        ];
        expect(countPromptTokens(messages, encoding)).toBeLessThanOrEqual(promptTokenBound(messages));
      }
    }
  });

  it('sends a prompt its bytes prove fits without counting it, and counts it when asked to', () => {
    const decided = checkRender(supportReply, 'sim-small', input, undefined, 'to-decide');
    expect(decided).toMatchObject({ ok: true, problems: [], templateHash: templateHash(supportReply) });
    expect(decided.promptTokens).toBeUndefined();
    expect(decided.messages).toEqual(checkRender(supportReply, 'sim-small', input).messages);
    expect(checkRender(supportReply, 'sim-small', input).promptTokens).toBeGreaterThan(20);
  });

  it("counts a prompt whose bytes could exceed the window, and refuses one over the model's window", () => {
    // Arrange: about 2,700 bytes that are about 600 tokens (over sim-small's 1,536 by bytes, under it by tokens); and one over it by tokens too.
    const wordy = { ...supportReply, prompt: { ...supportReply.prompt, system: 'Be kind and precise. '.repeat(130) } };
    const long = { ...supportReply, prompt: { ...supportReply.prompt, system: 'Be kind and precise in every answer. '.repeat(300) } };

    // Act
    const fits = checkRender(wordy, 'sim-small', input, undefined, 'to-decide');
    const over = checkRender(long, 'sim-small', input, undefined, 'to-decide');

    // Assert
    expect(fits.ok).toBe(true);
    expect(fits.promptTokens).toBe(checkRender(wordy, 'sim-small', input).promptTokens);
    expect(fits.promptTokens).toBeLessThan(1_536);
    expect(over).toMatchObject({ ok: false, problems: [expect.stringMatching(/tokens; sim-small takes 1536/)] });
  });
});
