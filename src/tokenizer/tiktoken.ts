/**
 * A tiktoken model file as a tokenizer.json: the same byte-level BPE, built so the tokenizers engine encodes
 * as tiktoken does.
 *
 * Kimi K2 (and other models trained with tiktoken) ship `tiktoken.model` instead of tokenizer.json: one line
 * per token, the token's bytes in base64, a space, its rank (the rank is the id). The special tokens come after
 * the ranks, named in tokenizer_config.json's `added_tokens_decoder`; the pre-tokenization regex (`pat_str`)
 * lives in the model's Python tokenizer code. Read (not copied) for this: moonshotai's tokenization_kimi.py as
 * vendored in troy12x/quasar-kimi @ d47b0df2269dafc52acd984aa7c17f72aa667c3b (TikTokenTokenizer: `pat_str`,
 * `num_reserved_special_tokens = 256`, specials at ids len(ranks) … len(ranks) + 257 named from
 * added_tokens_decoder or `<|reserved_token_{i}|>`, encode with every special allowed), and tiktoken's
 * `load_tiktoken_bpe` (one `base64 rank` pair per line) and `_byte_pair_merge` (merge the adjacent pair whose
 * joined bytes have the lowest rank, the leftmost on a tie).
 *
 * The BPE: every token's bytes are written with GPT-2's byte-to-character map (as byte-level tokenizer.json
 * files are), its id is its rank, and every split of a token into two tokens is a merge, ranked by the token it
 * makes. Merging the best-ranked merge first is then tiktoken's rule (lowest rank of the joined token).
 * `ignore_merges` keeps a piece that is itself a token whole, as tiktoken does before merging.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { TokenizerJson } from './table.ts';

/** The file name Kimi ships (tokenization_kimi.py VOCAB_FILES_NAMES). */
export const TIKTOKEN_FILE = 'tiktoken.model';

/** Is this a tiktoken rank file (by name: `tiktoken.model`, `*.tiktoken`)? */
export function isTiktokenPath(path: string): boolean {
  const name = basename(path);
  return name === TIKTOKEN_FILE || name.endsWith('.tiktoken');
}

/**
 * Kimi's pre-tokenization regex, as tokenization_kimi.py gives it to tiktoken (Rust regex syntax: `&&` class
 * intersections, `(?i:…)`, `\p{Han}`): used where the folder's config names Kimi's tokenizer code but the
 * code itself is not beside the model file.
 */
export const KIMI_PAT_STR = [
  String.raw`[\p{Han}]+`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
].join('|');

/** tokenization_kimi.py: 256 reserved special tokens, plus two, follow the ranks. */
const KIMI_SPECIAL_COUNT = 256 + 2;

/** GPT-2's byte-to-character map (bytes_to_unicode): printable bytes stand for themselves, the rest from U+0100 on. */
function byteCharacters(): string[] {
  const chars: string[] = new Array(256);
  let next = 256;
  for (let byte = 0; byte < 256; byte++) {
    const printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
    chars[byte] = String.fromCharCode(printable ? byte : next++);
  }
  return chars;
}

/** The ranks of a tiktoken file, as byte-level strings (index: rank). Errors name the file and line. */
export function readTiktokenRanks(path: string): string[] {
  const lines = readFileSync(path, 'latin1').split('\n');
  const codes = new Uint16Array(256);
  byteCharacters().forEach((char, byte) => { codes[byte] = char.charCodeAt(0); });
  const tokens: string[] = [];
  const seen = new Map<string, number>();
  for (let index = 0; index < lines.length; index++) {
    let entry = lines[index];
    if (entry.endsWith('\r')) entry = entry.slice(0, -1);
    if (entry === '') continue;
    const line = index + 1;
    const space = entry.indexOf(' ');
    const encoded = entry.slice(0, space);
    const rankText = entry.slice(space + 1);
    if (space <= 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || !/^\d{1,8}$/.test(rankText)) throw new Error(`${path}:${line}: expected "BASE64 RANK", got ${JSON.stringify(entry.slice(0, 80))}`);
    const rank = Number(rankText);
    const bytes = Buffer.from(encoded, 'base64');
    if (bytes.length === 0) throw new Error(`${path}:${line}: empty token`);
    const chars = new Array<number>(bytes.length);
    for (let i = 0; i < bytes.length; i++) chars[i] = codes[bytes[i]];
    const piece = String.fromCharCode(...chars);
    if (tokens[rank] !== undefined) throw new Error(`${path}:${line}: rank ${rank} given twice`);
    const before = seen.get(piece);
    if (before !== undefined) throw new Error(`${path}:${line}: the same bytes as rank ${before}`);
    seen.set(piece, rank);
    tokens[rank] = piece;
  }
  if (tokens.length === 0) throw new Error(`${path}: no tokens`);
  // Byte-level BPE must reach every byte: tiktoken's own files rank all 256 single bytes.
  for (let byte = 0; byte < 256; byte++) if (!seen.has(String.fromCharCode(codes[byte]))) throw new Error(`${path}: no token for the single byte 0x${byte.toString(16).padStart(2, '0')} (a tiktoken file ranks all 256)`);
  return tokens;
}

/** Every split of a token into two tokens, ordered by the rank of the token they make (then by their own ranks). */
function mergesOf(tokens: string[], rankOf: Map<string, number>): Array<[string, string]> {
  const merges: Array<[string, string]> = [];
  const splits: Array<[string, string, number, number]> = [];
  // Ranks ascending, so only one token's splits need ordering among themselves.
  for (let rank = 0; rank < tokens.length; rank++) {
    const token = tokens[rank];
    if (token === undefined || token.length < 2) continue;
    splits.length = 0;
    for (let cut = 1; cut < token.length; cut++) {
      const head = token.slice(0, cut);
      const left = rankOf.get(head);
      if (left === undefined) continue;
      const tail = token.slice(cut);
      const right = rankOf.get(tail);
      if (right !== undefined) splits.push([head, tail, left, right]);
    }
    if (splits.length > 1) splits.sort((a, b) => a[2] - b[2] || a[3] - b[3]);
    for (const [head, tail] of splits) merges.push([head, tail]);
  }
  return merges;
}

interface AddedTokenEntry { content?: unknown; special?: unknown }

/** Where the pattern comes from: the config's `pat_str`, the tokenizer code beside the file, or Kimi's. */
function patternOf(path: string, config: Record<string, unknown>): string {
  if (typeof config.pat_str === 'string' && config.pat_str) return config.pat_str;
  const folder = dirname(path);
  for (const file of readdirSync(folder).filter((name) => /^tokenization_.*\.py$/.test(name)).sort()) {
    const found = patStrFromPython(readFileSync(join(folder, file), 'utf8'));
    if (found !== undefined) return found;
  }
  if (namesKimiCode(config)) return KIMI_PAT_STR;
  throw new Error(`${path}: no pre-tokenization pattern: a tiktoken file needs the pat_str its tokenizer code uses (put it in tokenizer_config.json as "pat_str", or keep the model's tokenization_*.py beside it)`);
}

function namesKimiCode(config: Record<string, unknown>): boolean {
  return JSON.stringify(config.auto_map ?? '').includes('tokenization_kimi');
}

/**
 * `pat_str = "|".join([r"""…""", …])` or `pat_str = r"…"` in Python source, read as data (never run):
 * raw string literals only, so what the file says is what the regex is.
 */
export function patStrFromPython(source: string): string | undefined {
  const start = /\bpat_str\s*=\s*/.exec(source);
  if (!start) return undefined;
  let at = start.index + start[0].length;
  const literal = /^[rR]("""|'''|"|')/;
  const readLiteral = (): string | undefined => {
    const open = literal.exec(source.slice(at));
    if (!open) return undefined;
    const quote = open[1];
    const end = source.indexOf(quote, at + open[0].length);
    if (end < 0) return undefined;
    const value = source.slice(at + open[0].length, end);
    at = end + quote.length;
    return value;
  };
  const single = readLiteral();
  if (single !== undefined) return single;
  const join = /^(["'])\|\1\s*\.\s*join\(\s*\[/.exec(source.slice(at));
  if (!join) return undefined;
  at += join[0].length;
  const parts: string[] = [];
  for (;;) {
    at += /^[\s,]*/.exec(source.slice(at))![0].length;
    if (source.startsWith(']', at)) break;
    const part = readLiteral();
    if (part === undefined) return undefined;
    parts.push(part);
  }
  return parts.length ? parts.join('|') : undefined;
}

/**
 * Rust's `(?i:…)` folds case by Unicode's simple case folding (`s` also matches `ſ`, `k` the Kelvin sign);
 * the tokenizers engine folds ASCII only. A group of plain literals is spelled out here, each letter as the
 * class of every character that folds with it.
 */
function spellCaseInsensitive(pattern: string): string {
  return pattern.replace(/\(\?i:((?:[^()[\]\\|]|\|)*)\)/g, (_, body: string) => `(?:${[...body].map((ch) => (ch === '|' ? '|' : foldClass(ch))).join('')})`);
}

const folds = new Map<string, string>();
function foldClass(ch: string): string {
  const escaped = (c: string) => (/[\\^$.*+?()[\]{}|/-]/.test(c) ? `\\${c}` : c);
  if (ch.toLowerCase() === ch.toUpperCase()) return escaped(ch);
  let cls = folds.get(ch);
  if (cls === undefined) {
    const key = ch.toLowerCase();
    const members: string[] = [];
    for (let cp = 0; cp < 0x10000; cp++) {
      const other = String.fromCharCode(cp);
      if (other.toLowerCase() === key || (other.toUpperCase() === ch.toUpperCase() && other.toUpperCase().length === 1)) members.push(other);
    }
    cls = `[${members.map(escaped).join('')}]`;
    folds.set(ch, cls);
  }
  return cls;
}

/** The tokenizer.json equivalent of a tiktoken file and its tokenizer_config.json. */
export function tiktokenTokenizerJson(path: string, config: Record<string, unknown>): TokenizerJson {
  const tokens = readTiktokenRanks(path);
  const rankOf = new Map<string, number>();
  const vocab: Record<string, number> = {};
  tokens.forEach((token, rank) => { if (token !== undefined) { rankOf.set(token, rank); vocab[token] = rank; } });

  // Special tokens: those the config names, and (Kimi's tokenizer code) the reserved block after the ranks.
  const named = new Map<number, { content: string; special: boolean }>();
  const decoder = config.added_tokens_decoder;
  if (decoder && typeof decoder === 'object') {
    for (const [key, value] of Object.entries(decoder as Record<string, AddedTokenEntry>)) {
      const id = Number(key);
      if (!Number.isSafeInteger(id) || id < 0 || typeof value?.content !== 'string') throw new Error(`${join(dirname(path), 'tokenizer_config.json')}: added_tokens_decoder["${key}"]: expected an id and {content}`);
      if (id < tokens.length && tokens[id] !== undefined) throw new Error(`${join(dirname(path), 'tokenizer_config.json')}: added_tokens_decoder["${key}"]: id ${id} is a ranked token of ${basename(path)}`);
      named.set(id, { content: value.content, special: value.special !== false });
    }
  }
  if (namesKimiCode(config) || existsSync(join(dirname(path), 'tokenization_kimi.py'))) {
    for (let id = tokens.length; id < tokens.length + KIMI_SPECIAL_COUNT; id++) {
      if (!named.has(id)) named.set(id, { content: `<|reserved_token_${id}|>`, special: true });
    }
  }
  let merges: Array<[string, string]> | undefined;
  const added_tokens = [...named].sort((a, b) => a[0] - b[0]).map(([id, { content, special }]) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special }));

  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens,
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: spellCaseInsensitive(patternOf(path, config)) }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab,
      // Only the engine reads the merges; the byte table (all a mask needs) does not, so they are made on first read.
      get merges() { return (merges ??= mergesOf(tokens, rankOf)); },
    },
  } as TokenizerJson;
}
