/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  globalSetup: '<rootDir>/test/harness/global-setup.ts',
  globalTeardown: '<rootDir>/test/harness/global-teardown.ts',
  setupFiles: ['<rootDir>/test/harness/quiet-runtime.ts'],
  // Two cores: one test file at a time keeps Postgres, Temporal and the worker
  // from starving each other; each file still gets its own database.
  maxWorkers: 1,
  testTimeout: 60_000,
  verbose: true,
  // jest's summary, then one plain closing line with the counts.
  reporters: ['default', '<rootDir>/test/harness/closing-line-reporter.js'],
};
