import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId, operationOfWorkflowId } from '../../src/jobs/scope';

describe('request digest', () => {
  it('does not change with key order or whitespace', () => {
    // Arrange
    const a = JSON.parse('{"ticketId":"T-1","channel":"email","customerMessage":"Hi","meta":{"b":1,"a":[1,2]}}');
    const b = JSON.parse(' { "meta" : { "a" : [ 1 , 2 ], "b" : 1 },\n "customerMessage":"Hi", "channel":"email", "ticketId":"T-1" } ');

    // Act / Assert
    expect(requestDigest('support.reply', 1, a)).toBe(requestDigest('support.reply', 1, b));
  });

  it('changes when any value, the operation or the schema version changes', () => {
    // Arrange
    const input = { ticketId: 'T-1', channel: 'email', customerMessage: 'Hi' };
    const base = requestDigest('support.reply', 1, input);

    // Act / Assert
    expect(requestDigest('support.reply', 1, { ...input, customerMessage: 'Hi!' })).not.toBe(base);
    expect(requestDigest('support.reply', 1, { ...input, channel: 'chat' })).not.toBe(base);
    expect(requestDigest('support.other', 1, input)).not.toBe(base);
    expect(requestDigest('support.reply', 2, input)).not.toBe(base);
  });

  it('treats numbers by value as RFC 8785 does (1.0 and 1 are one number)', () => {
    expect(requestDigest('op', 1, JSON.parse('{"n":1.0}'))).toBe(requestDigest('op', 1, JSON.parse('{"n":1}')));
    expect(requestDigest('op', 1, JSON.parse('{"n":1e2}'))).toBe(requestDigest('op', 1, JSON.parse('{"n":100}')));
  });

  it('is sha256 over the canonical form', () => {
    expect(requestDigest('support.reply', 1, {})).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe('job workflow id', () => {
  it('is the same for the same scope and differs for any other principal, operation or key', () => {
    const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: 'k1' };
    expect(jobWorkflowId(scope)).toBe(jobWorkflowId({ ...scope }));
    expect(jobWorkflowId({ ...scope, principalId: 'bob' })).not.toBe(jobWorkflowId(scope));
    expect(jobWorkflowId({ ...scope, operation: 'x.y' })).not.toBe(jobWorkflowId(scope));
    expect(jobWorkflowId({ ...scope, idempotencyKey: 'k2' })).not.toBe(jobWorkflowId(scope));
  });

  it('does not show the principal or the key', () => {
    const id = jobWorkflowId({ principalId: 'alice', operation: 'support.reply', idempotencyKey: 'secret-intent-key' });
    expect(id).not.toContain('alice');
    expect(id).not.toContain('secret-intent-key');
  });

  it('names its operation, dashes and dots included, and nothing for an ID of another shape', () => {
    const scope = (operation: string, idempotencyKey = 'k1') => ({ principalId: 'alice', operation, idempotencyKey });
    for (const operation of ['support.reply', 'a-b', 'x', 'orders.refund-v2']) {
      for (const key of ['k1', 'k2', 'k3', 'k4']) expect(operationOfWorkflowId(jobWorkflowId(scope(operation, key)))).toBe(operation);
    }
    expect(['job-', 'job-x', 'workflow-1', `job-${'a'.repeat(43)}`, `run-${'a'.repeat(44)}`].map(operationOfWorkflowId)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});
