/**
 * A folder holding a tiktoken rank file (Kimi's shape: tiktoken.model + tokenizer_config.json) loads as a tokenizer
 * whose ids are tiktoken's own. No Kimi file can be had offline, so the rank file is written here from OpenAI's
 * cl100k_base ranks as the `tiktoken` npm package ships them; the reference is that package: OpenAI's tiktoken
 * core (the Rust code Python's tiktoken runs, compiled to WebAssembly), given the same ranks, specials and the
 * pattern in its own Rust regex syntax. Two patterns: cl100k_base's own, and Kimi's (tokenization_kimi.py's
 * `pat_str`: `&&` class intersections, `\p{Han}`, `(?i:…)` contractions), read from a tokenization_kimi.py
 * beside the rank file as a Kimi download has it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type LoadedTokenizer } from '../../src/tokenizer/load.ts';
import { patStrFromPython } from '../../src/tokenizer/tiktoken.ts';
import { SPECIAL } from '../../src/tokenizer/table.ts';

const require = createRequire(import.meta.url);
const { Tiktoken } = require('tiktoken/lite') as { Tiktoken: new (ranks: string, specials: Record<string, number>, pattern: string) => { encode(text: string, allowed?: 'all'): Uint32Array; free(): void } };
const cl100k = require('tiktoken/encoders/cl100k_base.json') as { pat_str: string; special_tokens: Record<string, number>; bpe_ranks: string };

// tokenization_kimi.py's pat_str, as Kimi's file spells it (moonshotai's tokenizer code as vendored in
// troy12x/quasar-kimi @ d47b0df2269dafc52acd984aa7c17f72aa667c3b).
const KIMI_PATTERN_PARTS = [
  String.raw`[\p{Han}]+`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
];
const KIMI_PATTERN = KIMI_PATTERN_PARTS.join('|');
const KIMI_PYTHON = `class TikTokenTokenizer:\n    num_reserved_special_tokens = 256\n\n    pat_str = "|".join(\n        [\n${KIMI_PATTERN_PARTS.map((part) => `            r"""${part}""",`).join('\n')}\n        ]\n    )\n`;

/** The rank file: one `base64 rank` line per token, as tiktoken's load_tiktoken_bpe reads it. */
function rankFile(): string {
  const lines: string[] = [];
  for (const row of cl100k.bpe_ranks.split('\n').filter(Boolean)) {
    const [, offset, ...tokens] = row.split(' ');
    tokens.forEach((token, i) => lines.push(`${token} ${Number(offset) + i}`));
  }
  return `${lines.join('\n')}\n`;
}
const BASE = 100256; // cl100k_base ranks 0 … 100255

// Kimi's special tokens sit right after the ranks: their offsets from the first one as in Kimi K2's
// tokenizer_config.json (163584 + k), here after cl100k's ranks.
const KIMI_SPECIAL_OFFSETS: Record<string, number> = {
  '[BOS]': 0, '[EOS]': 1, '<|im_end|>': 2, '<|im_user|>': 3, '<|im_assistant|>': 4, '<|start_header_id|>': 6, '<|end_header_id|>': 7,
  '[EOT]': 9, '<|im_system|>': 10, '<|tool_calls_section_begin|>': 11, '<|tool_calls_section_end|>': 12, '<|tool_call_begin|>': 13,
  '<|tool_call_argument_begin|>': 14, '<|tool_call_end|>': 15, '<|im_middle|>': 17, '[UNK]': 254, '[PAD]': 255,
};

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tagmask-tiktoken-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const TEXTS = [
  'Hello world',
  "It's the user's turn; THEY'LL say we'd I'M you're WE'VE it'ſ DON'T",
  '  two leading spaces, trailing  \t\t',
  'line one\nline two\r\n\ttabbed\n\n\nthree newlines\r\r\n  \n',
  'whitespace: \u00a0nbsp \u3000ideographic \u2028line sep \u0085nel \ufeffbom \u200bzwsp \u2003em',
  'numbers 1234567890 and 3.14159, -42, 1,000,000.00, ١٢٣٤ ٥٦ ⅫⅣ ²³',
  'unicode: héllo wörld — “quotes” ½ 日本語のテキスト 中文混合English文字 한국어 😀🤖🎉 👩‍👩‍👧‍👦 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'Combining: e\u0301 a\u0308 \u0915\u094d\u0937 ÀÉÎÕÜ ǅǈǋ ΑΒΓαβγ Ωmega ᾈᾉ',
  'CamelCaseWords HTTPServer iPhone XMLHttpRequest getURLForID snake_case kebab-case',
  'code: function f(x) {\n    return x ** 2; // comment\n}\n\tif (a && b || !c) { y += 1; }\n',
  '<think>\nreasoning\n</think>\n\n<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>',
  'a'.repeat(300) + ' ' + 'ab'.repeat(120) + ' ' + '7'.repeat(50),
  '!!!???...,,,;;;:::\'\'\'"""((()))[[[]]]{{{}}}',
  '',
];

/** Text from a seeded generator over pools of hard characters, so each run checks the same varied strings. */
function randomTexts(count: number, seed: number): string[] {
  const pool = [...' \t\n\r\u00a0\u3000aAzZéÉßſ\'’0919١日本中文한😀👍🏽\u0301\u200d.,!?-_/\\"<>|{}()[]#@'];
  const words = ['the', 'The', 'THE', "'s", "'LL", 'don\'t', ' ', '  ', '\n\n', '1234', 'é', '日本語', 'naïve', 'ÉCOLE', '<|im_end|>', '<|endoftext|>', '🤖'];
  let state = seed >>> 0;
  const next = (n: number) => { state = (Math.imul(state, 1664525) + 1013904223) >>> 0; return state % n; };
  return Array.from({ length: count }, () => {
    let text = '';
    const length = 1 + next(60);
    for (let i = 0; i < length; i++) text += next(3) === 0 ? words[next(words.length)] : pool[next(pool.length)];
    return text;
  });
}

function agree(ours: LoadedTokenizer, reference: { encode(text: string, allowed?: 'all'): Uint32Array }, texts: string[]): void {
  for (const text of texts) expect(ours.encode(text), JSON.stringify(text)).toEqual(Array.from(reference.encode(text, 'all')));
}

describe('a tiktoken folder with cl100k_base ranks and pattern', () => {
  let ours: LoadedTokenizer;
  const reference = new Tiktoken(cl100k.bpe_ranks, cl100k.special_tokens, cl100k.pat_str);
  beforeAll(async () => {
    const addedTokens = Object.fromEntries(Object.entries(cl100k.special_tokens).map(([content, id]) => [String(id), { content, special: true }]));
    const dir = folder({ 'tiktoken.model': rankFile(), 'tokenizer_config.json': JSON.stringify({ added_tokens_decoder: addedTokens, pat_str: cl100k.pat_str }) });
    ours = await loadTokenizer(dir);
  }, 120_000);

  it('encodes every text as tiktoken does: unicode, whitespace runs, digits, contractions, specials', () => {
    agree(ours, reference, TEXTS);
  }, 60_000);

  it('encodes 400 generated texts as tiktoken does', () => {
    agree(ours, reference, randomTexts(400, 19));
  }, 60_000);

  it('decodes back to the text, and its byte table holds each id\'s bytes', () => {
    for (const text of TEXTS) expect(ours.decode(ours.encode(text))).toBe(text);
    const id = reference.encode(' world')[0];
    expect(Buffer.from(ours.table.pieces.subarray(ours.table.offsets[id], ours.table.offsets[id + 1])).toString()).toBe(' world');
    const special = cl100k.special_tokens['<|endoftext|>'];
    expect(ours.table.flags[special] & SPECIAL).toBe(SPECIAL);
  }, 60_000);
});

describe('a Kimi-shaped tiktoken folder: tokenization_kimi.py beside the rank file', () => {
  let ours: LoadedTokenizer;
  const specials: Record<string, number> = {};
  for (let i = 0; i < 258; i++) specials[`<|reserved_token_${BASE + i}|>`] = BASE + i;
  for (const [content, offset] of Object.entries(KIMI_SPECIAL_OFFSETS)) { delete specials[`<|reserved_token_${BASE + offset}|>`]; specials[content] = BASE + offset; }
  const reference = new Tiktoken(cl100k.bpe_ranks, specials, KIMI_PATTERN);
  beforeAll(async () => {
    const addedTokens = Object.fromEntries(Object.entries(KIMI_SPECIAL_OFFSETS).map(([content, offset]) => [String(BASE + offset), { content, special: true }]));
    const config = { added_tokens_decoder: addedTokens, auto_map: { AutoTokenizer: ['tokenization_kimi.TikTokenTokenizer', null] }, bos_token: '[BOS]', eos_token: '[EOS]' };
    ours = await loadTokenizer(folder({ 'tiktoken.model': rankFile(), 'tokenizer_config.json': JSON.stringify(config), 'tokenization_kimi.py': KIMI_PYTHON }));
  }, 120_000);

  it('reads the pattern from the Python file as data', () => {
    expect(patStrFromPython(KIMI_PYTHON)).toBe(KIMI_PATTERN);
  });

  it('encodes as tiktoken does under Kimi\'s pattern (Han runs, case-split words, contractions incl. ſ)', () => {
    agree(ours, reference, [...TEXTS, ...randomTexts(400, 7)]);
  }, 60_000);

  it('knows Kimi\'s special tokens and the reserved ones between them, as special tokens', () => {
    const text = '<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|><|tool_calls_section_begin|><|reserved_token_100261|>[PAD]';
    agree(ours, reference, [text]);
    for (const id of [BASE + 3, BASE + 5, BASE + 17, BASE + 257]) expect(ours.table.flags[id] & SPECIAL, String(id)).toBe(SPECIAL);
  }, 60_000);

  it('without the Python file, a config naming Kimi\'s tokenizer code gets Kimi\'s pattern', async () => {
    const addedTokens = Object.fromEntries(Object.entries(KIMI_SPECIAL_OFFSETS).map(([content, offset]) => [String(BASE + offset), { content, special: true }]));
    const bare = await loadTokenizer(folder({ 'tiktoken.model': rankFile(), 'tokenizer_config.json': JSON.stringify({ added_tokens_decoder: addedTokens, auto_map: { AutoTokenizer: ['tokenization_kimi.TikTokenTokenizer', null] } }) }));
    agree(bare, reference, TEXTS);
  }, 120_000);
});

describe('bad tiktoken folders: the error names the place', () => {
  it('a malformed line', async () => {
    const dir = folder({ 'tiktoken.model': 'IQ== 0\nnot a line\n', 'tokenizer_config.json': '{"pat_str": "\\\\s+"}' });
    await expect(loadTokenizer(dir)).rejects.toThrow(/tiktoken\.model:2: expected "BASE64 RANK"/);
  });

  it('a rank given twice', async () => {
    const dir = folder({ 'tiktoken.model': 'IQ== 0\nIg== 0\n', 'tokenizer_config.json': '{"pat_str": "\\\\s+"}' });
    await expect(loadTokenizer(dir)).rejects.toThrow(/tiktoken\.model:2: rank 0 given twice/);
  });

  it('no pattern anywhere', async () => {
    const dir = folder({ 'tiktoken.model': rankFile(), 'tokenizer_config.json': '{}' });
    await expect(loadTokenizer(dir)).rejects.toThrow(/no pre-tokenization pattern/);
  }, 60_000);
});
