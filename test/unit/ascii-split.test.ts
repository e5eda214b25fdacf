/**
 * encoder.ts splits ASCII text for the Qwen and Llama 3 patterns without the regex engine: its pieces must be the
 * pattern's matches as the regex engine finds them (the pattern as @huggingface/tokenizers builds it), on every
 * string of up to 4 characters over an alphabet of each kind of character the pattern tells apart, and on random
 * longer strings.
 */
import { describe, expect, it } from 'vitest';
import { asciiSplit, GPT4_SPLITS } from '../../src/tokenizer/encoder.ts';

function regexSplit(source: string, text: string): string[] {
  return [...text.matchAll(new RegExp(source, 'gu'))].map((match) => match[0]);
}

// Letters (the contraction letters among them), digits, \r \n, the other white space, a quote, punctuation, controls.
const ALPHABET = ["a", "s", "T", "r", "E", "v", "l", "L", "d", "m", "x", "0", "7", "\n", "\r", " ", "\t", "\v", "\f", "'", ".", "<", "_", "\u0000", "\u001f", "\u007f"];

describe.each([...GPT4_SPLITS])('ASCII split: %s', (source, digits) => {
  it('every string of up to 4 characters over the alphabet, and the contractions in context', () => {
    const failures: string[] = [];
    const check = (text: string) => {
      const out: string[] = [];
      asciiSplit(text, out, digits);
      const expected = regexSplit(source, text);
      if (JSON.stringify(out) !== JSON.stringify(expected) && failures.length < 5) failures.push(JSON.stringify([text, out, expected]));
    };
    const grow = (prefix: string, depth: number) => {
      check(prefix);
      if (depth === 0) return;
      for (const ch of ALPHABET) grow(prefix + ch, depth - 1);
    };
    grow('', 4);
    for (const c of ["'s", "'S", "'t", "'re", "'RE", "'rE", "'ve", "'m", "'ll", "'Ll", "'d", "'r", "'v", "'l", "'x"]) for (const around of ['', 'a', ' ', '1', '\n']) check(`${around}${c}${around}x`);
    expect(failures).toEqual([]);
  });

  it('random ASCII strings of up to 200 characters', () => {
    let seed = 12345;
    const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    const failures: string[] = [];
    for (let k = 0; k < 20_000; k++) {
      const length = Math.floor(random() * 200);
      let text = '';
      for (let i = 0; i < length; i++) text += random() < 0.5 ? ALPHABET[Math.floor(random() * ALPHABET.length)] : String.fromCharCode(Math.floor(random() * 128));
      const out: string[] = [];
      asciiSplit(text, out, digits);
      const expected = regexSplit(source, text);
      if (JSON.stringify(out) !== JSON.stringify(expected) && failures.length < 5) failures.push(JSON.stringify([text, out, expected]));
    }
    expect(failures).toEqual([]);
  });
});
