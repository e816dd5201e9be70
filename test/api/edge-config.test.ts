import { ConfigError, loadConfig } from '../../src/config';

/** The API's edge settings are parsed once, with documented defaults, and refuse nonsense at boot. */
describe('API edge configuration', () => {
  it('has the documented defaults', () => {
    expect(loadConfig({}).api).toMatchObject({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 72_000,
      maxConnections: 2_048,
      authFailuresPerWindow: 20,
      authFailureWindowMs: 60_000,
      trustProxy: false,
    });
  });

  it('reads every setting from its variable', () => {
    const api = loadConfig({
      ONCEFLOW_API_HEADERS_TIMEOUT_MS: '500',
      ONCEFLOW_API_REQUEST_TIMEOUT_MS: '1500',
      ONCEFLOW_API_KEEP_ALIVE_TIMEOUT_MS: '5000',
      ONCEFLOW_API_MAX_CONNECTIONS: '10',
      ONCEFLOW_AUTH_FAILURES_PER_WINDOW: '3',
      ONCEFLOW_AUTH_FAILURE_WINDOW_MS: '1000',
      ONCEFLOW_API_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1',
    }).api;
    expect(api).toMatchObject({ headersTimeoutMs: 500, requestTimeoutMs: 1500, keepAliveTimeoutMs: 5000, maxConnections: 10, authFailuresPerWindow: 3, authFailureWindowMs: 1000, trustProxy: ['10.0.0.0/8', '127.0.0.1'] });
  });

  it.each([
    ['true', true],
    ['2', 2],
    ['false', false],
  ])('reads ONCEFLOW_API_TRUST_PROXY=%s as %p', (value, expected) => {
    expect(loadConfig({ ONCEFLOW_API_TRUST_PROXY: value }).api.trustProxy).toEqual(expected);
  });

  it('refuses a headers timeout longer than the request timeout', () => {
    expect(() => loadConfig({ ONCEFLOW_API_HEADERS_TIMEOUT_MS: '20000', ONCEFLOW_API_REQUEST_TIMEOUT_MS: '10000' })).toThrow(ConfigError);
  });

  it.each(['ONCEFLOW_API_REQUEST_TIMEOUT_MS', 'ONCEFLOW_API_MAX_CONNECTIONS', 'ONCEFLOW_AUTH_FAILURES_PER_WINDOW'])('refuses %s that is not a positive whole number', (name) => {
    expect(() => loadConfig({ [name]: '0' })).toThrow(new RegExp(name));
    expect(() => loadConfig({ [name]: 'soon' })).toThrow(new RegExp(name));
  });
});
