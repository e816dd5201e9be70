import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** PEM files of a private CA, a server certificate it signed, a client certificate it signed, and a stranger's. */
export interface TestPki {
  dir: string;
  caFile: string;
  serverCert: Buffer;
  serverKey: Buffer;
  ca: Buffer;
  clientCertFile: string;
  clientKeyFile: string;
  strangerCertFile: string;
  strangerKeyFile: string;
  otherCaFile: string;
  remove(): void;
}

/** Makes a small PKI with the openssl command line (the server's name is `serverName`). */
export function makeTestPki(serverName: string): TestPki {
  const dir = mkdtempSync(path.join(tmpdir(), 'onceflow-pki-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const selfSignedCa = (name: string, cn: string) => openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', `/CN=${cn}`, '-keyout', file(`${name}.key`), '-out', file(`${name}.crt`));
  const signed = (name: string, cn: string, extensions: string) => {
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', `/CN=${cn}`, '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`));
    writeFileSync(file(`${name}.ext`), extensions);
    openssl('x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', file(`${name}.ext`), '-out', file(`${name}.crt`));
  };
  selfSignedCa('ca', 'onceflow test CA');
  selfSignedCa('other-ca', 'another CA');
  signed('server', serverName, `subjectAltName=DNS:${serverName}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`);
  signed('client', 'onceflow-worker', 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n');
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=stranger', '-keyout', file('stranger.key'), '-out', file('stranger.crt'));
  return {
    dir,
    caFile: file('ca.crt'),
    ca: readFileSync(file('ca.crt')),
    serverCert: readFileSync(file('server.crt')),
    serverKey: readFileSync(file('server.key')),
    clientCertFile: file('client.crt'),
    clientKeyFile: file('client.key'),
    strangerCertFile: file('stranger.crt'),
    strangerKeyFile: file('stranger.key'),
    otherCaFile: file('other-ca.crt'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface TlsProxy {
  address: string;
  /** The authorization headers the proxy saw, in order. */
  seenAuthorization: string[];
  close(): Promise<void>;
}

/**
 * A secured front for a plain Temporal server, as a Temporal Cloud endpoint
 * behaves: gRPC over TLS with a client certificate required (mutual TLS) and,
 * when `apiKey` is given, `authorization: Bearer <key>` required on every call
 * (UNAUTHENTICATED otherwise). Calls are passed through to `upstream`.
 */
export async function startTlsProxy(opts: { pki: TestPki; upstream: string; apiKey?: string }): Promise<TlsProxy> {
  const upstream = http2.connect(`http://${opts.upstream}`);
  upstream.on('error', () => undefined);
  const seenAuthorization: string[] = [];
  const server = http2.createSecureServer({ key: opts.pki.serverKey, cert: opts.pki.serverCert, ca: opts.pki.ca, requestCert: true, rejectUnauthorized: true, allowHTTP1: false });
  server.on('stream', (stream, headers) => {
    const authorization = String(headers.authorization ?? '');
    seenAuthorization.push(authorization);
    if (opts.apiKey && authorization !== `Bearer ${opts.apiKey}`) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'invalid API key' }, { endStream: true });
      return;
    }
    const forwarded: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name === ':authority' || name === ':scheme' || name === 'authorization') continue;
      forwarded[name] = value;
    }
    const call = upstream.request(forwarded);
    let trailers: http2.IncomingHttpHeaders = {};
    call.on('response', (responseHeaders) => {
      const { ':status': status, ...rest } = responseHeaders;
      stream.respond({ ':status': status ?? 200, ...rest }, { waitForTrailers: true });
    });
    call.on('trailers', (received) => (trailers = received));
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    call.on('error', () => stream.destroy());
    stream.on('error', () => call.destroy());
    stream.pipe(call);
    call.pipe(stream);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('sessionError', () => undefined);
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    seenAuthorization,
    close: async () => {
      for (const session of sessions) session.destroy();
      upstream.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
