// @ts-check
const { writeSync } = require('node:fs');

/**
 * Prints one plain closing line, the last of the run:
 * `jest: N passed, N failed, N skipped`. Jest's summary ("Tests: 716 passed,
 * 716 total") names no failures; a reader of the run's last line (CI among
 * them) should not have to know jest's format to tell how many tests ran.
 */
class ClosingLineReporter {
  /** @param {unknown} _globalConfig @param {unknown} _options */
  constructor(_globalConfig, _options) {}

  /**
   * @param {unknown} _contexts
   * @param {{ numPassedTests: number, numFailedTests: number, numPendingTests: number, numTodoTests: number, numRuntimeErrorTestSuites: number }} results
   */
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    // A file that failed to load ran no test of its own; it still counts as a failure.
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const line = `jest: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`;
    // Jest always prints its summary after every custom reporter, and the global
    // teardown (the replay gate) runs after that: the line is written as the process ends.
    process.once('exit', () => writeSync(1, line));
  }
}

module.exports = ClosingLineReporter;
