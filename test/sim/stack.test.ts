import net from 'node:net';
import { SimPortInUseError, startSimStack, type SimStack } from '../../src/sim/stack';
import { simStackOptionsFromEnv } from '../../src/sim/main';
import { loadConfig } from '../../src/config';
import { createRegistry } from '../../src/operations/registry';
import { loadProviders } from '../../src/providers/load';
import { getJson, postChat } from './sim-client';

/** Holds a loopback port so the simulators cannot bind it. */
async function occupyPort(): Promise<net.Server> {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  return blocker;
}

function portOf(server: net.Server): number {
  return (server.address() as net.AddressInfo).port;
}

describe('simulator stack', () => {
  let stack: SimStack | undefined;

  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('starts sim-primary, sim-backup and the downstream, each answering on its own URL', async () => {
    // Act
    stack = await startSimStack({});
    const primary = await (await postChat(stack.primary.url, 'Hi')).json();
    const backup = await (await postChat(stack.backup.url, 'Hi')).json();
    const messages = await getJson(`${stack.downstream.url}/v1/messages`);

    // Assert
    expect(JSON.parse(primary.choices[0].message.content).reply).toMatch(/^sim-primary: /);
    expect(JSON.parse(backup.choices[0].message.content).reply).toMatch(/^sim-backup: /);
    expect(messages.body).toEqual({ messages: [] });
  });

  it('stops every server with one close()', async () => {
    // Arrange
    stack = await startSimStack({});
    const urls = [`${stack.primary.url}/models`, `${stack.backup.url}/models`, `${stack.downstream.url}/v1/messages`];

    // Act
    await stack.close();

    // Assert
    for (const url of urls) await expect(fetch(url)).rejects.toThrow();
  });

  it('fails with the role and port of a busy port, and leaves nothing running', async () => {
    // Arrange
    const blocker = await occupyPort();
    try {
      // Act
      const failure = await startSimStack({ backupPort: portOf(blocker) }).catch((error: unknown) => error);

      // Assert
      expect(failure).toBeInstanceOf(SimPortInUseError);
      expect(failure).toMatchObject({ role: 'backup', port: portOf(blocker) });
      expect((failure as Error).message).toContain(String(portOf(blocker)));
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('reads ports and deduplication from the environment, with the documented defaults', () => {
    // Act
    const defaults = simStackOptionsFromEnv({});
    const custom = simStackOptionsFromEnv({ SIM_PRIMARY_PORT: '8001', SIM_DOWNSTREAM_DEDUPE: '1' });

    // Assert
    expect(defaults).toEqual({ primaryPort: 7301, backupPort: 7302, downstreamPort: 7310, downstreamDedupe: false });
    expect(custom).toMatchObject({ primaryPort: 8001, downstreamDedupe: true });
    expect(() => simStackOptionsFromEnv({ SIM_BACKUP_PORT: 'abc' })).toThrow('SIM_BACKUP_PORT');
  });

  it('reads a downstream lie from SIM_DOWNSTREAM_LIE, and the lookup lag after its =', () => {
    // Act
    const never = simStackOptionsFromEnv({ SIM_DOWNSTREAM_LIE: 'lookup-never-found', SIM_DOWNSTREAM_DEDUPE: '1' });
    const slow = simStackOptionsFromEnv({ SIM_DOWNSTREAM_LIE: 'lookup-slow-to-show' });
    const slower = simStackOptionsFromEnv({ SIM_DOWNSTREAM_LIE: 'lookup-slow-to-show=800' });
    const honest = simStackOptionsFromEnv({ SIM_DOWNSTREAM_LIE: '' });

    // Assert
    expect(never).toMatchObject({ downstreamLie: 'lookup-never-found', downstreamDedupe: true });
    expect(slow).toMatchObject({ downstreamLie: 'lookup-slow-to-show' });
    expect(slow.downstreamLookupLagMs).toBeUndefined();
    expect(slower).toMatchObject({ downstreamLie: 'lookup-slow-to-show', downstreamLookupLagMs: 800 });
    expect(honest.downstreamLie).toBeUndefined();
  });

  it.each(['lookup-sometimes', 'lookup-never-found=5', 'lookup-slow-to-show=abc', 'lookup-slow-to-show='])(
    'refuses SIM_DOWNSTREAM_LIE=%s, naming the variable and the lies it knows',
    (value) => {
      // Act
      const read = () => simStackOptionsFromEnv({ SIM_DOWNSTREAM_LIE: value });

      // Assert
      expect(read).toThrow(/SIM_DOWNSTREAM_LIE=.*dedupe-records-twice, lookup-never-found, lookup-found-for-anything, lookup-transformed-key, lookup-slow-to-show/);
    },
  );

  it('starts the downstream with the lie it is given', async () => {
    // Arrange
    stack = await startSimStack({ downstreamLie: 'lookup-never-found' });
    await fetch(`${stack.downstream.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'eff-1' },
      body: JSON.stringify({ ticketId: 'T-1', channel: 'email', text: 'Hi' }),
    });

    // Act
    const found = await fetch(`${stack.downstream.url}/v1/messages/by-key/eff-1`);

    // Assert
    expect(stack.downstream.lie).toBe('lookup-never-found');
    expect(stack.downstream.deliveries()).toHaveLength(1);
    expect(found.status).toBe(404);
  });

  it("points the built-in providers and the messaging URL at the simulators' ports", async () => {
    // Arrange
    stack = await startSimStack({});
    const env = { SIM_PRIMARY_PORT: String(stack.primary.port), SIM_BACKUP_PORT: String(stack.backup.port), SIM_DOWNSTREAM_PORT: String(stack.downstream.port) };
    const config = loadConfig(env);
    const { providers } = await loadProviders(config, createRegistry(), env);

    // Act
    const ask = (name: string) => providers.get(name)!.complete({ model: 'sim-small', messages: [{ role: 'user', content: 'Hi' }], requestId: `port-${name}`, timeoutMs: 5_000 });
    await ask('sim-primary');
    await ask('sim-backup');

    // Assert
    expect(stack.primary.requests()).toHaveLength(1);
    expect(stack.backup.requests()).toHaveLength(1);
    expect(config.effects.messagesUrl).toBe(stack.downstream.url);
    expect(loadConfig({ ...env, ONCEFLOW_MESSAGES_URL: 'https://messages.example/' }).effects.messagesUrl).toBe('https://messages.example');
  });
});
