import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers in tests log warnings and errors only. The runtime is per process;
// a second file in the same process finds it installed already.
try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // already installed
}
