import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { requestDigest } from '../../src/jobs/digest';
import { loadOperations } from '../../src/operations/load';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

const v1 = { ticketId: 'T-1', question: 'Where is my parcel?' };
const v2 = { ...v1, language: 'en' };

/** Two input versions of one operation, side by side: each request is checked against, and bound to, the version it names. */
describe('schema versions side by side', () => {
  let stack: TestStack;
  beforeAll(async () => {
    const { registry } = loadOperations(path.join(__dirname, 'fixtures', 'two-versions.yaml'));
    stack = await startTestStack({ worker: false, verify: false, operations: registry });
  });
  afterAll(() => stack.close());

  const submit = (body: object, key = randomUUID()) => stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(KEYS.alice), 'idempotency-key': key }, payload: body });

  it('accepts a request for version 1 and one for version 2, each job bound to its version', async () => {
    // Act
    const old = await submit({ operation: 'support.ask', schemaVersion: 1, input: v1 });
    const current = await submit({ operation: 'support.ask', schemaVersion: 2, input: v2 });

    // Assert
    expect(old.statusCode).toBe(202);
    expect(old.json()).toMatchObject({ schemaVersion: 1, requestDigest: requestDigest('support.ask', 1, v1) });
    expect(current.statusCode).toBe(202);
    expect(current.json()).toMatchObject({ schemaVersion: 2, requestDigest: requestDigest('support.ask', 2, v2) });
  });

  it('takes the newest version when the request names none, as the body was before versions', async () => {
    // Act
    const response = await submit({ operation: 'support.ask', input: v2 });

    // Assert
    expect(response.statusCode).toBe(202);
    expect(response.json().schemaVersion).toBe(2);
  });

  it("checks the input against the version the request names", async () => {
    // Act
    const v1InputAsNewest = await submit({ operation: 'support.ask', input: v1 });
    const v2InputAsV1 = await submit({ operation: 'support.ask', schemaVersion: 1, input: v2 });

    // Assert
    expect(v1InputAsNewest.statusCode).toBe(400);
    expect(v1InputAsNewest.json().errors).toEqual([{ pointer: '/input/language', detail: 'is required' }]);
    expect(v2InputAsV1.statusCode).toBe(400);
    expect(v2InputAsV1.json().errors).toEqual([{ pointer: '/input/language', detail: 'is not a known field' }]);
  });

  it('refuses a version the operation does not have, naming /schemaVersion', async () => {
    // Act
    const response = await submit({ operation: 'support.ask', schemaVersion: 3, input: v2 });

    // Assert
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ type: expect.stringMatching(/validation$/), errors: [{ pointer: '/schemaVersion', detail: 'must be one of 1, 2' }] });
  });

  it('treats one key sent for two versions as two intents (the digest binds schemaVersion)', async () => {
    // Arrange
    const key = randomUUID();
    await submit({ operation: 'support.ask', schemaVersion: 1, input: v1 }, key);

    // Act
    const again = await submit({ operation: 'support.ask', schemaVersion: 1, input: v1 }, key);
    const other = await submit({ operation: 'support.ask', schemaVersion: 2, input: v2 }, key);

    // Assert
    expect(again.statusCode).toBe(200);
    expect(other.statusCode).toBe(409);
  });

  it('documents each version as its own submit body, the older one requiring schemaVersion', async () => {
    // Act
    const doc = (await stack.app.inject({ method: 'GET', url: '/openapi.json' })).json();

    // Assert
    const schemas = doc.components.schemas;
    expect(schemas['SubmitJob.support.ask'].oneOf).toEqual([{ $ref: '#/components/schemas/SubmitJob.support.ask.v2' }, { $ref: '#/components/schemas/SubmitJob.support.ask.v1' }]);
    expect(schemas['SubmitJob.support.ask.v2'].required).toEqual(['operation', 'input']);
    expect(schemas['SubmitJob.support.ask.v1'].required).toEqual(['operation', 'schemaVersion', 'input']);
    expect(schemas['SubmitJob.support.ask.v1'].properties.schemaVersion).toMatchObject({ const: 1 });
    expect(schemas['SubmitJob.support.ask.v1'].examples).toEqual([{ operation: 'support.ask', schemaVersion: 1, input: { ticketId: 'T-1', question: 'Where is my parcel?' } }]);
  });
});
