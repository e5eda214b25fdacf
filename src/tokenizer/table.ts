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

/** Build the byte table from a parsed `tokenizer.json`. */
export function buildByteTable(json: TokenizerJson): ByteTable {
  if (!json || typeof json !== 'object' || !json.model || typeof json.model !== 'object' || !json.model.vocab) {
    throw new Error('not a Hugging Face tokenizer.json: no model.vocab');
  }
  const encoding = pieceEncodingOf(json);
  const entries = vocabEntries(json);
  const added = (json.added_tokens ?? []) as unknown[];
  if (!Array.isArray(added)) throw new Error('added_tokens: expected a list');
  added.forEach((token, index) => {
    const { id, content } = (token ?? {}) as { id?: unknown; content?: unknown };
    if (!isId(id)) throw new Error(`added_tokens[${index}]: id ${JSON.stringify(id)} is not an integer from 0 to ${MAX_ID}`);
    if (typeof content !== 'string') throw new Error(`added_tokens[${index}]: content must be a string`);
  });
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
