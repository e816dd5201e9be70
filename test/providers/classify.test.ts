import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { startCallDeadline, type CallDeadline } from '../../src/providers/call-deadline';
import {
  classifyHttpStatus,
  classifyTimeout,
  classifyTransportError,
  errorChain,
  parseRetryAfterMs,
} from '../../src/providers/classify';
import { classifySdkError } from '../../src/providers/sdk-errors';

/** An error shaped like undici's: TypeError('fetch failed') caused by a system error. */
function fetchFailure(code: string, syscall: string, message = `${syscall} ${code}`): Error {
  const cause = Object.assign(new Error(message), { code, syscall });
  return new TypeError('fetch failed', { cause });
}

describe('classifyHttpStatus (DESIGN.md attempt outcomes)', () => {
  it.each([
    [400, 'bad_request'],
    [404, 'bad_request'],
    [413, 'bad_request'],
    [422, 'bad_request'],
    [401, 'unauthorized'],
    [403, 'unauthorized'],
    [402, 'rejected'],
    [405, 'rejected'],
    [451, 'rejected'],
    [429, 'rate_limited'],
  ])('classifies %i as failed %s: provably not executed', (status, expectedClass) => {
    // Act
    const failure = classifyHttpStatus(status);

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: expectedClass, httpStatus: status });
  });

  it.each([
    [408, 'timeout'],
    [409, 'in_flight'],
    [500, 'server_error'],
    [501, 'server_error'],
    [502, 'bad_gateway'],
    [503, 'bad_gateway'],
    [504, 'bad_gateway'],
    [529, 'server_error'],
    [599, 'server_error'],
    [302, 'server_error'],
    [200, 'server_error'],
  ])('classifies %i as unknown %s: the provider may have executed', (status, expectedClass) => {
    // Act
    const failure = classifyHttpStatus(status);

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: expectedClass, httpStatus: status });
  });

  it('puts the status and the provider message in the detail', () => {
    expect(classifyHttpStatus(400, { message: "'model' is required" }).detail).toBe("HTTP 400: 'model' is required");
  });

  it('adds retryAfterMs to a 429 from its headers', () => {
    // Act
    const failure = classifyHttpStatus(429, { headers: { 'Retry-After': '2' } });

    // Assert
    expect(failure).toEqual({ outcome: 'failed', class: 'rate_limited', detail: 'HTTP 429', httpStatus: 429, retryAfterMs: 2000 });
  });

  it('leaves retryAfterMs out of a 429 without a usable header', () => {
    expect(classifyHttpStatus(429, { headers: new Headers() })).not.toHaveProperty('retryAfterMs');
  });
});

describe('parseRetryAfterMs', () => {
  const nowMs = Date.parse('2025-01-01T00:00:00Z');

  it.each([
    ['delta-seconds', { 'retry-after': '3' }, 3000],
    ['fractional seconds', { 'retry-after': '0.25' }, 250],
    ['an HTTP date', { 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }, 30_000],
    ['an HTTP date in the past', { 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }, 0],
    ['retry-after-ms, which wins', { 'retry-after-ms': '1500', 'retry-after': '9' }, 1500],
    ['a header record in any case', { 'Retry-After-Ms': '40' }, 40],
  ])('reads %s', (_label, headers, expected) => {
    expect(parseRetryAfterMs(headers, nowMs)).toBe(expected);
  });

  it.each([
    ['no header', {}],
    ['garbage', { 'retry-after': 'soon' }],
    ['a negative number', { 'retry-after': '-5' }],
  ])('gives undefined for %s', (_label, headers) => {
    expect(parseRetryAfterMs(headers, nowMs)).toBeUndefined();
  });

  it('reads a fetch Headers object', () => {
    expect(parseRetryAfterMs(new Headers({ 'retry-after': '1' }), nowMs)).toBe(1000);
  });
});

describe('classifyTransportError', () => {
  it.each([
    ['ECONNREFUSED', 'connect'],
    ['ENOTFOUND', 'getaddrinfo'],
    ['EAI_AGAIN', 'getaddrinfo'],
    ['EHOSTUNREACH', 'connect'],
    ['ENETUNREACH', 'connect'],
  ])('classifies %s (%s) as failed refused: nothing was sent', (code, syscall) => {
    // Act
    const failure = classifyTransportError(fetchFailure(code, syscall));

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: 'refused' });
    expect(failure.detail).toContain(code);
  });

  it('finds ECONNREFUSED inside an AggregateError (one error per address tried)', () => {
    // Arrange
    const perAddress = [
      Object.assign(new Error('connect ECONNREFUSED ::1:80'), { code: 'ECONNREFUSED', syscall: 'connect' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:80'), { code: 'ECONNREFUSED', syscall: 'connect' }),
    ];
    const error = new TypeError('fetch failed', { cause: new AggregateError(perAddress) });

    // Act / Assert
    expect(classifyTransportError(error)).toMatchObject({ outcome: 'failed', class: 'refused' });
  });

  it.each([
    ['ECONNRESET', 'read'],
    ['UND_ERR_SOCKET', 'read'],
    ['EPIPE', 'write'],
    ['EHOSTUNREACH', 'read'],
    ['ETIMEDOUT', 'read'],
  ])('classifies %s (%s) as unknown connection_lost: the request may have been acted upon', (code, syscall) => {
    // Act
    const failure = classifyTransportError(fetchFailure(code, syscall));

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'connection_lost' });
  });

  it('classifies an error without any code as unknown, never failed', () => {
    expect(classifyTransportError(new Error('something odd'))).toMatchObject({ outcome: 'unknown' });
    expect(classifyTransportError(undefined)).toMatchObject({ outcome: 'unknown', class: 'connection_lost' });
  });
});

describe('classifyTimeout', () => {
  it('is unknown timeout', () => {
    expect(classifyTimeout('no answer within 5 ms')).toEqual({ outcome: 'unknown', class: 'timeout', detail: 'no answer within 5 ms' });
  });
});

describe('errorChain', () => {
  it('survives a cause cycle', () => {
    // Arrange
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;

    // Act / Assert
    expect(errorChain(a).map((link) => link.message)).toEqual(['a', 'b']);
  });
});

describe('classifySdkError (openai SDK classes)', () => {
  const classes = { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError };
  let deadline: CallDeadline;

  beforeEach(() => {
    deadline = startCallDeadline(60_000);
  });

  afterEach(() => {
    deadline.clear();
  });

  it('finds ECONNREFUSED two causes deep in APIConnectionError', () => {
    // Arrange: what the SDK throws for a refused connection.
    const error = new APIConnectionError({ cause: fetchFailure('ECONNREFUSED', 'connect') });

    // Act / Assert
    expect(classifySdkError(error, classes, deadline, 0)).toMatchObject({ outcome: 'failed', class: 'refused' });
  });

  it('classifies APIConnectionTimeoutError as unknown timeout', () => {
    expect(classifySdkError(new APIConnectionTimeoutError(), classes, deadline, 0)).toMatchObject({
      outcome: 'unknown',
      class: 'timeout',
    });
  });

  it('classifies APIUserAbortError as unknown timeout', () => {
    expect(classifySdkError(new APIUserAbortError(), classes, deadline, 0)).toMatchObject({
      outcome: 'unknown',
      class: 'timeout',
    });
  });

  it('prefers an HTTP status over an expired deadline', async () => {
    // Arrange
    const short = startCallDeadline(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const error = APIError.generate(400, { error: { message: 'bad' } }, undefined, new Headers());

    // Act
    const failure = classifySdkError(error, classes, short, 0);

    // Assert
    expect(short.expired()).toBe(true);
    expect(failure).toMatchObject({ outcome: 'failed', class: 'bad_request', detail: 'HTTP 400: bad' });
  });

  it('classifies an unparseable 2xx body as unknown server_error', () => {
    expect(classifySdkError(new SyntaxError('Unexpected end of JSON input'), classes, deadline, 0)).toMatchObject({
      outcome: 'unknown',
      class: 'server_error',
    });
  });

  it('classifies a body stream cut mid-read as unknown connection_lost', () => {
    // Arrange: undici's error when the socket closes while the body streams.
    const cut = new TypeError('terminated', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });

    // Act / Assert
    expect(classifySdkError(cut, classes, deadline, 0)).toMatchObject({ outcome: 'unknown', class: 'connection_lost' });
  });
});
