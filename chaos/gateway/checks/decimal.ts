/**
 * Money as PostgreSQL's numeric writes it (decimal text), added exactly: a
 * float would make two equal totals differ in the last place.
 */
const SCALE = 18;

/** A decimal string as an integer of 10^-18 units. @throws RangeError for text that is not a plain decimal. */
export function toUnits(text: string | null | undefined): bigint {
  if (text === null || text === undefined || text === '') return 0n;
  const match = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match) throw new RangeError(`not a decimal: ${text}`);
  const [, sign, whole, fraction = ''] = match;
  const units = BigInt(whole!) * 10n ** BigInt(SCALE) + BigInt((fraction + '0'.repeat(SCALE)).slice(0, SCALE));
  return sign ? -units : units;
}

/** The sum of decimal strings, as a decimal string without trailing zeros. */
export function sumDecimals(values: Array<string | null | undefined>): string {
  return fromUnits(values.reduce((total, value) => total + toUnits(value), 0n));
}

export function fromUnits(units: bigint): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / 10n ** BigInt(SCALE);
  const fraction = (abs % 10n ** BigInt(SCALE)).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

export const sameDecimal = (a: string | null | undefined, b: string | null | undefined): boolean => toUnits(a) === toUnits(b);
