/**
 * The per-id byte table: the exact bytes each token id stands for, built once per tokenizer.
 *
 * Matching tags on bytes (not ids, not per-token `decode`) is what lets the scanner see `<think>`
 * whether it is one added token (Qwen3) or three text tokens (Llama-3), and keeps offsets right when
 * a character (emoji, CJK) is split across tokens. Per-token `decode` would turn those halves into
 * U+FFFD and is 100–400× slower (docs/measurements.md §2–3).
 */

export const KNOWN = 1;
export const SPECIAL = 2;

export interface ByteTable {
  /** Ids 0..size-1 may be looked up; `flags[id] & KNOWN` says whether the id has a piece at all. */
  size: number;
  /** All pieces back to back; piece of `id` is `pieces.subarray(offsets[id], offsets[id + 1])`. */
  pieces: Uint8Array;
  offsets: Uint32Array;
  flags: Uint8Array;
  /** How vocabulary strings were turned into bytes. */
  encoding: PieceEncoding;
}

export type PieceEncoding = 'byte-level' | 'sentencepiece' | 'plain';

interface AddedTokenJson { id: number; content: string; special?: boolean }
export interface TokenizerJson {
  model: { type?: string; vocab: Record<string, number> | Array<[string, number]>; byte_fallback?: boolean };
  added_tokens?: AddedTokenJson[];
  pre_tokenizer?: unknown;
  decoder?: unknown;
  normalizer?: unknown;
}

/** GPT-2's byte-to-unicode map, inverted: code point of a vocab character → the byte it encodes (-1: none). */
function byteLevelDecoder(): Int16Array {
  const decoder = new Int16Array(256 + 68).fill(-1);
  let next = 256;
  for (let byte = 0; byte < 256; byte++) {
    const printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
    decoder[printable ? byte : next++] = byte;
  }
  return decoder;
}

/** Does any component (pre-tokenizer, decoder, nested `Sequence`s) have this `type`? */
function mentionsType(component: unknown, type: string): boolean {
  if (!component || typeof component !== 'object') return false;
  const record = component as Record<string, unknown>;
  if (record.type === type) return true;
  for (const key of ['pretokenizers', 'decoders', 'normalizers']) {
    const list = record[key];
    if (Array.isArray(list) && list.some((item) => mentionsType(item, type))) return true;
  }
  return false;
}

export function pieceEncodingOf(json: TokenizerJson): PieceEncoding {
  if (mentionsType(json.pre_tokenizer, 'ByteLevel') || mentionsType(json.decoder, 'ByteLevel')) return 'byte-level';
  if (json.model.byte_fallback || mentionsType(json.decoder, 'Metaspace') || mentionsType(json.decoder, 'ByteFallback')
    || mentionsType(json.pre_tokenizer, 'Metaspace')) return 'sentencepiece';
  return 'plain';
}

const utf8 = new TextEncoder();
const SENTENCEPIECE_SPACE = '\u2581';
const BYTE_FALLBACK = /^<0x([0-9A-Fa-f]{2})>$/;

function vocabEntries(json: TokenizerJson): Array<[string, number]> {
  const vocab = json.model.vocab as unknown;
  if (Array.isArray(vocab)) {
    // Unigram models list [piece, score] pairs; the id is the position.
    return vocab.map((entry, id) => {
      if (!Array.isArray(entry) || typeof entry[0] !== 'string') throw new Error(`model.vocab[${id}]: expected [piece, score]`);
      return [entry[0], id];
    });
  }
  if (typeof vocab !== 'object' || vocab === null) throw new Error('model.vocab: expected an object of piece → id, or a list of [piece, score]');
  const entries = Object.entries(vocab as Record<string, unknown>);
  for (const [piece, id] of entries) {
    if (!isId(id)) throw new Error(`model.vocab[${JSON.stringify(piece)}]: id ${JSON.stringify(id)} is not an integer from 0 to ${MAX_ID}`);
  }
  return entries as Array<[string, number]>;
}

/** Ids index typed arrays sized by the largest id: they must be small non-negative integers. */
const MAX_ID = 2 ** 31 - 2;
const isId = (id: unknown): id is number => typeof id === 'number' && Number.isInteger(id) && id >= 0 && id <= MAX_ID;

/**
 * Tables are as long as the largest id. Real vocabularies are dense (gaps only among added tokens, or a
 * toy vocabulary of a few hundred ids): a few ids spread over billions would allocate gigabytes for nothing.
 */
function checkDensity(size: number, count: number): void {
  if (size > 16 * count + (1 << 16)) throw new Error(`ids are sparse: ${count} tokens spread over ids 0..${size - 1}; such a table is not built`);
}

function checkJson(json: TokenizerJson): void {
  if (!json || typeof json !== 'object' || !json.model || typeof json.model !== 'object' || !json.model.vocab) {
    throw new Error('not a Hugging Face tokenizer.json: no model.vocab');
  }
}

function addedTokens(json: TokenizerJson): AddedTokenJson[] {
  const added = (json.added_tokens ?? []) as unknown[];
  if (!Array.isArray(added)) throw new Error('added_tokens: expected a list');
  added.forEach((token, index) => {
    const { id, content } = (token ?? {}) as { id?: unknown; content?: unknown };
    if (!isId(id)) throw new Error(`added_tokens[${index}]: id ${JSON.stringify(id)} is not an integer from 0 to ${MAX_ID}`);
    if (typeof content !== 'string') throw new Error(`added_tokens[${index}]: content must be a string`);
  });
  return added as AddedTokenJson[];
}

/** Build the byte table from a parsed `tokenizer.json`. */
export function buildByteTable(json: TokenizerJson): ByteTable {
  checkJson(json);
  const encoding = pieceEncodingOf(json);
  const entries = vocabEntries(json);
  const added = addedTokens(json);
  let size = 0;
  for (const [, id] of entries) if (id + 1 > size) size = id + 1;
  for (const token of added as AddedTokenJson[]) if (token.id + 1 > size) size = token.id + 1;
  checkDensity(size, entries.length + added.length);

  // Every piece's bytes are written once into one scratch buffer (in file order), then copied in id order:
  // no array per piece (a 151,669-piece vocabulary built in a few tens of ms, not hundreds).
  let capacity = 0;
  for (const [piece] of entries) capacity += 3 * piece.length;
  for (const token of added as AddedTokenJson[]) capacity += 3 * token.content.length;
  const scratch = new Uint8Array(capacity);
  const start = new Int32Array(size);
  const length = new Int32Array(size);
  const flags = new Uint8Array(size);
  const decoder = encoding === 'byte-level' ? byteLevelDecoder() : undefined;
  let at = 0;
  for (const [piece, id] of entries) {
    start[id] = at;
    at = writePiece(piece, encoding, decoder, scratch, at);
    length[id] = at - start[id];
    flags[id] = KNOWN;
  }
  // Added tokens are matched on their content before the model runs, so their bytes are the content itself.
  for (const token of added as AddedTokenJson[]) {
    start[token.id] = at;
    at += utf8.encodeInto(token.content, scratch.subarray(at)).written;
    length[token.id] = at - start[token.id];
    flags[token.id] = KNOWN | (token.special ? SPECIAL : 0);
  }
  return inIdOrder(size, scratch, start, length, flags, encoding);
}

/** The table from each id's bytes in `scratch` (at `start[id]`, `length[id]` long), copied in id order. */
function inIdOrder(size: number, scratch: Uint8Array, start: Int32Array, length: Int32Array, flags: Uint8Array, encoding: PieceEncoding): ByteTable {
  const offsets = new Uint32Array(size + 1);
  let total = 0;
  for (let id = 0; id < size; id++) {
    offsets[id] = total;
    total += length[id];
  }
  offsets[size] = total;
  const pieces = new Uint8Array(total);
  for (let id = 0; id < size; id++) {
    for (let from = start[id], to = offsets[id], end = to + length[id]; to < end;) pieces[to++] = scratch[from++];
  }
  return { size, pieces, offsets, flags, encoding };
}

/** Write the bytes `piece` stands for into `out` at `at`; returns where they end. */
function writePiece(piece: string, encoding: PieceEncoding, decoder: Int16Array | undefined, out: Uint8Array, at: number): number {
  if (encoding === 'byte-level') {
    const from = at;
    for (let i = 0; i < piece.length; i++) {
      const code = piece.charCodeAt(i);
      const byte = code < decoder!.length ? decoder![code] : -1;
      // A vocab string outside the byte alphabet is kept as its UTF-8 (some files mix in plain added text).
      if (byte < 0) return from + utf8.encodeInto(piece, out.subarray(from)).written;
      out[at++] = byte;
    }
    return at;
  }
  if (encoding === 'sentencepiece') {
    const fallback = BYTE_FALLBACK.exec(piece);
    if (fallback) { out[at] = parseInt(fallback[1], 16); return at + 1; }
    return at + utf8.encodeInto(piece.replaceAll(SENTENCEPIECE_SPACE, ' '), out.subarray(at)).written;
  }
  return at + utf8.encodeInto(piece, out.subarray(at)).written;
}

/** The bytes of one id (a view, not a copy). */
export function pieceOf(table: ByteTable, id: number): Uint8Array {
  return table.pieces.subarray(table.offsets[id], table.offsets[id + 1]);
}

/** Exact text of a token range; split characters are joined before decoding, never turned into U+FFFD halves. */
export function textOf(table: ByteTable, ids: ArrayLike<number>, start = 0, end = ids.length): string {
  let length = 0;
  for (let i = start; i < end; i++) length += table.offsets[ids[i] + 1] - table.offsets[ids[i]];
  const bytes = new Uint8Array(length);
  let at = 0;
  for (let i = start; i < end; i++) {
    const piece = pieceOf(table, ids[i]);
    bytes.set(piece, at);
    at += piece.length;
  }
  return new TextDecoder().decode(bytes);
}

/**
 * The entries of a vocabulary object `{"piece": id, …}` read from tokenizer.json's bytes, in file order
 * (VocabReader): each key as written between its quotes, the keys back to back in `bytes`, and each id.
 */
export interface VocabEntries {
  bytes: Uint8Array;
  count: number;
  /** Entry k's id; undefined while `ordered` (entry k's id is k: not kept, fresh memory is slow to touch). */
  ids?: Int32Array;
  /** Entry k's key is bytes [keyStarts[k], keyEnds[k]). */
  keyStarts: Int32Array;
  keyEnds: Int32Array;
  /** The entries whose key has a backslash (rare: read with JSON.parse), ascending. */
  escaped: number[];
  /** Are the ids 0, 1, 2, … in file order? (Tokenizers write them so: the pieces are then in id order as written.) */
  ordered: boolean;
}

/** JSON's whitespace (space, line feed, carriage return, tab). */
export const isJsonSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * Reads a vocabulary object, from just after its `{`, in one pass and in pieces (the file streams past:
 * source-bytes.ts): no string or property per piece (JSON.parse of a 200,000-key object and Object.entries of it
 * were most of a cold start). Each `read` takes the complete entries of what it is given; an entry cut by the end
 * is left for the next call, given again from its start. `failed` wherever the object is not a flat object of
 * strings to plain integers up to MAX_ID, written as JSON writes it (a sign, fraction, exponent or leading zero, a
 * raw control character in a key, a trailing comma): the whole-file path then says what it says.
 */
export class VocabReader {
  /** Where the `}` is, in the bytes of the call that read it; -1 before. */
  close = -1;
  failed = false;
  private keys: Uint8Array;
  private used = 0;
  private keyStarts: Int32Array;
  private ids: Int32Array | undefined;
  private count = 0;
  private ordered = true;
  private readonly escaped: number[] = [];
  private first = true;

  /** `bytes`: what the object may span at most (the arrays are sized from it; pages never written cost nothing). */
  constructor(bytes: number) {
    // Entries run ~15-25 bytes, keys ~5-10; fewer than 12 and 3 apiece are rare. Growing costs more than sizing.
    this.keyStarts = new Int32Array(Math.max(1024, Math.ceil(bytes / 12)) + 1);
    this.keys = new Uint8Array(Math.max(4096, Math.ceil(bytes / 3)));
  }

  /** Reads from `from` (after the `{`, or where the last call stopped) to `end`; returns where it stopped. */
  read(bytes: Uint8Array, from: number, end: number): number {
    let at = from;
    for (;;) {
      while (at < end && isJsonSpace(bytes[at])) at++;
      if (at >= end) return at;
      const entry = at;
      if (this.first && bytes[at] === 0x7d) { this.close = at; return at; }
      if (bytes[at] !== 0x22) return this.fail();
      // The key's bytes as written, copied as they are read.
      const keyStart = this.used;
      let keys = this.keys;
      let used = keyStart;
      let backslash = false;
      let control = false;
      for (at++; at < end; at++) {
        const c = bytes[at];
        if (c === 0x22) break;
        if (used + 2 > keys.length) keys = this.keys = grownBytes(keys, used + 2);
        if (c === 0x5c) { backslash = true; keys[used++] = c; if (++at >= end) break; keys[used++] = bytes[at]; continue; }
        if (c < 0x20) control = true;
        keys[used++] = c;
      }
      // Cut by the end: read again from the entry's start next time.
      if (at >= end) return entry;
      // A raw control character is not JSON: the whole-file path says so.
      if (control) return this.fail();
      at++;
      while (at < end && isJsonSpace(bytes[at])) at++;
      if (at >= end) return entry;
      if (bytes[at++] !== 0x3a) return this.fail();
      while (at < end && isJsonSpace(bytes[at])) at++;
      if (at >= end) return entry;
      // A plain integer (JSON has no leading zeros; a sign, fraction or exponent is left to the whole-file path).
      let c = bytes[at];
      if (!(c >= 0x30 && c <= 0x39)) return this.fail();
      let id = c - 0x30;
      if (++at >= end) return entry;
      c = bytes[at];
      if (id === 0 && c >= 0x30 && c <= 0x39) return this.fail();
      while (c >= 0x30 && c <= 0x39) {
        id = id * 10 + c - 0x30;
        if (id > MAX_ID) return this.fail();
        if (++at >= end) return entry;
        c = bytes[at];
      }
      while (at < end && isJsonSpace(bytes[at])) at++;
      if (at >= end) return entry;
      const next = bytes[at];
      if (next !== 0x2c && next !== 0x7d) return this.fail();
      // The entry is complete.
      const count = this.count;
      if (count + 1 >= this.keyStarts.length) { this.keyStarts = grown(this.keyStarts); if (this.ids) this.ids = grown(this.ids); }
      if (backslash) this.escaped.push(count);
      if (id !== count && this.ordered) {
        this.ordered = false;
        this.ids = new Int32Array(this.keyStarts.length);
        for (let k = 0; k < count; k++) this.ids[k] = k;
      }
      if (this.ids) this.ids[count] = id;
      this.keyStarts[count] = keyStart;
      this.used = used;
      this.count = count + 1;
      this.first = false;
      if (next === 0x7d) { this.close = at; return at; }
      at++;
    }
  }

  private fail(): number {
    this.failed = true;
    return -1;
  }

  /** What was read, once the `}` was. */
  entries(): VocabEntries {
    const { keys, count, keyStarts, ids, escaped, ordered } = this;
    keyStarts[count] = this.used;
    return { bytes: keys, count, ids, keyStarts, keyEnds: keyStarts.subarray(1, count + 1), escaped, ordered };
  }
}

/** The vocabulary object whose `{` is at `open`, read whole (VocabReader): its entries and where its `}` is. */
export function readVocabObject(bytes: Uint8Array, open: number): { entries: VocabEntries; close: number } | undefined {
  if (bytes[open] !== 0x7b) return undefined;
  const reader = new VocabReader(bytes.length - open);
  reader.read(bytes, open + 1, bytes.length);
  return reader.failed || reader.close < 0 ? undefined : { entries: reader.entries(), close: reader.close };
}

/**
 * The byte table of a tokenizer.json whose `model.vocab` object was left out of `json` and read from the file's
 * bytes (readVocabObject). The bytes must be valid UTF-8 (the caller checks). Undefined wherever the result could
 * differ from `buildByteTable` on the whole file, which the caller then uses: two pieces with one id, the same
 * piece twice (JSON.parse keeps the last).
 */
export function byteTableFromVocab(json: TokenizerJson, vocab: VocabEntries): ByteTable | undefined {
  checkJson(json);
  const encoding = pieceEncodingOf(json);
  const added = addedTokens(json);
  const { bytes, count, ids, keyStarts, keyEnds, escaped, ordered } = vocab;
  // Escaped keys as JSON.parse reads them (`"\""`, `"\\"`, `"\u00…"`), written as the object path writes them.
  const unescaped: string[] = [];
  for (const k of escaped) {
    try {
      unescaped.push(JSON.parse(`"${Buffer.from(bytes.buffer, bytes.byteOffset + keyStarts[k], keyEnds[k] - keyStarts[k]).toString('utf8')}"`) as string);
    } catch {
      return undefined;
    }
  }
  if (hasPieceTwice(vocab, unescaped.map((piece) => utf8.encode(piece)))) return undefined;
  let size = 0;
  if (ids) { for (let k = 0; k < count; k++) if (ids[k] + 1 > size) size = ids[k] + 1; } else size = count;
  for (const token of added) if (token.id + 1 > size) size = token.id + 1;
  checkDensity(size, count + added.length);

  // Every piece written once, in file order. No piece is longer than its key (an escape is longer than what it
  // stands for, a byte-level character is one byte, ▁ three bytes for a space), so the keys' bytes are room enough.
  let room = 0;
  for (let k = 0; k < count; k++) room += keyEnds[k] - keyStarts[k];
  for (const token of added) room += 3 * token.content.length;
  const scratch = new Uint8Array(room + 16);
  const decoder = encoding === 'byte-level' ? byteLevelDecoder() : undefined;
  // Where each piece starts in scratch, by entry; as ids 0, 1, 2, … are the entries in order, the table's offsets.
  const positions = new Uint32Array((ordered ? size : count) + 1);
  let used = 0;
  for (let k = 0, e = 0; k < count; k++) {
    positions[k] = used;
    if (e < escaped.length && escaped[e] === k) used = writePiece(unescaped[e++], encoding, decoder, scratch, used);
    else used = writeRawPiece(bytes, keyStarts[k], keyEnds[k], encoding, decoder, scratch, used);
  }
  positions[count] = used;
  if (ordered) {
    const table = inOrder(size, count, scratch, positions, used, added, encoding);
    if (table) return table;
  }
  // Else copied into id order.
  const start = new Int32Array(size);
  const length = new Int32Array(size);
  const flags = new Uint8Array(size);
  for (let k = 0; k < count; k++) {
    const id = ids ? ids[k] : k;
    // Two pieces with one id: which one the object keeps depends on its key order (integer-like keys first), left to it.
    if (flags[id]) return undefined;
    start[id] = positions[k];
    length[id] = positions[k + 1] - positions[k];
    flags[id] = KNOWN;
  }
  // Added tokens are matched on their content before the model runs, so their bytes are the content itself.
  for (const token of added) {
    start[token.id] = used;
    used += utf8.encodeInto(token.content, scratch.subarray(used)).written;
    length[token.id] = used - start[token.id];
    flags[token.id] = KNOWN | (token.special ? SPECIAL : 0);
  }
  return inIdOrder(size, scratch, start, length, flags, encoding);
}

/**
 * The table without copying, where the vocabulary's ids are 0, 1, 2, … in file order (its pieces are then written
 * in id order, `offsets` at their starts) and each added token either comes next in id order or has the bytes its
 * id already has (Gemma's and Llama 2's `<unused…>`, `<s>`): what inIdOrder would give. Else undefined.
 */
function inOrder(size: number, count: number, scratch: Uint8Array, offsets: Uint32Array, used: number, added: AddedTokenJson[], encoding: PieceEncoding): ByteTable | undefined {
  // First whether they fit, then the table: nothing half done when they do not.
  let next = count;
  const appended: string[] = [];
  for (const token of added) {
    if (token.id === next) { appended.push(token.content); next++; continue; }
    if (token.id > next) return undefined;
    if (token.id >= count) { if (appended[token.id - count] !== token.content) return undefined; continue; }
    const content = utf8.encode(token.content);
    const piece = scratch.subarray(offsets[token.id], offsets[token.id + 1]);
    if (content.length !== piece.length || !content.every((byte, i) => byte === piece[i])) return undefined;
  }
  if (next !== size) return undefined;
  const flags = new Uint8Array(size).fill(KNOWN, 0, count);
  for (let id = count; id < size; id++) {
    offsets[id] = used;
    used += utf8.encodeInto(appended[id - count], scratch.subarray(used)).written;
  }
  offsets[size] = used;
  for (const token of added) flags[token.id] = KNOWN | (token.special ? SPECIAL : 0);
  return { size, pieces: scratch.subarray(0, used), offsets, flags, encoding };
}

/**
 * Does a piece come twice among the keys (equal strings have equal UTF-8 bytes)? Open addressing over FNV-1a
 * hashes of each key's bytes (raw: its range of the file; escaped: `unescaped`, in the order of `escaped`), sized
 * once for the count, at most half full.
 */
function hasPieceTwice(vocab: VocabEntries, unescaped: Uint8Array[]): boolean {
  const { bytes, count, keyStarts, keyEnds, escaped } = vocab;
  const slots = new Int32Array(2 ** Math.ceil(Math.log2(2 * count + 2)));
  const mask = slots.length - 1;
  // The escaped entries' bytes, for comparing with them when they come up again.
  const kept = new Map<number, Uint8Array>();
  escaped.forEach((k, index) => kept.set(k, unescaped[index]));
  for (let k = 0, e = 0; k < count; k++) {
    let source: Uint8Array = bytes;
    let from = keyStarts[k];
    let to = keyEnds[k];
    if (e < escaped.length && escaped[e] === k) { source = unescaped[e++]; from = 0; to = source.length; }
    let hash = 0x811c9dc5;
    for (let i = from; i < to; i++) hash = Math.imul(hash ^ source[i], 0x01000193);
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[slot];
      if (entry === 0) { slots[slot] = k + 1; break; }
      const other = entry - 1;
      const otherSource = kept.get(other) ?? bytes;
      const otherFrom = otherSource === bytes ? keyStarts[other] : 0;
      const otherTo = otherSource === bytes ? keyEnds[other] : otherSource.length;
      if (otherTo - otherFrom !== to - from) continue;
      let same = true;
      for (let i = 0; i < to - from; i++) if (otherSource[otherFrom + i] !== source[from + i]) { same = false; break; }
      if (same) return true;
    }
  }
  return false;
}

function grownBytes(array: Uint8Array, need: number): Uint8Array {
  const bigger = new Uint8Array(Math.max(need, array.length * 2));
  bigger.set(array);
  return bigger;
}

function grown(array: Int32Array): Int32Array {
  const bigger = new Int32Array(array.length * 2);
  bigger.set(array);
  return bigger;
}

/**
 * What `writePiece` writes for a piece whose JSON string has no escape, from its UTF-8 bytes [from, to) in `bytes`
 * (valid UTF-8, so they are the string's own encoding).
 */
function writeRawPiece(bytes: Uint8Array, from: number, to: number, encoding: PieceEncoding, decoder: Int16Array | undefined, out: Uint8Array, at: number): number {
  if (encoding === 'byte-level') {
    const begin = at;
    for (let i = from; i < to; i++) {
      const c = bytes[i];
      let code = c;
      // Two-byte sequences cover U+0080..U+07FF, which holds all of the byte alphabet (up to U+0143).
      if (c >= 0x80) code = c >= 0xc2 && c <= 0xdf && i + 1 < to ? ((c & 0x1f) << 6) | (bytes[++i] & 0x3f) : 0xffff;
      const byte = code < decoder!.length ? decoder![code] : -1;
      // A character outside the byte alphabet: the whole piece as its UTF-8, as writePiece does.
      if (byte < 0) { out.set(bytes.subarray(from, to), begin); return begin + to - from; }
      out[at++] = byte;
    }
    return at;
  }
  if (encoding === 'sentencepiece') {
    // `<0xAB>`: that byte (the regular expression BYTE_FALLBACK, on bytes).
    if (to - from === 6 && bytes[from] === 0x3c && bytes[from + 1] === 0x30 && bytes[from + 2] === 0x78 && bytes[from + 5] === 0x3e && isHex(bytes[from + 3]) && isHex(bytes[from + 4])) {
      out[at] = (hexValue(bytes[from + 3]) << 4) | hexValue(bytes[from + 4]);
      return at + 1;
    }
    // U+2581 (E2 96 81) is a space.
    for (let i = from; i < to; i++) {
      if (bytes[i] === 0xe2 && bytes[i + 1] === 0x96 && bytes[i + 2] === 0x81 && i + 2 < to) { out[at++] = 0x20; i += 2; } else out[at++] = bytes[i];
    }
    return at;
  }
  out.set(bytes.subarray(from, to), at);
  return at + to - from;
}

const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const hexValue = (c: number) => (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10);
