import canonicalize from 'canonicalize';
import { canonicalJson, intentDigest, requestDigest } from '../../packages/client';
import { requestDigest as serverDigest } from '../../src/jobs/digest';

/** Inputs whose canonical form is easy to get wrong, each as the server receives it (parsed JSON text). */
const TRICKY: Array<[string, string]> = [
  ['members in another order, nested', '{"z":1,"a":{"y":[3,{"q":1,"p":2}],"b":null},"m":true}'],
  ['names ordered by UTF-16 code units, not code points (astral before U+FB33)', '{"\\ufb33":1,"\\ud83d\\ude00":2,"\\u20ac":3,"e":4,"\\u00e9":5,"E":6,"":7}'],
  ['astral characters in values, escaped and raw', '{"text":"\\ud83d\\ude00 \\ud834\\udd1e \\udbff\\udfff 😀"}'],
  ['lone surrogates', '{"high":"a\\ud800b","low":"\\udc00","pair":"\\ud83d\\ude00"}'],
  ['escapes and control characters', '{"s":"\\u0000\\u001f\\"\\\\\\/\\b\\f\\n\\r\\t\\u007f\\u2028\\u2029<>&\'"}'],
  ['numbers that look different and are one', '{"a":1.0,"b":1e2,"c":-0,"d":-0.0,"e":1E21,"f":1e-7,"g":0.000001,"h":1e20}'],
  ['numbers at the edges', '[5e-324,1.7976931348623157e308,9007199254740993,123456789012345680000,0.1,-1e-7,2e-3,4.50,333333333.33333329,1e30]'],
  ['nested and empty arrays and objects', '{"a":[[[]],[1,[2,[3,{}]]],{},[]],"b":[{"y":1,"x":[{"k":{}}]}]}'],
  ['long unicode text', `{"customerMessage":${JSON.stringify('Grüße aus Köln — 日本語のテキスト, emoji 👍🏽, RTL עברית, combining é, zero-width \u200b')}}`],
];

describe('the client digest', () => {
  it.each(TRICKY)('equals the server digest for %s', async (_name, json) => {
    // Arrange
    const input = JSON.parse(json) as unknown;

    // Act
    const client = await requestDigest('support.reply', 1, input);

    // Assert
    expect(client).toBe(serverDigest('support.reply', 1, input));
    expect(canonicalJson({ operation: 'support.reply', schemaVersion: 1, input })).toBe(canonicalize({ operation: 'support.reply', schemaVersion: 1, input }));
  });

  it('writes numbers as RFC 8785 does (its own example)', () => {
    // RFC 8785, section 3.2.2.3: numbers are written as ECMAScript writes them.
    const input = JSON.parse('[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, -0, 1e21, 1e-7]');

    expect(canonicalJson(input)).toBe('[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e+21,1e-7]');
  });

  it('sorts members by UTF-16 code units and escapes only what JSON must', () => {
    const input = JSON.parse('{"\\ufb33":1,"\\ud83d\\ude00":2,"b":"\\u0007\\u2028\\ud800","a":[]}');

    expect(canonicalJson(input)).toBe('{"a":[],"b":"\\u0007\u2028\\ud800","\ud83d\ude00":2,"\ufb33":1}');
  });

  it('changes with the input, the operation and the schema version', async () => {
    const input = { ticketId: 'T-1', customerMessage: 'Hi', channel: 'email' };
    const base = await requestDigest('support.reply', 1, input);

    await expect(requestDigest('support.reply', 1, { ...input, customerMessage: 'Hi!' })).resolves.not.toBe(base);
    await expect(requestDigest('support.other', 1, input)).resolves.not.toBe(base);
    await expect(requestDigest('support.reply', 2, input)).resolves.not.toBe(base);
  });

  it('names an intent by the request digest when the schema version is known, and by no server digest when it is not', async () => {
    const input = { ticketId: 'T-1', customerMessage: 'Hi', channel: 'email' };

    await expect(intentDigest('support.reply', 1, input)).resolves.toBe(serverDigest('support.reply', 1, input));
    const unversioned = await intentDigest('support.reply', undefined, input);
    expect(unversioned).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect([1, 2, 3].map((version) => serverDigest('support.reply', version, input))).not.toContain(unversioned);
  });

  it('refuses what JSON cannot say', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ n: Number.POSITIVE_INFINITY })).toThrow(TypeError);
  });
});
