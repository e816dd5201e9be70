import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'undici';
import { CpuMeter } from './cpu';
import { root, startService, type Infra, type Service } from './infra';
import { percentile } from './stats';

export const BENCH_KEY = 'k_bench';
const PEER_DIR = path.join(root, 'bench', 'peers', 'dbos');

/** A system that runs the job behind `POST /v1/jobs`: Onceflow, or the peer. */
export interface System {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The system's own processes (PostgreSQL and Temporal are measured apart). */
  pids(): number[];
  usesTemporal: boolean;
  stop(): Promise<void>;
}

const portOf = (url: string): string => new URL(url).port;

/** With BENCH_ALLOC_DIR set (`npm run bench -- --alloc`), a process also loads bench/alloc-sampler.cjs, which samples what its main thread allocates between two SIGUSR2s. */
export const allocSamplerArgs = (): string[] => (process.env.BENCH_ALLOC_DIR ? ['--require', path.join(root, 'bench', 'alloc-sampler.cjs')] : []);

/** The environment Onceflow's processes run with in the benchmark, on a database of their own. */
async function onceflowEnv(infra: Infra, env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  const databaseUrl = await infra.createDatabase(`onceflow_${randomUUID().slice(0, 8)}`);
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: infra.temporal.address,
    TEMPORAL_NAMESPACE: infra.temporal.namespace,
    ONCEFLOW_TASK_QUEUE: `bench-${randomUUID().slice(0, 8)}`,
    ONCEFLOW_API_KEYS: `bench:${BENCH_KEY}`,
    ONCEFLOW_API_PORT: '0',
    ONCEFLOW_WORKER_METRICS_PORT: '0',
    ONCEFLOW_RATE_LIMIT_PER_MINUTE: '100000000',
    // As under `npm start`, or a deployment that ran `onceflow effects verify`: the effects' drills have passed, so
    // recovery may rely on the claims they show (and a winner's first claim is born in its first try).
    ONCEFLOW_EFFECTS_VERIFY_AT_START: '1',
    SIM_PRIMARY_PORT: portOf(infra.sims.primaryUrl),
    SIM_BACKUP_PORT: portOf(infra.sims.backupUrl),
    SIM_DOWNSTREAM_PORT: portOf(infra.sims.downstreamUrl),
    ...env,
  };
}

/** Onceflow as production runs it: the API and one worker, two processes from dist/, started as `npm run api` and `npm run worker` start them. */
export async function startOnceflow(infra: Infra, env: NodeJS.ProcessEnv = {}): Promise<System & { env: NodeJS.ProcessEnv; services: { api: Service; worker: Service } }> {
  const common = await onceflowEnv(infra, env);
  // BENCH_PROFILE=<dir> writes a CPU profile of each process when it stops (open it in Chrome DevTools);
  // BENCH_PROFILE_INTERVAL_US sets its sampling interval (V8's default is 1,000 µs).
  const interval = process.env.BENCH_PROFILE_INTERVAL_US ? [`--cpu-prof-interval=${process.env.BENCH_PROFILE_INTERVAL_US}`] : [];
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`, ...interval] : [];
  // As `npm run worker` and `npm run api` start them: through scripts/node-service, with its memory settings.
  const nodeService = path.join(root, 'scripts', 'node-service');
  const worker = await startService(nodeService, [...profile, ...allocSamplerArgs(), path.join(root, 'dist', 'worker', 'main.js')], { NODE: process.execPath, ...common }, /^worker: polling/);
  const api = await startService(nodeService, [...profile, ...allocSamplerArgs(), path.join(root, 'dist', 'api', 'main.js')], { NODE: process.execPath, ...common }, /^api: listening on (\S+)/).catch(async (err: unknown) => {
    await worker.stop();
    throw err;
  });
  return {
    name: 'Onceflow',
    url: api.ready[1]!,
    headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
    pids: () => [api.proc.pid!, worker.proc.pid!],
    usesTemporal: true,
    env: common,
    services: { api, worker },
    async stop() {
      await api.stop();
      await worker.stop();
    },
  };
}

/**
 * Onceflow's API and one worker in one process, on one pool, as `npm start`
 * runs them (bench/one-process.ts), with the same environment and memory
 * settings as the two processes of startOnceflow.
 */
export async function startOnceflowInOneProcess(infra: Infra): Promise<System> {
  const common = await onceflowEnv(infra, {});
  const nodeService = path.join(root, 'scripts', 'node-service');
  const service = await startService(nodeService, [...allocSamplerArgs(), '--require', 'tsx/cjs', path.join(root, 'bench', 'one-process.ts')], { NODE: process.execPath, ...common }, /^one process: listening on (\S+)/);
  return {
    name: 'Onceflow in one process',
    url: service.ready[1]!,
    headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
    pids: () => [service.proc.pid!],
    usesTemporal: true,
    stop: service.stop,
  };
}

/** Installs and builds the peer once (its own package.json; not a dependency of Onceflow). */
export function preparePeer(log: (line: string) => void): void {
  if (existsSync(path.join(PEER_DIR, 'dist', 'server.js'))) return;
  log('installing and building the DBOS peer (bench/peers/dbos) …');
  execFileSync('npm', ['ci', '--prefix', PEER_DIR, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  execFileSync('npm', ['run', '--prefix', PEER_DIR, 'build'], { stdio: 'inherit' });
}

/** The peer: the same job on DBOS Transact, behind the same HTTP front door. */
export async function startPeer(infra: Infra): Promise<System> {
  const databaseUrl = await infra.createDatabase(`dbos_${randomUUID().slice(0, 8)}`);
  const service = await startService(
    process.execPath,
    [path.join(PEER_DIR, 'dist', 'server.js')],
    { ...process.env, DBOS_DATABASE_URL: databaseUrl, PEER_PROVIDER_URL: infra.sims.primaryUrl, PEER_DOWNSTREAM_URL: infra.sims.downstreamUrl, PEER_PORT: '0' },
    /^\{"url":"([^"]+)"\}/,
  );
  return {
    name: 'DBOS peer',
    url: service.ready[1]!,
    headers: { 'content-type': 'application/json' },
    pids: () => [service.proc.pid!],
    usesTemporal: false,
    stop: service.stop,
  };
}

export interface RunResult {
  jobs: number;
  failed: number;
  seconds: number;
  jobsPerSecond: number;
  /** Submit-to-done latency, ms. */
  p50: number;
  p95: number;
  p99: number;
  /** CPU per job, ms, by part of the system. */
  cpuPerJob: { app: number; postgres: number; temporal: number; total: number };
  /** The ids of the jobs that succeeded, in the order they finished (to read their histories). */
  jobIds: string[];
}


/**
 * Submits `jobs` new intents from `concurrency` clients, each waiting for its
 * job to finish (Prefer: wait, then polling), and measures the whole system:
 * latency from submit to done, throughput, and the CPU of its processes.
 */
export async function runJobs(system: System, infra: Infra, opts: { jobs: number; concurrency: number; ticketPrefix: string }): Promise<RunResult> {
  const pool = new Pool(system.url, { connections: opts.concurrency, pipelining: 1 });
  const meter = new CpuMeter({ app: system.pids, postgres: infra.pgPid, temporal: infra.temporal.pid });
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const jobIds: string[] = [];
  const request = async (method: 'GET' | 'POST', pathName: string, headers: Record<string, string>, body?: string) => {
    const response = await pool.request({ method, path: pathName, headers, body });
    return { status: response.statusCode, json: (await response.body.json()) as { id: string; status: string } };
  };
  meter.start();
  const started = process.hrtime.bigint();
  try {
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (next < opts.jobs) {
          const n = next++;
          const body = JSON.stringify({ operation: 'support.reply', input: { ticketId: `${opts.ticketPrefix}-${n}`, customerMessage: 'Where is my order?', channel: 'email' } });
          const t0 = process.hrtime.bigint();
          let answer = await request('POST', '/v1/jobs', { ...system.headers, 'idempotency-key': randomUUID(), prefer: 'wait=60' }, body);
          while (answer.status < 300 && !['succeeded', 'failed', 'cancelled'].includes(answer.json.status)) {
            await new Promise((resolve) => setTimeout(resolve, 20));
            answer = await request('GET', `/v1/jobs/${answer.json.id}`, system.headers);
          }
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (answer.json.status !== 'succeeded') failed++;
          else jobIds.push(answer.json.id);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = meter.stop();
  const temporal = system.usesTemporal ? cpu.temporal! : 0;
  latencies.sort((a, b) => a - b);
  const perJob = (ms: number) => ms / opts.jobs;
  return {
    jobs: opts.jobs,
    failed,
    seconds,
    jobsPerSecond: opts.jobs / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    cpuPerJob: { app: perJob(cpu.app!), postgres: perJob(cpu.postgres!), temporal: perJob(temporal), total: perJob(cpu.app! + cpu.postgres! + temporal) },
    jobIds,
  };
}

/** The floor: the same job as one bare Temporal workflow with one local activity, no ledger (bench/floor). */
export async function startFloor(infra: Infra): Promise<System> {
  const service = await startService(
    process.execPath,
    [...allocSamplerArgs(), '--import', 'tsx', path.join(root, 'bench', 'floor', 'server.ts')],
    {
      ...process.env,
      TEMPORAL_ADDRESS: infra.temporal.address,
      TEMPORAL_NAMESPACE: infra.temporal.namespace,
      FLOOR_PROVIDER_URL: infra.sims.primaryUrl,
      FLOOR_DOWNSTREAM_URL: infra.sims.downstreamUrl,
    },
    /^floor: listening on (\S+)/,
  );
  return {
    name: 'bare Temporal',
    url: service.ready[1]!,
    headers: { 'content-type': 'application/json' },
    pids: () => [service.proc.pid!],
    usesTemporal: true,
    stop: service.stop,
  };
}
