/**
 * Byte-level BPE encoding (Qwen, Llama 3, DeepSeek-V3, gpt-oss, Kimi) without building @huggingface/tokenizers'
 * model, with exactly its results.
 *
 * The engine's `encode` costs two things the `{messages}` path pays for every run and every token: building the
 * model parses all of tokenizer.json (11 MB for Qwen3, 27 MB for gpt-oss) and keys every merge by a JSON string
 * (~1 s), and each token then goes through the byte-to-character map, a string BPE and two map look-ups (~5 µs a
 * token). Here the merges are kept as ids (grouped by left id, sorted by right id: a binary search, nothing to
 * build) in a cache file beside the byte table, read as views of the file, and what a pre-token becomes is
 * remembered by the pre-token itself: a warm run reads ~2 MB (Qwen3) and no JSON, and a token costs a look-up.
 *
 * Exactness: everything before the model is @huggingface/tokenizers' own code, run on a tokenizer built without
 * vocabulary or merges (its added-token splitting with lstrip/rstrip, normalizer, pre-tokenizer steps before the
 * final ByteLevel, and the ByteLevel step itself); only the BPE merge loop and the string → id look-up are ours,
 * and they follow @huggingface/tokenizers 0.2.0 dist/tokenizers.cjs (`BPE.bpe`, `BPE.encode`, `Tokenizer.encode_text`
 * and `Tokenizer.encode`): merges by rank, ties to the leftmost pair (its `bias` of i / length), a duplicated merge
 * ranked by its last line, `ignore_merges` looking the whole word up first, ids by the added token before the
 * vocabulary. A tokenizer this cannot reproduce exactly (byte fallback, suffixes, a merge whose result is not in the
 * vocabulary, two strings with one id, a post-processor that changes ids without special tokens) is left to the
 * engine: `encoderFor` gives undefined and says why.
 */
import { dirname } from 'node:path';
import { bytesOf, readCacheFile, writeCacheFile } from './cache-file.ts';

type TokenizersModule = typeof import('@huggingface/tokenizers');

/** What the cache holds: the tokenizer without vocabulary and merges, and the model as ids. */
export interface EncoderData {
  /** tokenizer.json with `model.vocab` and `model.merges` emptied (normalizer, pre-tokenizer, added tokens…). */
  skeleton: Record<string, unknown>;
  ignoreMerges: boolean;
  /** The id of each byte's ByteLevel character. */
  byteIds: Int32Array;
  /**
   * The merges, grouped by their left id and sorted by their right id within: three numbers each (right id, rank,
   * merged id); those with left id L are entries firstOf[L] to firstOf[L + 1] - 1. Read as they are from the cache,
   * nothing to build.
   */
  merges: Int32Array;
  firstOf: Int32Array;
  /** `ignore_merges` only: every vocabulary string (and added token) that is a ByteLevel string, as its bytes, and its id. */
  words: { ids: Int32Array; offsets: Uint32Array; bytes: Uint8Array };
}

interface ModelJson {
  type?: string;
  vocab?: unknown;
  merges?: unknown[];
  byte_fallback?: boolean;
  ignore_merges?: boolean;
  end_of_word_suffix?: string | null;
  continuing_subword_suffix?: string | null;
}

interface SkeletonTokenizer {
  normalizer: ((text: string) => string) | null;
  pre_tokenizer: unknown;
  post_processor: unknown;
  splitter_unnormalized: { split(text: string): string[] };
  splitter_normalized: { split(text: string): string[] };
  added_tokens_map: Map<string, { id: number; lstrip: boolean; rstrip: boolean }>;
  model: { tokens_to_ids: Map<string, number> };
  remove_space?: boolean;
  do_lowercase_and_remove_accent?: boolean;
}

interface PreTokenizerStep { pre_tokenize(text: string[], options?: Record<string, unknown>): string[] }
interface ByteLevelStep { pre_tokenize_text(text: string, options?: Record<string, unknown>): string[]; byte_encoder: Record<number, string> }

/** The tokenizer built with an empty model: @huggingface/tokenizers' own splitting, normalizer and pre-tokenizer. */
function skeletonTokenizer(tokenizers: TokenizersModule, skeleton: Record<string, unknown>, config: Record<string, unknown>): SkeletonTokenizer {
  const model = skeleton.model as ModelJson;
  return new tokenizers.Tokenizer({ ...skeleton, model: { ...model, vocab: {}, merges: [] } } as never, config as never) as unknown as SkeletonTokenizer;
}

/**
 * The pre-tokenizer steps before the final ByteLevel, and the ByteLevel step (the engine's own objects, found by the
 * config they were built from); undefined where it does not end so.
 */
function preTokenizerSteps(tokenizer: SkeletonTokenizer, config: unknown): { steps: Array<PreTokenizerStep | null>; byteLevel: ByteLevelStep } | undefined {
  const spec = config as { type?: string; pretokenizers?: Array<{ type?: string } | null> } | null;
  const built = tokenizer.pre_tokenizer as (ByteLevelStep & { tokenizers?: Array<PreTokenizerStep | null> }) | null;
  if (!spec || !built) return undefined;
  if (spec.type === 'ByteLevel') return { steps: [], byteLevel: built };
  if (spec.type !== 'Sequence' || !Array.isArray(spec.pretokenizers) || !Array.isArray(built.tokenizers)) return undefined;
  const types = spec.pretokenizers.map((step) => step?.type);
  if (types.length === 0 || types[types.length - 1] !== 'ByteLevel' || types.indexOf('ByteLevel') !== types.length - 1) return undefined;
  if (built.tokenizers.length !== types.length) return undefined;
  const byteLevel = built.tokenizers[types.length - 1] as unknown as ByteLevelStep;
  if (typeof byteLevel?.pre_tokenize_text !== 'function' || !byteLevel.byte_encoder) return undefined;
  return { steps: built.tokenizers.slice(0, -1), byteLevel };
}

/** Post-processors that hand the tokens through unchanged when no special tokens are added. */
function postProcessorKeepsTokens(config: unknown): boolean {
  if (config === null || config === undefined) return true;
  const processor = config as { type?: string; single?: Array<Record<string, unknown>>; processors?: unknown[] };
  if (processor.type === 'ByteLevel') return true;
  if (processor.type === 'Sequence') return Array.isArray(processor.processors) && processor.processors.every(postProcessorKeepsTokens);
  if (processor.type === 'TemplateProcessing') {
    const single = processor.single ?? [];
    const sequences = single.filter((item) => 'Sequence' in item);
    return sequences.length === 1 && (sequences[0].Sequence as { id?: string }).id === 'A';
  }
  return false;
}

/**
 * The encoder's data from a parsed tokenizer.json, or why it cannot reproduce the engine (a string saying so).
 */
export function buildEncoderData(json: Record<string, unknown>, config: Record<string, unknown>, tokenizers: TokenizersModule): EncoderData | string {
  const model = json.model as ModelJson | undefined;
  if (!model || model.type !== 'BPE') return `the model is ${model?.type ?? 'missing'}, not BPE`;
  if (model.byte_fallback) return 'the BPE falls back to bytes';
  if (model.end_of_word_suffix || model.continuing_subword_suffix) return 'the BPE has a word suffix';
  const vocab = model.vocab;
  if (!vocab || typeof vocab !== 'object' || Array.isArray(vocab)) return 'the vocabulary is not an object';
  if (!Array.isArray(model.merges)) return 'no merges';
  const size = Object.keys(vocab).length + (Array.isArray(json.added_tokens) ? json.added_tokens.length : 0);
  if (size >= 2 ** 24) return 'more than 2^24 ids';
  if (config.remove_space === true || config.do_lowercase_and_remove_accent) return 'the config rewrites the text before encoding';
  if (!postProcessorKeepsTokens(json.post_processor)) return 'the post-processor may change the tokens';
  const { model: _model, ...rest } = json;
  const { vocab: _vocab, merges: _merges, ...flags } = model;
  const skeleton = { ...rest, model: flags } as Record<string, unknown>;
  const tokenizer = skeletonTokenizer(tokenizers, skeleton, config);
  const pre = preTokenizerSteps(tokenizer, skeleton.pre_tokenizer);
  if (!pre) return 'the pre-tokenizer does not end with ByteLevel';

  // tokens_to_ids as the engine's model has it: the vocabulary, then every added token's content over it (the
  // skeleton's model holds those alone). Looked up in the parsed object itself, not copied into a Map.
  const words = vocab as Record<string, number>;
  const contents = tokenizer.model.tokens_to_ids;
  const tokenId = (text: string): number | undefined => contents.get(text) ?? (Object.hasOwn(words, text) ? words[text] : undefined);
  const added = tokenizer.added_tokens_map;
  const idOf = (text: string): number | undefined => added.get(text)?.id ?? tokenId(text);
  // Strings the BPE can make: the byte characters and the merges' results. Each must have one id, of its own.
  const made = new Map<number, string>();
  const make = (text: string): number | string => {
    const id = tokenId(text) !== undefined ? idOf(text) : undefined;
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) return `${JSON.stringify(text)} has no id`;
    const other = made.get(id);
    if (other !== undefined && other !== text) return `${JSON.stringify(other)} and ${JSON.stringify(text)} have one id (${id})`;
    made.set(id, text);
    return id;
  };
  const byteIds = new Int32Array(256);
  for (let byte = 0; byte < 256; byte++) {
    const id = make(pre.byteLevel.byte_encoder[byte]);
    if (typeof id === 'string') return id;
    byteIds[byte] = id;
  }
  const pairs = (Array.isArray(model.merges[0]) ? model.merges : (model.merges as string[]).map((merge) => String(merge).split(' ', 2))) as string[][];
  const mergedIds = new Int32Array(pairs.length);
  for (let rank = 0; rank < pairs.length; rank++) {
    const id = make(String(pairs[rank][0]) + String(pairs[rank][1]));
    if (typeof id === 'string') return `merge ${rank}: ${id}`;
    mergedIds[rank] = id;
  }
  // A merge whose part the BPE can never make never applies (and must not be keyed by another string's id).
  // Grouped by left id (a counting sort, ranks ascending within), then each group by right id (a stable sort);
  // a merge listed twice is ranked by its last line, as the engine's Map keeps the last.
  const lefts = new Int32Array(pairs.length).fill(-1);
  const rights = new Int32Array(pairs.length);
  let top = 0;
  for (let rank = 0; rank < pairs.length; rank++) {
    const leftText = String(pairs[rank][0]);
    const rightText = String(pairs[rank][1]);
    const left = idOf(leftText);
    const right = idOf(rightText);
    if (left === undefined || right === undefined || made.get(left) !== leftText || made.get(right) !== rightText) continue;
    lefts[rank] = left;
    rights[rank] = right;
    if (left + 1 > top) top = left + 1;
  }
  const counts = new Int32Array(top + 1);
  for (let rank = 0; rank < pairs.length; rank++) if (lefts[rank] >= 0) counts[lefts[rank] + 1]++;
  for (let left = 0; left < top; left++) counts[left + 1] += counts[left];
  const order = new Int32Array(counts[top]);
  const fill = counts.slice(0, top);
  for (let rank = 0; rank < pairs.length; rank++) if (lefts[rank] >= 0) order[fill[lefts[rank]]++] = rank;
  const firstOf = new Int32Array(top + 1);
  const kept: number[] = [];
  for (let left = 0; left < top; left++) {
    firstOf[left] = kept.length / 3;
    const start = counts[left];
    const end = counts[left + 1];
    // By right id, stably (ranks stay ascending among equal right ids): insertion sort for the many small groups.
    if (end - start > 32) order.set(Array.from(order.subarray(start, end)).sort((x, y) => rights[x] - rights[y]), start);
    else {
      for (let k = start + 1; k < end; k++) {
        const rank = order[k];
        let at = k;
        while (at > start && rights[order[at - 1]] > rights[rank]) { order[at] = order[at - 1]; at--; }
        order[at] = rank;
      }
    }
    for (let k = start; k < end; k++) {
      if (k + 1 < end && rights[order[k + 1]] === rights[order[k]]) continue;
      kept.push(rights[order[k]], order[k], mergedIds[order[k]]);
    }
  }
  firstOf[top] = kept.length / 3;
  const merges = Int32Array.from(kept);
  const ignoreMerges = model.ignore_merges === true;
  const wordIds: number[] = [];
  const wordOffsets: number[] = [0];
  const wordBytes: number[] = [];
  if (ignoreMerges) {
    const byteOf = new Map<string, number>();
    for (let byte = 0; byte < 256; byte++) byteOf.set(pre.byteLevel.byte_encoder[byte], byte);
    const keys = new Set<string>(contents.keys());
    for (const text in words) if (Object.hasOwn(words, text)) keys.add(text);
    for (const text of keys) {
      const bytes: number[] = [];
      for (const char of text) {
        const byte = byteOf.get(char);
        if (byte === undefined) break;
        bytes.push(byte);
      }
      if (bytes.length !== text.length || bytes.length === 0) continue;
      wordIds.push(idOf(text)!);
      for (const byte of bytes) wordBytes.push(byte);
      wordOffsets.push(wordBytes.length);
    }
  }
  return {
    skeleton,
    ignoreMerges,
    byteIds,
    merges,
    firstOf,
    words: { ids: Int32Array.from(wordIds), offsets: Uint32Array.from(wordOffsets), bytes: Uint8Array.from(wordBytes) },
  };
}

/** A piece longer than this is encoded each time, not remembered (pieces are words: a few characters). */
const REMEMBER_UP_TO = 64;
/** Pieces remembered before the memory is emptied: at most ~10 MB on any corpus. */
const REMEMBERED = 1 << 16;

export class ByteLevelEncoder {
  private readonly tokenizer: SkeletonTokenizer;
  private readonly byteLevel: ByteLevelStep;
  /** ByteLevel character (code unit) → its byte's id. */
  private readonly charIds: Int32Array;
  private readonly merges: Int32Array;
  private readonly firstOf: Int32Array;
  private words?: Map<string, number>;
  private readonly remembered = new Map<string, number | number[]>();
  private readonly splitUnnormalized: (text: string) => string[];
  private readonly splitNormalized: (text: string) => string[];
  /** Each step before ByteLevel as a function of one piece (its pre_tokenize_text, or an equal regex split). */
  private readonly stepSplits: Array<(text: string, out: string[], index: number) => void>;
  // Scratch for the merge loop, grown as words need.
  private ids = new Int32Array(64);
  private next = new Int32Array(64);
  private prev = new Int32Array(64);
  private heap = new Float64Array(128);

  constructor(private readonly data: EncoderData, config: Record<string, unknown>, tokenizers: TokenizersModule) {
    this.tokenizer = skeletonTokenizer(tokenizers, data.skeleton, config);
    const pre = preTokenizerSteps(this.tokenizer, data.skeleton.pre_tokenizer);
    if (!pre) throw new Error('the pre-tokenizer does not end with ByteLevel');
    this.byteLevel = pre.byteLevel;
    this.splitUnnormalized = dictionarySplit(this.tokenizer.splitter_unnormalized);
    this.splitNormalized = dictionarySplit(this.tokenizer.splitter_normalized);
    const specs = (data.skeleton.pre_tokenizer as { type?: string; pretokenizers?: unknown[] }).type === 'Sequence' ? (data.skeleton.pre_tokenizer as { pretokenizers: unknown[] }).pretokenizers : [];
    this.stepSplits = pre.steps.flatMap((step, k) => (step ? [stepSplit(step, specs[k])] : []));
    let top = 0;
    for (let byte = 0; byte < 256; byte++) top = Math.max(top, pre.byteLevel.byte_encoder[byte].charCodeAt(0));
    this.charIds = new Int32Array(top + 1).fill(-1);
    for (let byte = 0; byte < 256; byte++) this.charIds[pre.byteLevel.byte_encoder[byte].charCodeAt(0)] = data.byteIds[byte];
    this.merges = data.merges;
    this.firstOf = data.firstOf;
  }

  /** Where the merge (left, right) is in `merges` (its rank at +1, its merged id at +2), or -1. */
  private find(left: number, right: number): number {
    if (left + 1 >= this.firstOf.length) return -1;
    const merges = this.merges;
    let low = this.firstOf[left];
    let high = this.firstOf[left + 1] - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      const value = merges[3 * middle];
      if (value === right) return 3 * middle;
      if (value < right) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  /** `text` as the engine encodes it without added special tokens. */
  encode(text: string): number[] {
    const out: number[] = [];
    const tokenizer = this.tokenizer;
    const added = tokenizer.added_tokens_map;
    const sections = this.splitUnnormalized(text);
    strip(sections, added);
    for (let index = 0; index < sections.length; index++) {
      let section = sections[index];
      if (section.length === 0) continue;
      const token = added.get(section);
      if (token) { out.push(token.id); continue; }
      if (tokenizer.normalizer !== null) section = tokenizer.normalizer(section);
      if (section.length === 0) continue;
      const subsections = this.splitNormalized(section);
      strip(subsections, added);
      for (const subsection of subsections) {
        if (subsection.length === 0) continue;
        const inner = added.get(subsection);
        if (inner) { out.push(inner.id); continue; }
        let pieces = [subsection];
        for (const split of this.stepSplits) {
          const next: string[] = [];
          for (const piece of pieces) split(piece, next, index);
          pieces = next;
        }
        for (const piece of pieces) this.piece(piece, out, index);
      }
    }
    return out;
  }

  /** One pre-token's ids (ByteLevel, then the model), remembered by the pre-token. */
  private piece(piece: string, out: number[], index: number): void {
    const known = this.remembered.get(piece);
    if (known !== undefined) {
      if (typeof known === 'number') out.push(known);
      else for (const id of known) out.push(id);
      return;
    }
    const start = out.length;
    for (const word of this.byteLevel.pre_tokenize_text(piece, { section_index: index })) this.word(word, out);
    if (piece.length <= REMEMBER_UP_TO) {
      if (this.remembered.size >= REMEMBERED) this.remembered.clear();
      this.remembered.set(piece, out.length - start === 1 ? out[start] : out.slice(start));
    }
  }

  /** A ByteLevel word through the BPE (BPE.encode and BPE.bpe of the engine), its ids appended. */
  private word(word: string, out: number[]): void {
    const n = word.length;
    if (n === 0) return;
    if (this.data.ignoreMerges) {
      const id = this.wordIds().get(word);
      if (id !== undefined) { out.push(id); return; }
    }
    if (n === 1) { out.push(this.charId(word, 0)); return; }
    if (n > this.ids.length) {
      let size = this.ids.length;
      while (size < n) size *= 2;
      this.ids = new Int32Array(size);
      this.next = new Int32Array(size);
      this.prev = new Int32Array(size);
      this.heap = new Float64Array(2 * size);
    }
    const { ids, next, prev } = this;
    for (let i = 0; i < n; i++) { ids[i] = this.charId(word, i); next[i] = i + 1; prev[i] = i - 1; }
    next[n - 1] = -1;
    // Candidates keyed rank * n + position: the lowest rank first, then the leftmost (the engine's i / length bias).
    let size = 0;
    const push = (key: number) => {
      let heap = this.heap;
      if (size === heap.length) { const grown = new Float64Array(heap.length * 2); grown.set(heap); this.heap = heap = grown; }
      let at = size++;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (heap[parent] <= key) break;
        heap[at] = heap[parent];
        at = parent;
      }
      heap[at] = key;
    };
    const pop = (): number => {
      const heap = this.heap;
      const top = heap[0];
      const last = heap[--size];
      let at = 0;
      for (;;) {
        let child = 2 * at + 1;
        if (child >= size) break;
        if (child + 1 < size && heap[child + 1] < heap[child]) child++;
        if (heap[child] >= last) break;
        heap[at] = heap[child];
        at = child;
      }
      heap[at] = last;
      return top;
    };
    for (let i = 0; i + 1 < n; i++) {
      const slot = this.find(ids[i], ids[i + 1]);
      if (slot >= 0) push(this.merges[slot + 1] * n + i);
    }
    while (size > 0) {
      const key = pop();
      const i = key % n;
      const rank = (key - i) / n;
      const j = next[i];
      // Stale: the left token was merged away or changed since (a pair's rank is its own, so equal rank is the same pair).
      if (ids[i] < 0 || j < 0) continue;
      const slot = this.find(ids[i], ids[j]);
      if (slot < 0 || this.merges[slot + 1] !== rank) continue;
      ids[i] = this.merges[slot + 2];
      ids[j] = -1;
      next[i] = next[j];
      if (next[j] >= 0) prev[next[j]] = i;
      const before = prev[i];
      if (before >= 0) {
        const left = this.find(ids[before], ids[i]);
        if (left >= 0) push(this.merges[left + 1] * n + before);
      }
      if (next[i] >= 0) {
        const right = this.find(ids[i], ids[next[i]]);
        if (right >= 0) push(this.merges[right + 1] * n + i);
      }
    }
    for (let i = 0; i >= 0; i = next[i]) out.push(ids[i]);
  }

  private charId(word: string, i: number): number {
    const code = word.charCodeAt(i);
    const id = code < this.charIds.length ? this.charIds[code] : -1;
    if (id < 0) throw new Error(`not a ByteLevel character: U+${code.toString(16).padStart(4, '0')}`);
    return id;
  }

  /** ignore_merges: ByteLevel string → id, built on first need. */
  private wordIds(): Map<string, number> {
    if (this.words) return this.words;
    const { ids, offsets, bytes } = this.data.words;
    const encoder = this.byteLevel.byte_encoder;
    const words = new Map<string, number>();
    for (let w = 0; w < ids.length; w++) {
      let text = '';
      for (let b = offsets[w]; b < offsets[w + 1]; b++) text += encoder[bytes[b]];
      words.set(text, ids[w]);
    }
    return (this.words = words);
  }
}

/**
 * DictionarySplitter.split as one regex: the added tokens' texts (the words of its trie), longest first, so at
 * the leftmost position where any matches the longest is taken, as the trie walk takes it; code units, no `u`
 * flag, as the trie walks them. Empty texts never match (the trie's end marker is the empty string, falsy).
 */
function dictionarySplit(splitter: { split(text: string): string[]; trie?: Record<string, unknown> }): (text: string) => string[] {
  const words = new Set<string>();
  const walk = (node: Record<string, unknown>) => {
    for (const key of Object.keys(node)) {
      if (key === 'end') { if (typeof node.end === 'string' && node.end) words.add(node.end); } else walk(node[key] as Record<string, unknown>);
    }
  };
  if (!splitter.trie) return (text) => splitter.split(text);
  walk(splitter.trie);
  if (words.size === 0) return (text) => (text.length ? [text] : []);
  const escape = (word: string) => word.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
  const pattern = new RegExp([...words].sort((a, b) => b.length - a.length).map(escape).join('|'), 'g');
  return (text) => {
    const result: string[] = [];
    let start = 0;
    pattern.lastIndex = 0;
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
      if (match.index > start) result.push(text.slice(start, match.index));
      result.push(match[0]);
      start = pattern.lastIndex;
    }
    if (start < text.length) result.push(text.slice(start));
    return result;
  };
}

/**
 * A pre-tokenizer step on one piece, appending its pieces. A Split that is not inverted and does not remove is
 * regex_split (@huggingface/tokenizers core.ts) on its own pattern: text between matches and each non-empty
 * match, as matchAll finds them (an empty match moves on by one code point); done here with exec on a copy of
 * the pattern, without matchAll's iterator. Any other step is its own pre_tokenize_text.
 */
function stepSplit(step: PreTokenizerStep, spec: unknown): (text: string, out: string[], index: number) => void {
  const config = spec as { type?: string; invert?: boolean; behavior?: string } | undefined;
  const own = (step as unknown as { pattern?: unknown }).pattern;
  if (config?.type === 'Split' && !config.invert && config.behavior?.toLowerCase() !== 'removed' && own instanceof RegExp && own.global) {
    const pattern = new RegExp(own.source, own.flags);
    const unicode = pattern.unicode || pattern.flags.includes('v');
    const digits = own.flags === 'gu' ? GPT4_SPLITS.get(own.source) : undefined;
    return (text, out) => {
      if (digits !== undefined && !NOT_ASCII.test(text)) {
        asciiSplit(text, out, digits);
        return;
      }
      let previous = 0;
      pattern.lastIndex = 0;
      for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
        const found = match[0];
        if (previous < match.index) out.push(text.slice(previous, match.index));
        if (found.length > 0) out.push(found);
        previous = match.index + found.length;
        if (found.length === 0) {
          const at = pattern.lastIndex;
          const pair = unicode && at + 1 < text.length && (text.charCodeAt(at) & 0xfc00) === 0xd800 && (text.charCodeAt(at + 1) & 0xfc00) === 0xdc00;
          pattern.lastIndex = at + (pair ? 2 : 1);
        }
      }
      if (previous < text.length) out.push(text.slice(previous));
    };
  }
  const pre = step as unknown as { pre_tokenize_text(text: string, options: Record<string, unknown>): string[] | string };
  return (text, out, index) => {
    const pieces = pre.pre_tokenize_text(text, { section_index: index });
    if (Array.isArray(pieces)) for (const piece of pieces) out.push(piece);
    else out.push(pieces);
  };
}

/**
 * The split patterns of Qwen2/2.5/3 (one digit at a time) and Llama 3 (up to three), as @huggingface/tokenizers
 * writes them (`\s` as `\p{White_Space}`): on ASCII text, asciiSplit gives their matches without the regex
 * engine (~5× faster; the Unicode property classes make each match cost the engine ~0.3 µs).
 */
export const GPT4_SPLITS = new Map([
  ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\p{White_Space}\\p{L}\\p{N}]+[\\r\\n]*|\\p{White_Space}*[\\r\\n]+|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+", 1],
  ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\p{White_Space}\\p{L}\\p{N}]+[\\r\\n]*|\\p{White_Space}*[\\r\\n]+|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+", 3],
]);
const NOT_ASCII = /[^\x00-\x7f]/;

/** ASCII as those patterns see it: letters (\p{L}), digits (\p{N}), \r and \n, the other White_Space, and the rest. */
const LETTER = 1;
const DIGIT = 2;
const NEWLINE = 3;
const SPACE = 4;
const OTHER = 0;
const ASCII_CLASS = new Uint8Array(128);
for (let code = 0; code < 128; code++) {
  ASCII_CLASS[code] = (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) ? LETTER
    : code >= 0x30 && code <= 0x39 ? DIGIT
      : code === 0x0a || code === 0x0d ? NEWLINE
        : (code >= 0x09 && code <= 0x0d) || code === 0x20 ? SPACE : OTHER;
}

/**
 * The pattern's matches in an ASCII text, appended in order (every character is in one: no text between them).
 * Alternatives in the pattern's order, the first that matches at a place winning: a contraction ('s 't 're 've
 * 'm 'll 'd, either case); an optional character that is not \r, \n, a letter or a digit, then letters; up to
 * `digits` digits; an optional space, then other characters, then any \r \n; white space up to its last \r or
 * \n; white space but its last character when something follows (all of it at the end); white space.
 */
export function asciiSplit(text: string, out: string[], digits: number): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const code = text.charCodeAt(i);
    const kind = ASCII_CLASS[code];
    const next = i + 1 < n ? ASCII_CLASS[text.charCodeAt(i + 1)] : -1;
    let end = -1;
    if (code === 0x27 && i + 1 < n) {
      const a = text.charCodeAt(i + 1) | 0x20;
      if (a === 0x73 || a === 0x74 || a === 0x6d || a === 0x64) end = i + 2;
      else if (i + 2 < n) {
        const b = text.charCodeAt(i + 2) | 0x20;
        if ((a === 0x72 && b === 0x65) || (a === 0x76 && b === 0x65) || (a === 0x6c && b === 0x6c)) end = i + 3;
      }
    }
    if (end >= 0) {
      // a contraction
    } else if (kind === LETTER || (kind !== NEWLINE && kind !== DIGIT && next === LETTER)) {
      end = kind === LETTER ? i + 1 : i + 2;
      while (end < n && ASCII_CLASS[text.charCodeAt(end)] === LETTER) end++;
    } else if (kind === DIGIT) {
      end = i + 1;
      while (end < n && end - i < digits && ASCII_CLASS[text.charCodeAt(end)] === DIGIT) end++;
    } else if (kind === OTHER || (code === 0x20 && next === OTHER)) {
      end = kind === OTHER ? i + 1 : i + 2;
      while (end < n && ASCII_CLASS[text.charCodeAt(end)] === OTHER) end++;
      while (end < n && ASCII_CLASS[text.charCodeAt(end)] === NEWLINE) end++;
    } else {
      // White space: [i, run) with its last \r or \n at `last`.
      let run = i;
      let last = -1;
      while (run < n) {
        const kindAt = ASCII_CLASS[text.charCodeAt(run)];
        if (kindAt === NEWLINE) last = run;
        else if (kindAt !== SPACE) break;
        run++;
      }
      end = last >= 0 ? last + 1 : run === n || run - i === 1 ? run : run - 1;
    }
    out.push(text.slice(i, end));
    i = end;
  }
}

/** Added tokens with lstrip / rstrip trim their neighbours (Tokenizer.encode_text). */
function strip(sections: string[], added: SkeletonTokenizer['added_tokens_map']): void {
  for (let i = 0; i < sections.length; i++) {
    const token = added.get(sections[i]);
    if (!token) continue;
    if (token.lstrip && i > 0) sections[i - 1] = sections[i - 1].trimEnd();
    if (token.rstrip && i < sections.length - 1) sections[i + 1] = sections[i + 1].trimStart();
  }
}

// Cache file: `<digest>.bpe.bin` beside the byte table; 4-byte header length, JSON header (format, the source's
// digest, the skeleton, counts, the payload's digest), then byteIds, firstOf, merges, word ids, word offsets, word
// bytes, each 4-byte aligned, read as views of the file's buffer.
const ENCODER_FORMAT = 'tagmask-bpe-2';

export function writeEncoderCache(file: string, data: EncoderData, source: string): void {
  const header = {
    format: ENCODER_FORMAT, source, skeleton: data.skeleton, ignoreMerges: data.ignoreMerges,
    firstOf: data.firstOf.length, merges: data.merges.length, words: data.words.ids.length, wordBytes: data.words.bytes.length,
  };
  writeCacheFile(file, header, [data.byteIds, data.firstOf, data.merges, data.words.ids, data.words.offsets, data.words.bytes].map(bytesOf));
}

/** The cached data, or undefined when missing, of another format or source, not this user's own, or corrupted. */
export function readEncoderCache(file: string, source: string): EncoderData | undefined {
  const payload = readCacheFile(file, ENCODER_FORMAT, source);
  if (!payload) return undefined;
  const header = payload.header as { skeleton: Record<string, unknown>; ignoreMerges: boolean; firstOf: number; merges: number; words: number; wordBytes: number };
  for (const count of [header.firstOf, header.merges, header.words, header.wordBytes]) if (!(Number.isSafeInteger(count) && count >= 0)) return undefined;
  try {
    const byteIds = payload.int32(256);
    const firstOf = payload.int32(header.firstOf);
    const merges = payload.int32(header.merges);
    const ids = payload.int32(header.words);
    const offsets = payload.uint32(header.words + 1);
    const bytes = payload.bytes(header.wordBytes);
    if (!payload.done || merges.length % 3 !== 0 || firstOf.length === 0 || firstOf[firstOf.length - 1] * 3 !== merges.length || offsets[header.words] !== header.wordBytes) return undefined;
    return { skeleton: header.skeleton, ignoreMerges: header.ignoreMerges, byteIds, firstOf, merges, words: { ids, offsets, bytes } };
  } catch {
    return undefined;
  }
}

/**
 * The encoder for a tokenizer: from the cache where it holds this source's data, else built from the parsed
 * tokenizer.json and cached. undefined (with the reason given to `unsupported`) where only the engine is exact.
 */
export function encoderFor(options: {
  cacheFile: string | undefined; source: string; parse: () => Record<string, unknown>; config: () => Record<string, unknown>;
  tokenizers: () => TokenizersModule; unsupported?: (reason: string) => void;
  /** Told when the data is built (a first use: parsing tokenizer.json takes a moment), and when it is done. */
  say?: (line: string) => void;
}): ByteLevelEncoder | undefined {
  const config = options.config();
  let data = options.cacheFile ? readEncoderCache(options.cacheFile, options.source) : undefined;
  if (!data) {
    const started = Date.now();
    options.say?.(`first encode, reading its merges${options.cacheFile ? ` (cached in ${dirname(options.cacheFile)})` : ''} …`);
    const built = buildEncoderData(options.parse(), config, options.tokenizers());
    if (typeof built === 'string') { options.unsupported?.(built); return undefined; }
    data = built;
    if (options.cacheFile) writeEncoderCache(options.cacheFile, data, options.source);
    options.say?.(`${data.merges.length / 3} merges read in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  return new ByteLevelEncoder(data, config, options.tokenizers());
}
