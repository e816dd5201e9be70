/**
 * CLI entry: `node dist/sim/main.js` runs the dev stack's simulators until
 * SIGINT or SIGTERM. Ports come from the environment (see SIM_PORT_ENV).
 */
import { describeDownstreamLie, parseDownstreamLie } from './downstream-lies';
import { SIM_PORT_ENV } from './ports';
import { SimPortInUseError, startSimStack, type SimRole, type SimStackOptions } from './stack';

export { startSimStack, SimPortInUseError } from './stack';
export type { SimStack, SimStackOptions, SimRole } from './stack';
export { SIM_PORT_ENV } from './ports';

/**
 * Reads the simulator settings from `env`.
 * @throws Error naming the variable if a port is not an integer in 0..65535,
 * or SIM_DOWNSTREAM_LIE names no lie (or a lag it cannot take).
 */
export function simStackOptionsFromEnv(env: NodeJS.ProcessEnv): SimStackOptions {
  const port = (role: SimRole): number => {
    const { name, defaultPort } = SIM_PORT_ENV[role];
    const raw = env[name];
    if (raw === undefined || raw === '') return defaultPort;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value > 65_535) {
      throw new Error(`${name}=${raw} is not a port number (0-65535)`);
    }
    return value;
  };
  // Unset or empty: an honest downstream.
  const lie = env.SIM_DOWNSTREAM_LIE ? parseDownstreamLie(env.SIM_DOWNSTREAM_LIE, 'SIM_DOWNSTREAM_LIE') : undefined;
  return {
    primaryPort: port('primary'),
    backupPort: port('backup'),
    downstreamPort: port('downstream'),
    downstreamDedupe: env.SIM_DOWNSTREAM_DEDUPE === '1',
    ...(lie ? { downstreamLie: lie.lie } : {}),
    ...(lie?.lookupLagMs !== undefined ? { downstreamLookupLagMs: lie.lookupLagMs } : {}),
  };
}

async function main(): Promise<void> {
  const stack = await startSimStack(simStackOptionsFromEnv(process.env));
  console.log(`${stack.primary.name} listening on ${stack.primary.url}`);
  console.log(`${stack.backup.name} listening on ${stack.backup.url}`);
  const { lie, lookupLagMs } = stack.downstream;
  // Said on the line itself: a lying downstream left running by mistake would fail every drill against it.
  console.log(`sim-downstream listening on ${stack.downstream.url}${lie ? ` (lying: ${describeDownstreamLie(lie, lookupLagMs)})` : ''}`);
  const stop = (): void => {
    stack.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`sim: failed to close: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    if (error instanceof SimPortInUseError) {
      const env = SIM_PORT_ENV[error.role].name;
      console.error(`sim: port ${error.port} is already in use; set ${env} to another port`);
    } else {
      console.error(`sim: ${error instanceof Error ? error.message : String(error)}`);
    }
    process.exit(1);
  });
}
