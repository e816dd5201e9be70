import { Connection, type ConnectionOptions } from '@temporalio/client';
import { DefaultLogger, NativeConnection, type NativeConnectionOptions, Runtime } from '@temporalio/worker';
import { connect as tlsConnect } from 'node:tls';
import { describeTemporalConnection, type TemporalConnectionSettings } from './connection-settings';

/** The SDK's options (client and worker take the same TLS and API-key shape). */
function sdkOptions(settings: TemporalConnectionSettings): Pick<ConnectionOptions & NativeConnectionOptions, 'address' | 'tls' | 'apiKey'> {
  const tls = settings.tls
    ? {
        ...(settings.tls.serverName ? { serverNameOverride: settings.tls.serverName } : {}),
        ...(settings.tls.ca ? { serverRootCACertificate: settings.tls.ca } : {}),
        ...(settings.tls.clientCert ? { clientCertPair: settings.tls.clientCert } : {}),
      }
    : undefined;
  return { address: settings.address, ...(tls ? { tls } : {}), ...(settings.apiKey ? { apiKey: settings.apiKey } : {}) };
}

/** The messages of an error and of its causes, outermost first. */
function messagesOf(err: unknown): string {
  const messages: string[] = [];
  for (let cause = err as (Error & { cause?: unknown }) | undefined; cause && messages.length < 5; cause = cause.cause as typeof cause) {
    messages.push(cause.message ?? String(cause));
  }
  return messages.join(': ');
}

/**
 * A TLS handshake alone, with the connection's settings: what the server said
 * of it (an alert such as "certificate required" arrives just after a TLS 1.3
 * handshake), or undefined when it was accepted. The gRPC client only says
 * that it could not connect.
 */
export function probeTls(settings: TemporalConnectionSettings, waitMs = 1_000): Promise<string | undefined> {
  const tls = settings.tls;
  if (!tls) return Promise.resolve(undefined);
  const [host, port] = [settings.address.slice(0, settings.address.lastIndexOf(':')), Number(settings.address.slice(settings.address.lastIndexOf(':') + 1))];
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: host.replace(/^\[|\]$/g, ''),
      port,
      servername: tls.serverName ?? host,
      ALPNProtocols: ['h2'],
      ...(tls.ca ? { ca: tls.ca } : {}),
      ...(tls.clientCert ? { cert: tls.clientCert.crt, key: tls.clientCert.key } : {}),
    });
    let timer: NodeJS.Timeout | undefined;
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    socket.once('secureConnect', () => {
      // Accepted once the server speaks (HTTP/2 settings) or stays quiet a moment without an alert.
      socket.once('data', () => done(undefined));
      timer = setTimeout(() => done(undefined), waitMs);
    });
    socket.once('error', (err) => done(err.message.replace(/\s+/g, ' ').trim()));
    socket.once('close', () => done('the server closed the connection during the handshake'));
  });
}

/** One line that says what failed and which settings to look at, from the SDK's error (and, for TLS, a handshake probe). */
export function explainConnectError(settings: TemporalConnectionSettings, err: unknown, handshake?: string): Error {
  const message = handshake ? `${messagesOf(err)}; the handshake alone: ${handshake}` : messagesOf(err);
  const where = describeTemporalConnection(settings);
  if (/unauthenticated|api key|authoriz|permission denied|code: 16|status: Unauthenticated/i.test(message)) {
    return new Error(`Temporal at ${where} refused the credentials (${message}); check TEMPORAL_API_KEY or the client certificate`);
  }
  if (/tls|ssl|handshake|certificate|alert|UnknownIssuer|InvalidCertificate|NotValidForName|wrong version number/i.test(message)) {
    return new Error(`the TLS handshake with Temporal at ${where} failed (${message}); check TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and TEMPORAL_TLS_SERVER_NAME`);
  }
  return new Error(`Temporal at ${where} is not reachable (${message}); check TEMPORAL_ADDRESS or unset it to run the dev server`);
}

/**
 * Connects a client to Temporal, turning the SDK's retry-forever into a one-line error.
 * @throws Error naming the settings to check when the server does not answer, the handshake fails or the credentials are refused.
 */
export async function connectTemporal(settings: TemporalConnectionSettings): Promise<Connection> {
  try {
    return await Connection.connect({ ...sdkOptions(settings), connectTimeout: '5 seconds' });
  } catch (err) {
    throw explainConnectError(settings, err, await probeTls(settings).catch(() => undefined));
  }
}

/**
 * Connects a worker to Temporal (the SDK's native connection).
 * @throws Error as connectTemporal does.
 */
export async function connectTemporalWorker(settings: TemporalConnectionSettings): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(sdkOptions(settings));
  } catch (err) {
    throw explainConnectError(settings, err, await probeTls(settings).catch(() => undefined));
  }
}

let runtimeInstalled = false;

/**
 * Installs the Temporal runtime once per process: warnings and errors only, and
 * no signal handlers of its own (each entry point shuts down in its own order).
 */
export function installTemporalRuntime(level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' = 'WARN'): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger(level), shutdownSignals: [] });
  runtimeInstalled = true;
}
