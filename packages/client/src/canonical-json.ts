/**
 * RFC 8785 (JSON Canonicalization Scheme) of a JSON value: no whitespace,
 * object members sorted by the UTF-16 code units of their names, and strings
 * and numbers written as ECMAScript's JSON.stringify writes them, which is
 * exactly what RFC 8785 prescribes (shortest round-trip numbers, `-0` as `0`,
 * `1e+21`; only `"`, `\` and control characters escaped, a lone surrogate as
 * `\udxxx`). Members whose value is undefined, a function or a symbol are left
 * out, and such array items become null, as on the wire.
 * @throws TypeError for NaN, Infinity, a bigint, or undefined at the top.
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${value} cannot be written as JSON`);
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      const withJson = value as { toJSON?: () => unknown };
      if (typeof withJson.toJSON === 'function') return canonicalJson(withJson.toJSON());
      if (Array.isArray(value)) return `[${value.map((item) => (isLeftOut(item) ? 'null' : canonicalJson(item))).join(',')}]`;
      const record = value as Record<string, unknown>;
      // Array.prototype.sort compares UTF-16 code units, the order RFC 8785 asks for.
      const names = Object.keys(record).filter((name) => !isLeftOut(record[name])).sort();
      return `{${names.map((name) => `${JSON.stringify(name)}:${canonicalJson(record[name])}`).join(',')}}`;
    }
    default:
      throw new TypeError(`a ${typeof value} cannot be written as JSON`);
  }
}

function isLeftOut(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}
