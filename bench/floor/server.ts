/**
 * The floor under Onceflow's job: the same job as one Temporal workflow
 * with one local activity (bench/floor/workflow.ts), behind a bare Fastify
 * `POST /v1/jobs`, with no ledger. One process holds the front door, the
 * client and the worker; the front door answers when the local activity
 * has sent the message, as Onceflow's API answers at the terminal write.
 * What Onceflow costs above this is its own: the ledger, its API, its
 * checks. Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
 * FLOOR_PROVIDER_URL, FLOOR_DOWNSTREAM_URL. Prints `floor: listening on URL`.
 */
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import Fastify from 'fastify';
import { createFloorActivities } from './activities';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const address = env('TEMPORAL_ADDRESS');
  const namespace = env('TEMPORAL_NAMESPACE');
  const taskQueue = `floor-${randomUUID().slice(0, 8)}`;
  const waiting = new Map<string, (outcome: { messageId: string } | { error: Error }) => void>();
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address }),
    namespace,
    taskQueue,
    workflowsPath: path.join(__dirname, 'workflow.ts'),
    activities: createFloorActivities({ providerUrl: env('FLOOR_PROVIDER_URL'), downstreamUrl: env('FLOOR_DOWNSTREAM_URL'), done: (id, outcome) => waiting.get(id)?.(outcome) }),
  });
  const running = worker.run();
  const client = new Client({ connection: await Connection.connect({ address }), namespace });
  const app = Fastify();
  app.post<{ Body: { operation: string; input: { ticketId: string; customerMessage: string; channel: string } } }>(
    '/v1/jobs',
    {
      schema: {
        body: {
          type: 'object',
          required: ['operation', 'input'],
          properties: { operation: { const: 'support.reply' }, input: { type: 'object', required: ['ticketId', 'customerMessage', 'channel'] } },
        },
      },
    },
    async (request, reply) => {
      const key = String(request.headers['idempotency-key'] ?? '');
      const id = `floor-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
      const done = new Promise<{ messageId: string } | { error: Error }>((resolve) => waiting.set(id, resolve));
      try {
        await client.workflow.start('floorJob', { taskQueue, workflowId: id, args: [request.body.input], workflowIdConflictPolicy: 'USE_EXISTING' });
        const outcome = await done;
        if ('error' in outcome) return await reply.status(200).send({ id, status: 'failed', error: outcome.error.message });
        return await reply.status(200).send({ id, status: 'succeeded', messageId: outcome.messageId });
      } finally {
        waiting.delete(id);
      }
    },
  );
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  console.log(`floor: listening on ${url}`);
  const stop = async () => {
    await app.close();
    worker.shutdown();
    await running;
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((err: unknown) => {
  console.error(`floor: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
