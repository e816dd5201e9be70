import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';

/**
 * A principal past its daily budget, through both entries: the SDKs raise
 * their own rate-limit error at once (a repeat cannot change a spent
 * budget), and a replay of an earlier key is still answered.
 */
describe('the protocol entries past a daily budget', () => {
  let stack: TestStack;
  let url: string;
  const sent: number[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    sent.push(response.status);
    return response;
  };

  beforeAll(async () => {
    // One token a day: the first job spends it.
    stack = await startTestStack({ env: { ONCEFLOW_BUDGET_TOKENS_PER_DAY: '1' } });
    url = await stack.app.listen({ host: '127.0.0.1', port: 0 });
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it("raises the SDKs' RateLimitError for a new intent, not retried, and still answers a replay", async () => {
    // Arrange: the budget spent by a first job
    const openai = new OpenAI({ baseURL: `${url}/openai/v1`, apiKey: KEYS.bob, maxRetries: 3, fetch: recording });
    const anthropic = new Anthropic({ baseURL: `${url}/anthropic`, apiKey: KEYS.bob, maxRetries: 3, fetch: recording });
    const messages = [{ role: 'user' as const, content: 'Spend the budget.' }];
    const first = await openai.chat.completions.create({ model: 'support-chat', messages }, { headers: { 'Idempotency-Key': 'budget-1' } });
    sent.length = 0;

    // Act
    const viaOpenAi = await openai.chat.completions.create({ model: 'support-chat', messages }, { headers: { 'Idempotency-Key': 'budget-2' } }).catch((err: unknown) => err);
    const viaAnthropic = await anthropic.messages.create({ model: 'support-chat', max_tokens: 64, messages }, { headers: { 'Idempotency-Key': 'budget-3' } }).catch((err: unknown) => err);
    const replay = await openai.chat.completions.create({ model: 'support-chat', messages }, { headers: { 'Idempotency-Key': 'budget-1' } });

    // Assert
    expect(viaOpenAi).toBeInstanceOf(OpenAI.RateLimitError);
    expect(viaOpenAi).toMatchObject({ status: 429, code: 'budget-exhausted', type: 'rate_limit_error' });
    expect(viaAnthropic).toBeInstanceOf(Anthropic.RateLimitError);
    expect(sent).toEqual([429, 429, 200]);
    expect(replay).toEqual(first);
  });
});
