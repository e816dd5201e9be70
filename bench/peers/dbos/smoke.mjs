#!/usr/bin/env node
/**
 * Smoke check of the DBOS peer: `npm run build` here, then `npm run smoke`.
 *
 * Starts what is missing (PostgreSQL unless DBOS_DATABASE_URL is set, the
 * simulators unless PEER_PROVIDER_URL and PEER_DOWNSTREAM_URL are set) from
 * Onceflow's build at the repository root (`npm ci && npm run build` there),
 * then the peer's dist/server.js, and checks:
 *   - one job with Prefer: wait=10 succeeds; GET and a replay of its key give the same result;
 *   - SMOKE_DUPLICATES (20) concurrent submissions of one key: one workflow, one message;
 *   - a contract violation fails the job and sends nothing; bad requests get 400, unknown ids 404;
 *   - a load of SMOKE_JOBS (200) new keys at concurrency SMOKE_CONCURRENCY (16): all succeed,
 *     one message each; prints jobs/s, latency and the peer's CPU per job;
 *   - SIGTERM: the server exits 0.
 * Exits 1 on the first failed check.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const requireFromRoot = createRequire(path.join(root, 'package.json'));
const env = process.env;
const duplicates = Number(env.SMOKE_DUPLICATES ?? 20);
const jobs = Number(env.SMOKE_JOBS ?? 200);
const concurrency = Number(env.SMOKE_CONCURRENCY ?? 16);

const stops = [];
const log = (line) => console.log(line);
function check(ok, what) {
  if (!ok) throw new Error(`FAILED: ${what}`);
  log(`  ok  ${what}`);
}

/** Spawns a process and resolves with it once `ready(line)` accepted a line of its stdout. */
function startProcess(name, args, childEnv, ready) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout });
    const onExit = (code) => reject(new Error(`${name} exited with ${code} before it was ready`));
    child.once('exit', onExit);
    lines.on('line', (line) => {
      if (ready(line)) {
        child.off('exit', onExit);
        resolve(child);
      }
    });
  });
}

function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

/** POST /v1/jobs; `prefer` null sends no Prefer header. */
async function submit(url, key, input, prefer = 'wait=10') {
  const response = await fetch(`${url}/v1/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, ...(prefer === null ? {} : { prefer }) },
    body: JSON.stringify({ operation: 'support.reply', input }),
  });
  return { status: response.status, body: await response.json() };
}

async function messagesFor(downstreamUrl, ticketId) {
  const response = await fetch(`${downstreamUrl}/v1/messages?ticketId=${encodeURIComponent(ticketId)}`);
  return (await response.json()).messages;
}

/** User plus system CPU time of a process so far, in ms (Linux). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function main() {
  const server = path.join(here, 'dist', 'server.js');
  if (!existsSync(server)) throw new Error(`no ${server}: run npm ci && npm run build in ${here}`);

  let databaseUrl = env.DBOS_DATABASE_URL;
  if (!databaseUrl) {
    log('starting PostgreSQL (Onceflow embedded) …');
    const { startEmbeddedPostgres } = requireFromRoot('./dist/stack/postgres.js');
    const { freePort } = requireFromRoot('./dist/stack/temporal-dev.js');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dbos-peer-smoke-'));
    chmodSync(dir, 0o755);
    const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'postgres', persistent: false });
    stops.push(pg.stop);
    databaseUrl = pg.adminUrl.replace(/\/postgres$/, '/dbos_peer');
  }

  let providerUrl = env.PEER_PROVIDER_URL;
  let downstreamUrl = env.PEER_DOWNSTREAM_URL;
  if (!providerUrl || !downstreamUrl) {
    log('starting the simulators (Onceflow dist/sim/main.js) …');
    const urls = {};
    const sims = await startProcess(
      'simulators',
      [path.join(root, 'dist', 'sim', 'main.js')],
      { ...env, SIM_PRIMARY_PORT: '0', SIM_BACKUP_PORT: '0', SIM_DOWNSTREAM_PORT: '0' },
      (line) => {
        const match = /^(\S+) listening on (\S+)$/.exec(line);
        if (match) urls[match[1]] = match[2];
        return urls['sim-primary'] && urls['sim-downstream'];
      },
    );
    stops.push(() => stopProcess(sims));
    providerUrl = urls['sim-primary'];
    downstreamUrl = urls['sim-downstream'];
  }

  log('starting the peer …');
  const started = Date.now();
  let url;
  const peer = await startProcess(
    'peer',
    [server],
    { ...env, DBOS_DATABASE_URL: databaseUrl, PEER_PROVIDER_URL: providerUrl, PEER_DOWNSTREAM_URL: downstreamUrl, PEER_PORT: '0', PEER_HOST: '127.0.0.1' },
    (line) => {
      url = JSON.parse(line).url;
      return true;
    },
  );
  stops.push(() => stopProcess(peer));
  log(`  peer listening on ${url} after ${Date.now() - started} ms`);

  log('one job');
  const run = randomUUID().slice(0, 8);
  const input = { ticketId: `S-${run}`, customerMessage: 'Where is my order?', channel: 'email' };
  const key = `smoke-${run}`;
  let t0 = Date.now();
  const first = await submit(url, key, input);
  check(first.status === 200 && first.body.status === 'succeeded', `POST with wait=10: 200 succeeded (${Date.now() - t0} ms, the first job after start)`);
  const { reply, escalate, messageId } = first.body.result;
  check(typeof reply === 'string' && typeof escalate === 'boolean' && typeof messageId === 'string', `result {reply, escalate, messageId}: ${JSON.stringify(first.body.result)}`);
  const got = await (await fetch(`${url}/v1/jobs/${first.body.id}`)).json();
  check(JSON.stringify(got) === JSON.stringify(first.body), 'GET /v1/jobs/{id} answers the same');
  const replay = await submit(url, key, input, null);
  check(replay.status === 200 && JSON.stringify(replay.body) === JSON.stringify(first.body), 'a replay of the key, without wait: 200, the stored result');
  check((await messagesFor(downstreamUrl, input.ticketId)).length === 1, 'one message at the downstream');
  const messageKey = (await messagesFor(downstreamUrl, input.ticketId))[0].idempotencyKey;
  check(messageKey === `dbos-${first.body.id}-message.send`, `message Idempotency-Key ${messageKey}`);
  const lookup = await fetch(`${providerUrl}/requests/${encodeURIComponent(`${first.body.id}-provider.call`)}`);
  check(lookup.status === 200, 'the provider recorded the call under Idempotency-Key <workflow id>-provider.call');
  const fresh = await submit(url, `smoke-nowait-${run}`, { ...input, ticketId: `N-${run}` }, null);
  check(fresh.status === 202 && fresh.body.status === 'running', 'a new key without wait: 202 running');

  const slowInput = { ...input, ticketId: `W-${run}`, customerMessage: 'Slow one @sim(sim-primary:delay=1500)' };
  const slow = await submit(url, `smoke-slow-${run}`, slowInput, 'wait=1');
  check(slow.status === 202 && slow.body.status === 'running', 'a job slower than its wait: 202 running');
  const slowAgain = await submit(url, `smoke-slow-${run}`, slowInput, 'wait=5');
  check(slowAgain.status === 200 && slowAgain.body.status === 'succeeded', 'its key again with wait=5: 200 succeeded');

  log(`${duplicates} concurrent submissions of one key`);
  const dupInput = { ...input, ticketId: `D-${run}` };
  const answers = await Promise.all(Array.from({ length: duplicates }, () => submit(url, `smoke-dup-${run}`, dupInput)));
  check(new Set(answers.map((a) => a.body.id)).size === 1, 'one job id');
  check(answers.every((a) => a.status === 200 && a.body.status === 'succeeded'), 'every answer 200 succeeded');
  check(new Set(answers.map((a) => a.body.result.messageId)).size === 1, 'one messageId');
  const dupMessages = await messagesFor(downstreamUrl, dupInput.ticketId);
  check(dupMessages.length === 1, `one message at the downstream (${dupMessages.length})`);

  log('failures and bad requests');
  const bad = await submit(url, `smoke-bad-${run}`, { ...input, ticketId: `B-${run}`, customerMessage: 'Hello @sim(sim-primary:extra-key)' });
  check(bad.status === 200 && bad.body.status === 'failed' && bad.body.error.type === 'ContractViolation', `extra key: failed, ${JSON.stringify(bad.body.error)}`);
  check((await messagesFor(downstreamUrl, `B-${run}`)).length === 0, 'nothing sent');
  const prose = await submit(url, `smoke-prose-${run}`, { ...input, ticketId: `P-${run}`, customerMessage: 'Hello @sim(sim-primary:prose)' });
  check(prose.body.status === 'failed' && prose.body.error.type === 'ContractViolation', `prose: failed, ${JSON.stringify(prose.body.error)}`);
  const noKey = await fetch(`${url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operation: 'support.reply', input }) });
  check(noKey.status === 400, 'no Idempotency-Key: 400');
  check((await submit(url, `smoke-x-${run}`, { ...input, extra: 1 })).status === 400, 'an input with an extra key: 400');
  check((await fetch(`${url}/v1/jobs/nope`)).status === 404, 'GET of an unknown id: 404');

  log(`load: ${jobs} new keys at concurrency ${concurrency}, Prefer: wait=10`);
  const latencies = [];
  const failures = [];
  let next = 0;
  const cpuBefore = cpuMs(peer.pid);
  t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < jobs) {
        const i = next++;
        const s = process.hrtime.bigint();
        const answer = await submit(url, `smoke-load-${run}-${i}`, { ...input, ticketId: `L-${run}-${i}` });
        latencies.push(Number(process.hrtime.bigint() - s) / 1e6);
        if (answer.status !== 200 || answer.body.status !== 'succeeded') failures.push(answer);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuMs(peer.pid) - cpuBefore;
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
  check(failures.length === 0, `all ${jobs} succeeded${failures.length ? `; first failure ${JSON.stringify(failures[0])}` : ''}`);
  const delivered = (await (await fetch(`${downstreamUrl}/v1/messages`)).json()).messages.filter((m) => m.ticketId.startsWith(`L-${run}-`));
  check(delivered.length === jobs && new Set(delivered.map((m) => m.ticketId)).size === jobs, `one message per job (${delivered.length})`);
  log(`  ${(jobs / seconds).toFixed(1)} jobs/s; latency p50 ${pct(50)} ms, p99 ${pct(99)} ms; peer CPU ${(cpu / jobs).toFixed(1)} ms per job (its process only)`);

  log('shutdown');
  stops.pop();
  check((await stopProcess(peer)) === 0, 'SIGTERM: the peer exits 0');
  log('smoke: all checks passed');
}

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  console.error(error instanceof Error ? error.message : error);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
process.exit(failed ? 1 : 0);
