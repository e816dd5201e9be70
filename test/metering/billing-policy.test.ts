import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEMO_OPERATIONS_FILE, loadOperations } from '../../src/operations/load';
import { startTestStack, submitReply, type TestStack } from '../harness/stack';

/** The demo operations file with `billing:` set on support.reply. */
function demoWithBilling(dir: string, billing: string): string {
  const file = path.join(dir, `ops-${billing}.yaml`);
  const text = readFileSync(DEMO_OPERATIONS_FILE, 'utf8').replace('    effects: [message.send]\n', `    effects: [message.send]\n    billing: ${billing}\n`);
  writeFileSync(file, text);
  return file;
}

describe("an operation's billing policy", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'onceflow-billing-'));
  let stack: TestStack | undefined;
  afterAll(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('binds each job to the policy in force when its intent was admitted', async () => {
    // Arrange
    const operations = loadOperations(demoWithBilling(dir, 'all-attempts')).registry;
    stack = await startTestStack({ worker: false, operations });

    // Act
    const job = (await submitReply(stack, { message: 'bill every attempt' })).json();

    // Assert
    const { rows } = await stack.db.pool.query('SELECT billing FROM jobs WHERE id = $1', [job.id]);
    expect(rows[0].billing).toBe('all_attempts');
  });

  it('refuses a policy it does not know, naming where', () => {
    expect(() => loadOperations(demoWithBilling(dir, 'everything'))).toThrow(/\/operations\/0\/billing/);
  });
});
