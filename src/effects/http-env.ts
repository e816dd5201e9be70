/** `${NAME}`: a value read from the environment when a declared effect is created. */
const ENV_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Text whose `${NAME}` parts were replaced, and the values that went in (to be kept out of every message). */
export interface EnvResolved {
  text: string;
  values: string[];
}

/**
 * Replaces each `${NAME}` in `text` with the environment's value.
 * @throws the error `missing(name)` makes, for the first variable that is unset or empty.
 */
export function resolveEnv(text: string, env: NodeJS.ProcessEnv, missing: (name: string) => Error): EnvResolved {
  const values: string[] = [];
  const resolved = text.replace(ENV_REFERENCE, (_whole, name: string) => {
    const value = env[name];
    if (value === undefined || value === '') throw missing(name);
    values.push(value);
    return value;
  });
  return { text: resolved, values };
}

/** Values shorter than this are not secrets, and masking them would garble every message. */
const MIN_SECRET_LENGTH = 4;

/**
 * A function that masks every value read from the environment in a text:
 * URLs and headers may hold secrets, and a downstream's error message may
 * repeat them.
 */
export function createRedactor(values: readonly string[]): (text: string) => string {
  const secrets = [...new Set(values.filter((value) => value.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
  return (text) => secrets.reduce((masked, secret) => masked.split(secret).join('[redacted]'), text);
}
