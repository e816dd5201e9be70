/**
 * Onceflow's client: submit intents with one Idempotency-Key each, across
 * double clicks, retries and reloads. ES module, no dependencies; runs where
 * fetch and WebCrypto do (browsers, Node 20).
 */
export { IntentClient, DEFAULT_WAIT_S, type IntentClientOptions, type SubmitOptions } from './intent-client.js';
export { IntentKeys, memoryStorage, DEFAULT_KEY_MAX_AGE_MS, type IntentKeysOptions, type KeyStorage } from './intent-keys.js';
export { canonicalJson } from './canonical-json.js';
export { intentDigest, requestDigest } from './digest.js';
export { DigestMismatchError, OnceflowApiError, OnceflowUnavailableError } from './errors.js';
export {
  HttpSender,
  DEFAULT_RETRY_POLICY,
  isRetryableStatus,
  RequestTimeoutError,
  backoffDelayMs,
  retryAfterMs,
  sleep,
  type HttpAnswer,
  type HttpSenderOptions,
  type RetryPolicy,
  type SendOptions,
  type Sleep,
} from './http-sender.js';
export { JobStatus, isTerminal, type Attempt, type Effect, type Job, type Problem } from './job.js';
