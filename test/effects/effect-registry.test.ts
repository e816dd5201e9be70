import type { Pool } from 'pg';
import type { OnceflowConfig } from '../../src/config';
import type { HttpEffectDeclaration } from '../../src/effects/http-declaration';
import { createEffectRegistry } from '../../src/effects/registry';

/** The effect adapters of a deployment: the built-ins, and the HTTP downstreams its operations file declares. */
describe('the effect registry', () => {
  const config: OnceflowConfig['effects'] = {
    leaseMs: 60_000,
    maxLookupFailures: 10,
    verificationMaxAgeMs: 3_600_000,
    callTimeoutMs: 5_000,
    maxTries: 3,
    backoffMs: 500,
    messagesUrl: 'http://127.0.0.1:7310',
    messagesDeduplicate: false,
    webhookDeduplicates: false,
  };
  const db = {} as Pool;
  const comment: HttpEffectDeclaration = { name: 'ticket.comment', url: '${TICKETS_URL}/comments', deduplicates: true };
  const env = { TICKETS_URL: 'https://tickets.example.com' };

  it('holds the declared effects beside the built-ins', () => {
    // Act
    const adapters = createEffectRegistry({ config, db, declared: [comment], env });

    // Assert
    expect([...adapters.keys()].sort()).toEqual(['message.send', 'record.write', 'ticket.comment']);
    expect(adapters.get('ticket.comment')).toMatchObject({ name: 'ticket.comment', repeatSafe: true });
  });

  it.each(['message.send', 'record.write', 'webhook.notify'])('refuses a declared effect named like the built-in %s, configured or not', (name) => {
    // Act / Assert
    expect(() => createEffectRegistry({ config, db, declared: [{ ...comment, name }], env })).toThrow(`effect ${name}: the name is a built-in effect`);
  });

  it('refuses one name declared twice', () => {
    // Act / Assert
    expect(() => createEffectRegistry({ config, db, declared: [comment, { ...comment }], env })).toThrow('effect ticket.comment: the name is declared twice');
  });

  it('refuses a declared timeout that outlasts the effect lease', () => {
    // Act / Assert
    expect(() => createEffectRegistry({ config, db, declared: [{ ...comment, timeoutMs: 60_000 }], env })).toThrow(/ticket\.comment: timeoutMs must be shorter than the effect lease/);
  });

  it('reads ${ENV} from the environment it is given, and refuses one that is unset', () => {
    // Act / Assert
    expect(() => createEffectRegistry({ config, db, declared: [comment], env: {} })).toThrow('effect ticket.comment: the environment variable TICKETS_URL is not set');
  });
});
