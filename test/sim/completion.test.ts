import { answerShape, completionContent, type SimChatMessage } from '../../src/sim/completion';

const REPLY_SYSTEM = 'You are a support agent. Answer with one JSON object and nothing else: {"reply": string, "escalate": boolean}. Set escalate to true when a human must follow up.';
const SUMMARY_SYSTEM = 'Summarise the ticket. Answer with one JSON object and nothing else: {"summary": string, "priority": "low" | "high"}. Say "high" when the customer wants money back.';

const conversation = (system: string, user: string): SimChatMessage[] => [
  { role: 'system', content: system },
  { role: 'user', content: user },
];

describe('the simulated provider answers the shape the system prompt asks for', () => {
  it('answers support.reply byte for byte as before, in every style', () => {
    // Arrange
    const messages = conversation(REPLY_SYSTEM, 'Ticket T-1 (email). The customer wrote:\nI want a refund @sink(reset) @sim(sim-primary:ok)');
    const reply = 'sim-primary: Thanks for reaching out — I have passed your refund request to a colleague who can approve it. [ref e1a8f72e] @sink(reset)';

    // Act / Assert
    expect(completionContent('sim-primary', messages, 'json')).toBe(JSON.stringify({ reply, escalate: true }));
    expect(completionContent('sim-primary', messages, 'extra-key')).toBe(JSON.stringify({ reply, escalate: true, confidence: 0.9 }));
    expect(completionContent('sim-primary', messages, 'prose')).toBe(`Sure! Here is my answer. ${reply} Let me know if there is anything else.`);
  });

  it('answers the keys a system prompt names, in its order, with a value of each named type', () => {
    // Arrange
    const messages = conversation(SUMMARY_SYSTEM, 'Ticket T-9: The screen arrived broken.');

    // Act
    const answer = JSON.parse(completionContent('sim-backup', messages, 'json'));

    // Assert
    expect(Object.keys(answer)).toEqual(['summary', 'priority']);
    expect(answer.summary).toMatch(/^sim-backup: summary of the request \[ref [0-9a-f]{8}\]$/);
    expect(answer.priority).toBe('low');
  });

  it('chooses the last of the named literals when a user message asks for a refund, as escalate is true then', () => {
    const messages = conversation(SUMMARY_SYSTEM, 'Ticket T-9: I was charged twice, please refund me.');
    expect(JSON.parse(completionContent('sim-primary', messages, 'json')).priority).toBe('high');
  });

  it('keeps extra-key and prose for any shape: one more key, or text that is not JSON', () => {
    const messages = conversation(SUMMARY_SYSTEM, 'Ticket T-9: The screen arrived broken. @sink(reset)');
    const extra = JSON.parse(completionContent('sim-primary', messages, 'extra-key'));
    expect(Object.keys(extra)).toEqual(['summary', 'priority', 'confidence']);
    const prose = completionContent('sim-primary', messages, 'prose');
    expect(prose).toMatch(/^Sure! Here is my answer\. sim-primary: summary of the request \[ref [0-9a-f]{8}\] @sink\(reset\) Let me know/);
    expect(() => JSON.parse(prose)).toThrow();
  });

  it.each([
    ['no braces at all', 'Answer briefly.', undefined],
    ['a user message naming keys (only system prompts count)', undefined, undefined],
    ['booleans, numbers and literals', 'Reply {"ok": boolean, "score": number, "tone": "calm" | "warm"}', [['ok', 'boolean'], ['score', 'number'], ['tone', ['calm', 'warm']]]],
  ])('reads the shape from the system prompt: %s', (_what, system, expected) => {
    const messages: SimChatMessage[] = system ? [{ role: 'system', content: system }] : [{ role: 'user', content: '{"summary": string}' }];
    expect(answerShape(messages)).toEqual(expected);
  });
});
