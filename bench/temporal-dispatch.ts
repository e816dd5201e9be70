import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, Runtime, DefaultLogger } from '@temporalio/worker';
import path from 'node:path';
import { root, startInfra } from './infra';

/**
 * `npx tsx bench/temporal-dispatch.ts`: the floor under every job, measured
 * without Onceflow. On the bench's dev server, a bare workflow whose only
 * step is one local activity: how long from workflow.start returning to the
 * local activity running, and from the start to the result (medians of 35
 * workflows after 5 of warm-up).
 */

(async () => {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const infra = await startInfra(() => undefined);
  const connection = await Connection.connect({ address: infra.temporal.address });
  const client = new Client({ connection, namespace: infra.temporal.namespace });
  let marked = 0n;
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: infra.temporal.address }),
    namespace: infra.temporal.namespace,
    taskQueue: 'dispatch',
    workflowsPath: path.join(root, 'bench', 'temporal-dispatch', 'workflow.ts'),
    activities: { async mark() { marked = process.hrtime.bigint(); } },
  });
  const running = worker.run();
  const toMark: number[] = [];
  const toDone: number[] = [];
  for (let i = 0; i < 40; i++) {
    const t0 = process.hrtime.bigint();
    const handle = await client.workflow.start('dispatch', { taskQueue: 'dispatch', workflowId: `dispatch-${i}-${Date.now()}` });
    const started = process.hrtime.bigint();
    await handle.result();
    if (i >= 5) { toMark.push(Number(marked - started) / 1e6); toDone.push(Number(process.hrtime.bigint() - t0) / 1e6); }
  }
  const p50 = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1);
  console.log(`workflow.start returned → its local activity runs: p50 ${p50(toMark)} ms; start → result: p50 ${p50(toDone)} ms`);
  worker.shutdown();
  await running;
  await connection.close();
  await infra.stop();
})();
