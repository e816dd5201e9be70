/** A setting that is missing or wrong; its message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
