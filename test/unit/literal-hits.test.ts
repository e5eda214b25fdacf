/**
 * detect counts every literal of every grammar in one pass over all rollouts' bytes (src/detect.ts literalHits).
 * Reference: each literal's places found one by one with Buffer#indexOf from every position, which is how
 * detect searched before; literals that contain, overlap or repeat one another are the cases a one-pass
 * automaton can get wrong.
 */
import { describe, expect, it } from 'vitest';
import { literalHits } from '../../src/detect.ts';

function placesByIndexOf(bytes: Buffer, literal: string): number[] {
  const needle = Buffer.from(literal, 'utf8');
  const places: number[] = [];
  for (let at = bytes.indexOf(needle); at >= 0; at = bytes.indexOf(needle, at + 1)) places.push(at);
  return places;
}

function seeded(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

describe('literalHits', () => {
  it('finds every place of literals that contain and overlap one another', () => {
    const text = Buffer.from('<think>aaa</think>\n\n<information>aaaa</information>\n\n<think></think><|im_end|>\n', 'utf8');
    const literals = ['<think>', '</think>', 'think>', 'aa', 'a', '\n\n', '\n\n<information>', '</information>\n\n', 'information', '<|im_end|>', 'absent'];
    const hits = literalHits(text, literals);
    for (const literal of literals) expect([...hits.get(literal)!], literal).toEqual(placesByIndexOf(text, literal));
  });

  it('agrees with indexOf on random bytes and random literal sets', () => {
    const random = seeded(7);
    const alphabet = ['a', 'b', '<', '>', '\n', 'é', '🙂'];
    const pick = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    for (let round = 0; round < 200; round++) {
      const text = Buffer.from(pick(200 + Math.floor(random() * 300)), 'utf8');
      const literals = [...new Set(Array.from({ length: 1 + Math.floor(random() * 12) }, () => pick(1 + Math.floor(random() * 5))))];
      const hits = literalHits(text, literals);
      for (const literal of literals) expect([...hits.get(literal)!], `round ${round}: ${JSON.stringify(literal)}`).toEqual(placesByIndexOf(text, literal));
    }
  });

  it('with regions, finds the places inside each region (as indexOf in each alone) and none across a boundary', () => {
    const random = seeded(11);
    const alphabet = ['a', 'b', '<', '>', '\n', 'é'];
    const pick = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    for (let round = 0; round < 100; round++) {
      const parts = Array.from({ length: 1 + Math.floor(random() * 6) }, () => Buffer.from(pick(Math.floor(random() * 40)), 'utf8'));
      const regions = [0];
      for (const part of parts) regions.push(regions[regions.length - 1] + part.length);
      const text = Buffer.concat(parts);
      const literals = [...new Set(Array.from({ length: 1 + Math.floor(random() * 8) }, () => pick(1 + Math.floor(random() * 4))))];
      const hits = literalHits(text, literals, regions);
      for (const literal of literals) {
        const expected = parts.flatMap((part, k) => placesByIndexOf(part, literal).map((at) => at + regions[k]));
        expect([...hits.get(literal)!], `round ${round}: ${JSON.stringify(literal)}`).toEqual(expected);
      }
    }
  });

  it('finds nothing in no bytes, and gives each literal its own entry', () => {
    const hits = literalHits(new Uint8Array(0), ['<a>', 'b']);
    expect([...hits.keys()]).toEqual(['<a>', 'b']);
    expect(hits.get('<a>')!.length + hits.get('b')!.length).toBe(0);
  });
});
