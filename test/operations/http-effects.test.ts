import { parseOperations } from '../../src/operations/load';
import type { HttpEffectDeclaration } from '../../src/effects/http-declaration';

const FILE = `
operations:
  - name: ticket.answer
    description: Answer a ticket and post the answer as a comment.
    versions:
      - schemaVersion: 1
        input: { type: object, additionalProperties: false, required: [ticketId], properties: { ticketId: { type: string } } }
        example: { ticketId: T-1 }
    output: { type: object, additionalProperties: false, required: [answer], properties: { answer: { type: string } } }
    prompt: { system: Answer briefly., user: "Ticket {{ticketId}}" }
    route: [sim-primary]
    effects: [ticket.comment, record.write]
    result:
      fields: { commentId: { effect: ticket.comment, field: commentId } }
effects:
  - name: ticket.comment
    url: https://tickets.example/api/tickets/{{input.ticketId}}/comments
    method: POST
    headers: { Authorization: "Bearer \${TICKETS_TOKEN}" }
    idempotencyHeader: X-Request-Key
    body: { text: "{{output.answer}}", job: "{{job.id}}" }
    statuses: { done: [2xx], notPerformed: ["429", "503"] }
    receipt: { commentId: /id }
    lookup: { url: "https://tickets.example/api/comments?key={{key}}", found: [200], notFound: [404], receipt: { commentId: /0/id } }
    deduplicates: false
    timeoutMs: 5000
`;

describe('HTTP effects declared in the operations file', () => {
  it('are handed on as declarations, and operations may name them beside the built-in ones', () => {
    // Act
    const loaded = parseOperations(FILE, 'ops.yaml');

    // Assert
    const expected: HttpEffectDeclaration[] = [
      {
        name: 'ticket.comment',
        url: 'https://tickets.example/api/tickets/{{input.ticketId}}/comments',
        method: 'POST',
        headers: { Authorization: 'Bearer ${TICKETS_TOKEN}' },
        idempotencyHeader: 'X-Request-Key',
        body: { text: '{{output.answer}}', job: '{{job.id}}' },
        statuses: { done: ['2xx'], notPerformed: ['429', '503'] },
        receipt: { commentId: '/id' },
        lookup: { url: 'https://tickets.example/api/comments?key={{key}}', found: ['200'], notFound: ['404'], receipt: { commentId: '/0/id' } },
        deduplicates: false,
        timeoutMs: 5000,
      },
    ];
    expect(loaded.httpEffects).toEqual(expected);
    expect(loaded.registry.get('ticket.answer')!.effects).toEqual(['ticket.comment', 'record.write']);
    expect(loaded.registry.get('ticket.answer')!.finalize!({ answer: 'Done.' }, { 'ticket.comment': { commentId: 'c-9' }, 'record.write': {} })).toEqual({ answer: 'Done.', commentId: 'c-9' });
  });
});
