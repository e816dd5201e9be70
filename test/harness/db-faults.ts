import type { Pool } from 'pg';

/** Runs before a statement goes to the database: may wait (a slow database) or throw (a lost connection). */
export type QueryHook = (sql: string) => Promise<void>;

const sqlOf = (query: unknown): string => (typeof query === 'string' ? query : String((query as { text?: string })?.text ?? ''));

/** `target` with the hook in front of its `query`; everything else is the target itself. */
function hooked<T extends object>(target: T, hook: QueryHook, extra: (property: string | symbol) => unknown = () => undefined): T {
  return new Proxy(target, {
    get(object, property) {
      if (property === 'query') {
        return async (query: unknown, ...rest: unknown[]) => {
          await hook(sqlOf(query));
          return (Reflect.get(object, 'query', object) as (...args: unknown[]) => unknown).call(object, query, ...rest);
        };
      }
      const replaced = extra(property);
      if (replaced) return replaced;
      const value = Reflect.get(object, property, object);
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
}

/**
 * The pool with a hook in front of every statement, also those run inside a
 * transaction (on a client from `connect`).
 */
export function interceptQueries(pool: Pool, hook: QueryHook): Pool {
  return hooked(pool, hook, (property) =>
    property === 'connect' ? async () => hooked(await pool.connect(), hook) : undefined,
  );
}

/** A hook that applies `effect` to the first `times` statements matching `pattern`. */
export function onStatements(pattern: RegExp, times: number, effect: () => Promise<void>): QueryHook {
  let left = times;
  return async (sql) => {
    if (left > 0 && pattern.test(sql)) {
      left--;
      await effect();
    }
  };
}

export const pause = (ms: number) => (): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A statement that fails the way a dropped connection does. */
export const connectionLost = async (): Promise<void> => {
  throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
};
