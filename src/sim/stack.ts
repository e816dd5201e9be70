/**
 * The dev stack's simulators started together: `sim-primary` and `sim-backup`
 * (the demo operation's default route, in that order) and the downstream.
 */
import { startSimProvider, type SimProvider } from './provider-server';
import { startSimDownstream, type SimDownstream } from './downstream-server';
import type { DownstreamLie } from './downstream-lies';
import type { SimRole } from './ports';

/** Provider names of the dev stack, in route order. */
export const SIM_PROVIDER_NAMES = { primary: 'sim-primary', backup: 'sim-backup' } as const;

export type { SimRole } from './ports';

export interface SimStackOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Each default 0: a random free port. */
  primaryPort?: number;
  backupPort?: number;
  downstreamPort?: number;
  /** Downstream deduplication by Idempotency-Key. Default false. */
  downstreamDedupe?: boolean;
  /** A claim the downstream breaks (SimDownstreamOptions.lie). Default none. */
  downstreamLie?: DownstreamLie;
  /** The downstream's lookup lag under `lookup-slow-to-show`. */
  downstreamLookupLagMs?: number;
}

/** The three running simulators, closed together. */
export interface SimStack {
  readonly primary: SimProvider;
  readonly backup: SimProvider;
  readonly downstream: SimDownstream;
  close(): Promise<void>;
}

/** A simulator's port is already taken by another process. */
export class SimPortInUseError extends Error {
  override readonly name = 'SimPortInUseError';

  constructor(
    readonly role: SimRole,
    readonly port: number,
    options?: { cause?: unknown },
  ) {
    super(`port ${port} for the ${role} simulator is already in use`, options);
  }
}

/**
 * Starts all three simulators; if one fails, stops those already started.
 * @throws SimPortInUseError if a port is taken; what startSimDownstream throws
 * for a bad lie or lag; any other listen error as is.
 */
export async function startSimStack(options: SimStackOptions = {}): Promise<SimStack> {
  const { host } = options;
  const started: Array<{ close(): Promise<void> }> = [];
  const start = async <T extends { close(): Promise<void> }>(
    role: SimRole,
    port: number | undefined,
    launch: () => Promise<T>,
  ): Promise<T> => {
    try {
      const server = await launch();
      started.push(server);
      return server;
    } catch (error) {
      await Promise.all(started.map((s) => s.close()));
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new SimPortInUseError(role, port ?? 0, { cause: error });
      }
      throw error;
    }
  };

  // One after another, so a failure knows exactly which servers to stop.
  const primary = await start('primary', options.primaryPort, () =>
    startSimProvider({ name: SIM_PROVIDER_NAMES.primary, host, port: options.primaryPort }),
  );
  const backup = await start('backup', options.backupPort, () =>
    startSimProvider({ name: SIM_PROVIDER_NAMES.backup, host, port: options.backupPort }),
  );
  const downstream = await start('downstream', options.downstreamPort, () =>
    startSimDownstream({
      host,
      port: options.downstreamPort,
      dedupe: options.downstreamDedupe,
      lie: options.downstreamLie,
      lookupLagMs: options.downstreamLookupLagMs,
    }),
  );
  return {
    primary,
    backup,
    downstream,
    close: async () => {
      await Promise.all([primary.close(), backup.close(), downstream.close()]);
    },
  };
}

/**
 * startSimStack, kept clear of `reserved`: the ports the caller will listen
 * on once the simulators run (the API's, the metrics'). A simulator given
 * port 0 takes whatever free port the system hands out, which may be one of
 * those while it is still free; then the simulators start again, up to five
 * times. A port asked for by number is the caller's choice and stands.
 */
export async function startSimStackClearOf(options: SimStackOptions, reserved: ReadonlySet<number>, start: (options: SimStackOptions) => Promise<SimStack> = startSimStack): Promise<SimStack> {
  const chosenBySystem = (asked: number | undefined, got: number): boolean => !asked && reserved.has(got);
  for (let tries = 1; ; tries++) {
    const sims = await start(options);
    const clashes =
      chosenBySystem(options.primaryPort, sims.primary.port) || chosenBySystem(options.backupPort, sims.backup.port) || chosenBySystem(options.downstreamPort, sims.downstream.port);
    if (!clashes || tries >= 5) return sims;
    await sims.close();
  }
}
