import { createAnthropicProvider } from '../../src/providers/anthropic';
import { createOpenAiCompatibleProvider } from '../../src/providers/openai-compatible';
import { anthropicUsage, openAiUsage } from '../../src/providers/usage';
import { startSimProvider, type SimProvider } from '../../src/sim/provider-server';
import { completionRequest, sendJson, startFakeServer, type FakeServer } from './fake-http';

describe('usage as providers report it', () => {
  it('reads an OpenAI usage block, cached tokens included', () => {
    const usage = openAiUsage({ id: 'chatcmpl-1', model: 'gpt-4o-mini-2024-07-18', usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 64 } } });
    expect(usage).toEqual({ inputTokens: 120, outputTokens: 30, cachedTokens: 64, model: 'gpt-4o-mini-2024-07-18', providerRequestId: 'chatcmpl-1' });
  });

  it('reads an Anthropic usage block, adding cache reads and writes to the input', () => {
    const usage = anthropicUsage({ id: 'msg_1', model: 'claude-x', usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 7 } });
    expect(usage).toEqual({ inputTokens: 117, outputTokens: 5, cachedTokens: 100, model: 'claude-x', providerRequestId: 'msg_1' });
  });

  it('gives nothing for a body without usage, or with usage that is not whole counts', () => {
    expect(openAiUsage({ id: 'x', choices: [] })).toBeUndefined();
    expect(openAiUsage({ usage: { prompt_tokens: 1.5, completion_tokens: 2 } })).toBeUndefined();
    expect(anthropicUsage({ usage: { input_tokens: -1, output_tokens: 2 } })).toBeUndefined();
    expect(openAiUsage('not json')).toBeUndefined();
  });
});

describe('adapters return usage with the answer', () => {
  let sim: SimProvider | undefined;
  let server: FakeServer | undefined;
  afterEach(async () => {
    await sim?.close();
    await server?.close();
    sim = undefined;
    server = undefined;
  });

  it('the simulator reports usage the way the OpenAI API does, in the answer and in the lookup', async () => {
    // Arrange
    sim = await startSimProvider({ name: 'sim-primary' });
    const provider = createOpenAiCompatibleProvider({ name: 'sim-primary', baseUrl: sim.url, lookup: true });
    const request = completionRequest('Where is my parcel?');

    // Act
    const answer = await provider.complete(request);
    const looked = await provider.lookup!(request.requestId);

    // Assert
    expect(answer.usage).toEqual({ inputTokens: expect.any(Number), outputTokens: expect.any(Number), cachedTokens: 0, model: 'sim-small', providerRequestId: expect.stringMatching(/^chatcmpl-/) });
    expect(answer.usage!.inputTokens).toBeGreaterThan(0);
    expect(looked).toMatchObject({ found: true, status: 'completed', usage: answer.usage });
  });

  it('an OpenAI-compatible server that reports no usage gives an answer without usage', async () => {
    server = await startFakeServer((_request, res) => sendJson(res, 200, { id: 'c1', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }] }));
    const provider = createOpenAiCompatibleProvider({ name: 'bare', baseUrl: `${server.url}/v1` });
    const answer = await provider.complete(completionRequest('Hi'));
    expect(answer.content).toBe('ok');
    expect(answer).not.toHaveProperty('usage');
  });

  it('the Anthropic adapter reads the Messages API usage', async () => {
    server = await startFakeServer((_request, res) =>
      sendJson(res, 200, { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 10, output_tokens: 5 } }),
    );
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url });
    const answer = await provider.complete(completionRequest('Hi', { model: 'claude-test' }));
    expect(answer.usage).toEqual({ inputTokens: 10, outputTokens: 5, cachedTokens: 0, model: 'claude-test', providerRequestId: 'msg_01' });
  });
});
