import { Client } from '@temporalio/client';
import type { Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../../src/config';
import { connectTemporal, connectTemporalWorker } from '../../src/temporal/connect';
import { temporalConnectionSettings } from '../../src/temporal/connection-settings';
import { readHarnessState } from '../harness/state';
import { makeTestPki, startTlsProxy, type TestPki, type TlsProxy } from '../harness/tls-proxy';

const SERVER_NAME = 'temporal.onceflow.test';
const API_KEY = 'tk_test_0123456789';

/**
 * Onceflow against a secured Temporal endpoint: the test dev server behind a
 * proxy that wants mutual TLS and an API key, as Temporal Cloud does.
 */
describe('a Temporal cluster behind TLS and an API key', () => {
  let pki: TestPki;
  let proxy: TlsProxy;
  const open: Array<Connection | NativeConnection> = [];

  beforeAll(async () => {
    pki = makeTestPki(SERVER_NAME);
    proxy = await startTlsProxy({ pki, upstream: readHarnessState().temporalAddress, apiKey: API_KEY });
  });

  afterAll(async () => {
    await Promise.allSettled(open.map((connection) => connection.close()));
    await proxy.close();
    pki.remove();
  });

  const env = (overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    TEMPORAL_ADDRESS: proxy.address,
    TEMPORAL_TLS_CA: pki.caFile,
    TEMPORAL_TLS_CERT: pki.clientCertFile,
    TEMPORAL_TLS_KEY: pki.clientKeyFile,
    TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
    TEMPORAL_API_KEY: API_KEY,
    ...overrides,
  });
  const settingsOf = (e: NodeJS.ProcessEnv) => loadConfig(e).temporal.connection;

  it('connects a client with the client certificate, the private CA, the server name and the API key', async () => {
    // Arrange
    const settings = settingsOf(env());

    // Act
    const connection = await connectTemporal(settings);
    open.push(connection);
    const namespace = await new Client({ connection, namespace: readHarnessState().temporalNamespace }).workflowService.describeNamespace({ namespace: readHarnessState().temporalNamespace });

    // Assert
    expect(namespace.namespaceInfo?.name).toBe(readHarnessState().temporalNamespace);
    expect(proxy.seenAuthorization.at(-1)).toBe(`Bearer ${API_KEY}`);
  });

  it('connects a worker (the native connection) the same way', async () => {
    // Arrange
    const settings = settingsOf(env());
    const before = proxy.seenAuthorization.length;

    // Act
    const connection = await connectTemporalWorker(settings);
    open.push(connection);

    // Assert
    expect(proxy.seenAuthorization.length).toBeGreaterThan(before);
    expect(proxy.seenAuthorization.slice(before).every((header) => header === `Bearer ${API_KEY}`)).toBe(true);
  });

  it('says the handshake failed, and what to check, without a client certificate', async () => {
    // Arrange
    const settings = settingsOf(env({ TEMPORAL_TLS_CERT: '', TEMPORAL_TLS_KEY: '' }));

    // Act
    const connecting = connectTemporal(settings);

    // Assert
    await expect(connecting).rejects.toThrow(/TLS handshake with Temporal at .* failed .*TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT/);
  });

  it('says the handshake failed when the server certificate is not signed by the given CA', async () => {
    // Arrange
    const settings = settingsOf(env({ TEMPORAL_TLS_CA: pki.otherCaFile }));

    // Act
    const connecting = connectTemporalWorker(settings);

    // Assert
    await expect(connecting).rejects.toThrow(/TLS handshake with Temporal at .* failed/);
  });

  it('says the handshake failed for a client certificate the server does not trust', async () => {
    // Arrange
    const settings = settingsOf(env({ TEMPORAL_TLS_CERT: pki.strangerCertFile, TEMPORAL_TLS_KEY: pki.strangerKeyFile }));

    // Act
    const connecting = connectTemporal(settings);

    // Assert
    await expect(connecting).rejects.toThrow(/TLS handshake with Temporal at .* failed/);
  });

  it('says the credentials were refused for a wrong API key, and never prints the key', async () => {
    // Arrange
    const settings = settingsOf(env({ TEMPORAL_API_KEY: 'tk_wrong_secret' }));

    // Act
    const failure = await connectTemporal(settings).then(
      () => undefined,
      (err: Error) => err,
    );

    // Assert
    expect(failure?.message).toMatch(/refused the credentials .*TEMPORAL_API_KEY/);
    expect(failure?.message).not.toContain('tk_wrong_secret');
  });
});

describe('Temporal connection settings', () => {
  it('are plain gRPC when nothing asks for TLS', () => {
    expect(temporalConnectionSettings({}, 'localhost:7233')).toEqual({ address: 'localhost:7233' });
  });

  it('turn TLS on for an API key alone, and for TEMPORAL_TLS=1 with the system roots', () => {
    expect(temporalConnectionSettings({ TEMPORAL_API_KEY: 'k' }, 'ns.tmprl.cloud:7233')).toEqual({ address: 'ns.tmprl.cloud:7233', tls: {}, apiKey: 'k' });
    expect(temporalConnectionSettings({ TEMPORAL_TLS: '1' }, 'a:1')).toEqual({ address: 'a:1', tls: {} });
  });

  it('refuse a certificate without its key, an unreadable file, a file that is not PEM, and TLS off with TLS settings', () => {
    expect(() => temporalConnectionSettings({ TEMPORAL_TLS_CERT: __filename }, 'a:1')).toThrow(ConfigError);
    expect(() => temporalConnectionSettings({ TEMPORAL_TLS_CA: '/nonexistent/ca.pem' }, 'a:1')).toThrow(/TEMPORAL_TLS_CA=\/nonexistent\/ca.pem cannot be read \(ENOENT\)/);
    expect(() => temporalConnectionSettings({ TEMPORAL_TLS_CA: __filename }, 'a:1')).toThrow(/is not a PEM file/);
    expect(() => temporalConnectionSettings({ TEMPORAL_TLS: '0', TEMPORAL_TLS_SERVER_NAME: 'x' }, 'a:1')).toThrow(/TEMPORAL_TLS=0 with TEMPORAL_TLS_\* settings/);
    expect(() => temporalConnectionSettings({ TEMPORAL_TLS: 'yes' }, 'a:1')).toThrow(/TEMPORAL_TLS=yes must be 1 \(on\) or 0 \(off\)/);
  });
});
