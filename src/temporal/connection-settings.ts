import { readFileSync } from 'node:fs';
import { ConfigError } from '../config-error';

/**
 * How Onceflow reaches a Temporal cluster: plain gRPC to the dev server, or
 * TLS (with a client certificate for mutual TLS, a CA for a private one, a
 * server name when the address is not the certificate's) and an API key, as
 * Temporal Cloud and secured self-hosted clusters want.
 */
export interface TemporalConnectionSettings {
  address: string;
  /** Absent: plain gRPC. */
  tls?: {
    /** The name the server's certificate must carry, when the address does not (SNI too). */
    serverName?: string;
    /** PEM: the CA that signed the server's certificate; absent: the system's roots. */
    ca?: Buffer;
    /** PEM: the client certificate and its key, for mutual TLS. */
    clientCert?: { crt: Buffer; key: Buffer };
  };
  /** Sent as a bearer token on every call. */
  apiKey?: string;
}

const TLS_FILES = { ca: 'TEMPORAL_TLS_CA', cert: 'TEMPORAL_TLS_CERT', key: 'TEMPORAL_TLS_KEY' } as const;

function pemFile(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const file = env[name];
  if (!file) return undefined;
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    throw new ConfigError(`${name}=${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!pem.toString('latin1').includes('-----BEGIN ')) throw new ConfigError(`${name}=${file} is not a PEM file`);
  return pem;
}

/**
 * Reads the connection settings: TEMPORAL_ADDRESS, TEMPORAL_TLS_CERT and
 * TEMPORAL_TLS_KEY (both or neither), TEMPORAL_TLS_CA,
 * TEMPORAL_TLS_SERVER_NAME, TEMPORAL_API_KEY. TLS is on when any of them is
 * set; TEMPORAL_TLS=1 turns it on with none of them (a public CA, no client
 * certificate), TEMPORAL_TLS=0 turns it off.
 * @throws ConfigError naming the variable that is wrong.
 */
export function temporalConnectionSettings(env: NodeJS.ProcessEnv, address: string): TemporalConnectionSettings {
  const flag = env.TEMPORAL_TLS ?? '';
  if (!['', '0', '1'].includes(flag)) throw new ConfigError(`TEMPORAL_TLS=${flag} must be 1 (on) or 0 (off)`);
  const apiKey = env.TEMPORAL_API_KEY || undefined;
  const serverName = env.TEMPORAL_TLS_SERVER_NAME || undefined;
  const ca = pemFile(env, TLS_FILES.ca);
  const crt = pemFile(env, TLS_FILES.cert);
  const key = pemFile(env, TLS_FILES.key);
  if (Boolean(crt) !== Boolean(key)) throw new ConfigError(`${TLS_FILES.cert} and ${TLS_FILES.key} go together: set both (mutual TLS) or neither`);
  const anyTlsSetting = Boolean(ca || crt || serverName);
  if (flag === '0') {
    if (anyTlsSetting) throw new ConfigError('TEMPORAL_TLS=0 with TEMPORAL_TLS_* settings: remove one or the other');
    return { address, ...(apiKey ? { apiKey } : {}) };
  }
  if (flag === '1' || anyTlsSetting || apiKey) {
    return {
      address,
      tls: { ...(serverName ? { serverName } : {}), ...(ca ? { ca } : {}), ...(crt && key ? { clientCert: { crt, key } } : {}) },
      ...(apiKey ? { apiKey } : {}),
    };
  }
  return { address };
}

/** What a log line may say about the connection (never the key or a certificate). */
export function describeTemporalConnection(settings: TemporalConnectionSettings): string {
  if (!settings.tls) return `${settings.address} (plain gRPC${settings.apiKey ? ', API key' : ''})`;
  const parts = ['TLS', settings.tls.clientCert ? 'client certificate' : '', settings.tls.ca ? 'private CA' : '', settings.tls.serverName ? `server name ${settings.tls.serverName}` : '', settings.apiKey ? 'API key' : ''];
  return `${settings.address} (${parts.filter(Boolean).join(', ')})`;
}
