import { renderPrompt, templateHash } from '../../src/contracts/prompt';
import { checkOutput } from '../../src/contracts/output';
import { requestDigest } from '../../src/jobs/digest';
import { DEMO_OPERATIONS_FILE, loadOperations } from '../../src/operations/load';
import { createRegistry, demoRegistry } from '../../src/operations/registry';

// What support.reply was as code: a request's digest and the template hash its provider contracts are keyed by.
const KNOWN_INPUT = { ticketId: 'T-1', customerMessage: 'Where is my order?', channel: 'email' };
const KNOWN_DIGEST = 'sha256:bc9eac3985aab3c79d2df3e7bf0f28de74c0dd7152fda457be8f8f75ff712bb8';
const KNOWN_TEMPLATE_HASH = 'sha256:be4808d13a6c270cc27561e2630e366c92a4dc7a3c232283095078a81ecc27d3';

describe('the demo operations file', () => {
  const operation = loadOperations(DEMO_OPERATIONS_FILE).registry.get('support.reply')!;

  it('declares support.reply, the read-only ticket.summarize and the alias support-chat, which createRegistry() and demoRegistry() give by default', () => {
    expect(operation).toMatchObject({ name: 'support.reply', schemaVersion: 1, defaultRoute: ['sim-primary', 'sim-backup'], effects: ['message.send'] });
    const summarize = loadOperations(DEMO_OPERATIONS_FILE).registry.get('ticket.summarize')!;
    expect(summarize).toMatchObject({ name: 'ticket.summarize', schemaVersion: 1, defaultRoute: ['sim-primary', 'sim-backup'] });
    expect(summarize.effects ?? []).toEqual([]);
    expect(loadOperations(DEMO_OPERATIONS_FILE).registry.get('support-chat')).toMatchObject({ alias: { json: false }, defaultRoute: ['sim-primary', 'sim-backup'], retry: { hedge: { maxConcurrent: 2 } } });
    expect([...createRegistry().keys()]).toEqual(['support.reply', 'ticket.summarize', 'support-chat']);
    expect([...demoRegistry().keys()]).toEqual(['support.reply', 'ticket.summarize', 'support-chat']);
  });

  it('gives a known request the digest it had before the operation was a declaration', () => {
    expect(requestDigest(operation.name, operation.schemaVersion, KNOWN_INPUT)).toBe(KNOWN_DIGEST);
  });

  it('keeps the template hash, so provider verifications made before still hold', () => {
    expect(templateHash(operation)).toBe(KNOWN_TEMPLATE_HASH);
  });

  it('renders the same prompt', () => {
    expect(renderPrompt(operation, KNOWN_INPUT)).toEqual([
      {
        role: 'system',
        content: 'You are a support agent. Answer with one JSON object and nothing else: {"reply": string, "escalate": boolean}. Set escalate to true when a human must follow up.',
      },
      { role: 'user', content: 'Ticket T-1 (email). The customer wrote:\nWhere is my order?' },
    ]);
  });

  it('runs its declared business checks in order, each with its message', () => {
    expect(checkOutput(operation, '{"reply":"   ","escalate":false}')).toMatchObject({ ok: false, violations: ['reply is blank'] });
    expect(checkOutput(operation, '{"reply":"Dear {{name}}, it ships today.","escalate":false}')).toMatchObject({ ok: false, violations: ['reply contains an unfilled template placeholder'] });
    expect(checkOutput(operation, '{"reply":"It ships today.","escalate":false}')).toEqual({ ok: true, output: { reply: 'It ships today.', escalate: false } });
  });

  it("builds the result from the output and the message's receipt", () => {
    expect(operation.finalize!({ reply: 'On its way.', escalate: false }, { 'message.send': { messageId: 'm-1', foundBy: 'lookup' } })).toEqual({ reply: 'On its way.', escalate: false, messageId: 'm-1' });
  });

  it('checks inputs as before, naming each failing field', () => {
    expect(operation.validateInput({ ticketId: '', channel: 'fax', extra: 1 }).map((error) => error.pointer).sort()).toEqual(['/input/channel', '/input/customerMessage', '/input/extra', '/input/ticketId']);
    expect(operation.validateInput(KNOWN_INPUT)).toEqual([]);
  });

  it('keeps its probes and example', () => {
    expect(operation.probes?.map((probe) => probe.name)).toEqual(['damaged parcel', 'where is my order', 'refund request']);
    expect(operation.validateInput(operation.example)).toEqual([]);
  });
});
