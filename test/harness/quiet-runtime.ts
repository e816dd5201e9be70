import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers in tests log errors only, from the TypeScript side and from the
// SDK's native core alike (the core logs to stderr on its own otherwise). The
// runtime is per process; a second file in the same process finds it
// installed already.
try {
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
} catch {
  // already installed
}
