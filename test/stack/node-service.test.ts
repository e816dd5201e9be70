import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths';

const nodeService = path.join(projectRoot, 'scripts', 'node-service');
const probe = 'console.log(JSON.stringify({ argv: process.execArgv, arena: process.env.MALLOC_ARENA_MAX ?? null, ppid: process.ppid }))';

function run(env: NodeJS.ProcessEnv): { argv: string[]; arena: string | null; ppid: number } {
  const { MALLOC_ARENA_MAX: _arena, ONCEFLOW_NODE_SEMI_SPACE_MIB: _semi, ONCEFLOW_NODE_OLD_SPACE_MIB: _old, ...rest } = process.env;
  return JSON.parse(execFileSync(nodeService, ['-e', probe], { env: { ...rest, NODE: process.execPath, ...env }, encoding: 'utf8' })) as { argv: string[]; arena: string | null; ppid: number };
}

describe('scripts/node-service, which starts the API, the worker and npm start', () => {
  it('runs node with a 384 MiB old generation, a 4 MiB semi-space and two malloc arenas, as its own process (exec: no shell stays between)', () => {
    expect(run({})).toEqual({ argv: ['--max-old-space-size=384', '--max-semi-space-size=4', '-e', probe], arena: '2', ppid: process.pid });
  });

  it('takes each setting from the environment', () => {
    expect(run({ ONCEFLOW_NODE_OLD_SPACE_MIB: '1024', ONCEFLOW_NODE_SEMI_SPACE_MIB: '16', MALLOC_ARENA_MAX: '8' })).toMatchObject({ argv: ['--max-old-space-size=1024', '--max-semi-space-size=16', '-e', probe], arena: '8' });
  });

  it('is how npm run api, npm run worker and npm start run', () => {
    const scripts = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect({ api: scripts.api, worker: scripts.worker, start: scripts.start }).toEqual({
      api: 'scripts/node-service dist/api/main.js',
      worker: 'scripts/node-service dist/worker/main.js',
      start: 'scripts/node-service dist/stack/start.js',
    });
  });
});
