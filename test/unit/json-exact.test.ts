/**
 * Big integers read exactly (`--out-format` writes a JSONL line back): JSON.parse reads 2^53 + 1 as 2^53, so a line
 * that may hold an integer literal past 2^53 is read with those literals as BigInts, and jsonText writes them back
 * digit for digit. Doubles (fractions, exponents, 17 significant digits) and strings of digits stay what they were.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonText, mayHoldBigInteger, parseJsonExact } from '../../src/io/json.ts';

describe('parseJsonExact', () => {
  it('integer literals past 2^53 come back digit for digit; doubles, safe integers and digits in strings are untouched', () => {
    const cases = [
      '{"a":9007199254740993}',
      '[-9223372036854775809,18446744073709551615,9007199254740991,-9007199254740991]',
      '{"lp":[-0.30000001192092896,1e-17,1.5e+300]}',
      '{"s":"x\\"12345678901234567890","t":"\\\\","u":12345678901234567890}',
      '{"k12345678901234567890":[1,{"n":123456789012345678901234567890}]}',
    ];
    for (const text of cases) expect(jsonText(parseJsonExact(text))).toBe(text);
    expect(parseJsonExact('{"a":9007199254740993}')).toEqual({ a: 9007199254740993n });
    expect(parseJsonExact('[9007199254740991]')).toEqual([9007199254740991]);
    expect(typeof (parseJsonExact('{"s":"9007199254740993"}') as { s: unknown }).s).toBe('string');
  });

  it('invalid JSON throws JSON.parse\'s own error, at the position in the line as written', () => {
    const text = '{"a":9007199254740993,"b":[1,}';
    let expected = '';
    try { JSON.parse(text); } catch (error) { expected = (error as Error).message; }
    expect(() => parseJsonExact(text)).toThrow(expected);
  });

  it('any JSON value with big integers in it: written, read exactly, written again, the same text', () => {
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.string(), fc.boolean(), fc.constant(null), fc.array(tie('value'), { maxLength: 5 }), fc.dictionary(fc.string(), tie('value'), { maxKeys: 5 })),
    }));
    fc.assert(fc.property(value, (item) => {
      const text = jsonText(item);
      expect(jsonText(parseJsonExact(text))).toBe(text);
    }), { numRuns: 2000, seed: 20261201 });
  });

  it('the quick test never misses a literal JSON.parse would round', () => {
    fc.assert(fc.property(fc.bigInt({ min: 2n ** 53n, max: 2n ** 80n }), fc.boolean(), (big, negative) => {
      expect(mayHoldBigInteger(`{"x":[1,${negative ? '-' : ''}${big}]}`)).toBe(true);
    }), { numRuns: 500, seed: 20261201 });
    expect(mayHoldBigInteger('{"lp":[-0.30000001192092896,1e-17],"n":900719925474099}')).toBe(false);
  });
});
