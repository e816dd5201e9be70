/**
 * The front door: `POST /v1/jobs` starts the support.reply workflow under an ID
 * derived from the Idempotency-Key, so a retry of the same key attaches to the
 * workflow DBOS already has; `GET /v1/jobs/{id}` reads it back.
 *
 * Environment: DBOS_DATABASE_URL, PEER_PROVIDER_URL, PEER_DOWNSTREAM_URL,
 * PEER_PORT (0: a free port), PEER_HOST (127.0.0.1). Prints one line of JSON,
 * `{"url": ...}`, once listening; SIGTERM or SIGINT shut it down.
 */
import { createHash } from 'node:crypto';
import { DBOS, Error as DBOSErrors } from '@dbos-inc/dbos-sdk';
import Fastify from 'fastify';
import { inputSchema, registerSupportReply } from './support-reply.js';

/**
 * @typedef {import('./support-reply.js').SupportReplyInput} SupportReplyInput
 * @typedef {import('./support-reply.js').SupportReplyResult} SupportReplyResult
 * @typedef {import('@dbos-inc/dbos-sdk').WorkflowStatus} WorkflowStatus
 * @typedef {{ id: string, status: 'running' | 'cancelled' }
 *   | { id: string, status: 'succeeded', result: SupportReplyResult }
 *   | { id: string, status: 'failed', error: { type: string, detail: string } }} Job
 */

const MAX_WAIT_S = 60;
/** How often a request attached to a workflow started elsewhere reads its status while it waits. */
const ATTACH_POLL_MS = 100;
/** Printable ASCII, 1 to 255 characters, no space at either end (as Onceflow accepts). */
const IDEMPOTENCY_KEY = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

const jobRequestSchema = {
  type: 'object',
  properties: { operation: { const: 'support.reply' }, input: inputSchema },
  required: ['operation', 'input'],
  additionalProperties: false,
};

/** @param {NodeJS.ProcessEnv} env */
function configFromEnv(env) {
  /** @param {string} name */
  const required = (name) => {
    const value = env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  const port = Number(env.PEER_PORT || '0');
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`PEER_PORT=${env.PEER_PORT} is not a port number`);
  return {
    databaseUrl: required('DBOS_DATABASE_URL'),
    providerUrl: required('PEER_PROVIDER_URL'),
    downstreamUrl: required('PEER_DOWNSTREAM_URL'),
    host: env.PEER_HOST || '127.0.0.1',
    port,
  };
}

/**
 * One workflow per key: the same key always names the same workflow.
 * @param {string} idempotencyKey
 */
function workflowIdFor(idempotencyKey) {
  return `support.reply-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 32)}`;
}

/**
 * Seconds from `Prefer: wait=N`; 0 without one; undefined when it is not 0..60.
 * @param {string | string[] | undefined} prefer
 */
function waitSecondsOf(prefer) {
  const match = /(?:^|[,; \t])wait[ \t]*=[ \t]*"?([^",; \t]*)"?/i.exec([prefer ?? ''].flat().join(','));
  if (!match) return 0;
  const value = match[1] ?? '';
  return /^\d+$/.test(value) && Number(value) <= MAX_WAIT_S ? Number(value) : undefined;
}

/** @param {unknown} error */
function errorOf(error) {
  return error instanceof Error ? { type: error.name, detail: error.message } : { type: 'Error', detail: String(error) };
}

/**
 * The job as DBOS has recorded its workflow.
 * @param {string} id
 * @param {WorkflowStatus} status
 * @returns {Job}
 */
function jobOf(id, status) {
  switch (status.status) {
    case 'SUCCESS':
      return { id, status: 'succeeded', result: /** @type {SupportReplyResult} */ (status.output) };
    case 'ERROR':
      return { id, status: 'failed', error: errorOf(status.error) };
    case 'MAX_RECOVERY_ATTEMPTS_EXCEEDED':
      return { id, status: 'failed', error: { type: 'MaxRecoveryAttemptsExceeded', detail: 'the workflow was recovered too many times' } };
    case 'CANCELLED':
      return { id, status: 'cancelled' };
    default:
      return { id, status: 'running' };
  }
}

/**
 * The recorded job of a workflow known to exist.
 * @param {string} id
 * @returns {Promise<Job>}
 */
async function recordedJob(id) {
  const status = await DBOS.getWorkflowStatus(id);
  if (status === null) throw new Error(`workflow ${id} has no status`);
  return jobOf(id, status);
}

/**
 * A workflow this request started: its result is awaited in memory, for at most waitSeconds.
 * @param {import('@dbos-inc/dbos-sdk').WorkflowHandle<SupportReplyResult>} handle
 * @param {number} waitSeconds
 * @returns {Promise<Job>}
 */
async function settleStarted(handle, waitSeconds) {
  const id = handle.workflowID;
  if (waitSeconds === 0) return { id, status: 'running' };
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  /** @type {Promise<undefined>} */
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve(undefined), waitSeconds * 1000);
  });
  try {
    const result = await Promise.race([handle.getResult(), timeout]);
    return result === undefined ? { id, status: 'running' } : { id, status: 'succeeded', result };
  } catch {
    // The workflow failed: its recorded status says how.
    return recordedJob(id);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A workflow started before, by this key: DBOS's record answers, after waiting up to waitSeconds for it to finish.
 * @param {string} id
 * @param {number} waitSeconds
 * @returns {Promise<Job>}
 */
async function settleExisting(id, waitSeconds) {
  if (waitSeconds > 0) {
    try {
      /** @type {SupportReplyResult | null} */
      const result = await DBOS.getResult(id, { timeoutSeconds: waitSeconds, pollingIntervalMs: ATTACH_POLL_MS });
      if (result !== null) return { id, status: 'succeeded', result };
    } catch {
      // The workflow failed: its recorded status says how.
    }
  }
  return recordedJob(id);
}

/** @param {(input: SupportReplyInput) => Promise<SupportReplyResult>} supportReply */
function buildApp(supportReply) {
  const app = Fastify({ logger: false, ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: true } } });

  app.post('/v1/jobs', { schema: { body: jobRequestSchema } }, async (request, reply) => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
      return reply.code(400).send({ error: 'send an Idempotency-Key header: 1 to 255 printable ASCII characters' });
    }
    const waitSeconds = waitSecondsOf(request.headers.prefer);
    if (waitSeconds === undefined) return reply.code(400).send({ error: `Prefer: wait must be a whole number of seconds from 0 to ${MAX_WAIT_S}` });
    const { input } = /** @type {{ input: SupportReplyInput }} */ (request.body);

    const workflowID = workflowIdFor(key);
    /** @type {Job} */
    let job;
    try {
      const handle = await DBOS.startWorkflow(supportReply, { workflowID, workflowIDReusePolicy: 'reject' })(input);
      job = await settleStarted(handle, waitSeconds);
    } catch (error) {
      if (!DBOSErrors.isWorkflowIDInUseError(error)) throw error;
      job = await settleExisting(workflowID, waitSeconds);
    }
    return reply.code(job.status === 'running' ? 202 : 200).send(job);
  });

  app.get('/v1/jobs/:id', async (request, reply) => {
    const { id } = /** @type {{ id: string }} */ (request.params);
    const status = await DBOS.getWorkflowStatus(id);
    if (status === null || status.workflowName !== 'support.reply') return reply.code(404).send({ error: 'no such job' });
    return jobOf(id, status);
  });

  return app;
}

async function main() {
  const config = configFromEnv(process.env);
  const supportReply = registerSupportReply({ providerUrl: config.providerUrl, downstreamUrl: config.downstreamUrl });
  // DBOS creates the database if it is missing, and its system tables. Its logs (warnings up) go to stderr.
  DBOS.setConfig({ name: 'onceflow-bench-peer', systemDatabaseUrl: config.databaseUrl, logLevel: 'warn' });
  await DBOS.launch();

  const app = buildApp(supportReply);
  await app.listen({ host: config.host, port: config.port });
  const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address());
  process.stdout.write(`${JSON.stringify({ url: `http://${config.host}:${port}` })}\n`);

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // Requests in flight finish; workflows still running are recovered by the next launch.
    app
      .close()
      .then(() => DBOS.shutdown())
      .then(
        () => process.exit(0),
        (error) => {
          console.error(`peer: shutdown failed: ${String(error)}`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error) => {
  console.error(`peer: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
