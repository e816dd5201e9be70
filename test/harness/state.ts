import { readFileSync } from 'node:fs';

/** What the global setup started, handed to every test file through a JSON file. */
export interface HarnessState {
  /** Connection string of a database in which test databases may be created. */
  adminDatabaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  /** Path of the prebuilt workflow bundle. */
  workflowBundlePath: string;
  /** The time-skipping test server executable, or undefined for the SDK's download. */
  testServerPath?: string;
}

export const STATE_ENV = 'ONCEFLOW_TEST_STATE';

export function readHarnessState(): HarnessState {
  const file = process.env[STATE_ENV];
  if (!file) throw new Error(`${STATE_ENV} is not set: run the tests through jest (npm test), whose global setup starts the servers`);
  return JSON.parse(readFileSync(file, 'utf8')) as HarnessState;
}
