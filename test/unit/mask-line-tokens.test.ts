/**
 * A text or messages rollout's line carries the ids it was tokenized to: written as bytes where the output takes
 * bytes, they must read back as the same JSON that JSON.stringify gives (every digit count, 0, the largest id,
 * and ids that are not plain integers, which go the text way).
 */
import { describe, expect, it } from 'vitest';
import { writeMaskLine, type TextOut } from '../../src/io/lines.ts';
import type { MaskResult } from '../../src/masker.ts';

function collect(bytes: boolean): TextOut & { text(): string } {
  const parts: string[] = [];
  const out: TextOut & { text(): string } = {
    write: (text) => { parts.push(text); },
    writeMask: (mask) => { parts.push(JSON.stringify(Array.from(mask))); },
    text: () => parts.join(''),
  };
  if (bytes) out.writeBytes = (data) => { parts.push(Buffer.from(data).toString('latin1')); };
  return out;
}

const result = { mask: new Uint8Array([0, 1]), spans: [], diagnostics: [] } as unknown as MaskResult;

describe('the tokens of a mask line', () => {
  const cases: Array<[string, number[]]> = [
    ['every digit count', [0, 9, 10, 99, 100, 999, 1000, 12345, 151643, 1234567, 2147483647]],
    ['none', []],
    ['one', [7]],
    ['not plain integers (the text way)', [1.5, -1, 2 ** 40]],
  ];
  it.each(cases)('%s', (_name, tokens) => {
    for (const bytes of [true, false]) {
      const out = collect(bytes);
      writeMaskLine(out, '"x"', result, tokens);
      expect(JSON.parse(out.text())).toEqual({ id: 'x', mask: [0, 1], tokens, spans: [], diagnostics: [] });
      expect(out.text()).toContain(`"tokens":${JSON.stringify(tokens)}`);
    }
  });

  it('many lines through one scratch buffer, each its own', () => {
    const out = collect(true);
    const lines: number[][] = [];
    for (let k = 0; k < 50; k++) lines.push(Array.from({ length: 1 + ((k * 37) % 300) }, (_, i) => (i * 7919 + k) % 151669));
    for (const tokens of lines) writeMaskLine(out, '1', result, tokens);
    const back = out.text().trim().split('\n').map((line) => JSON.parse(line).tokens);
    expect(back).toEqual(lines);
  });
});
