/**
 * Special tokens matched by id: the scanner's view of a byte table.
 *
 * A grammar literal whose text holds a *special* added token of the tokenizer (`"special": true`:
 * `<|im_end|>`, `<|eot_id|>`, `<|start|>`) must match only that token id. The same characters spelled out
 * as ordinary tokens (a user quoting `<|im_end|>`, content encoded with `split_special_tokens`) are text.
 *
 * The byte automata stay byte automata (one load per byte, 256 columns): in the scanner's view each special
 * token the grammar names is one *sentinel* byte, and no ordinary token can produce a sentinel, because the
 * sentinels are bytes that occur in no literal's text and every ordinary occurrence of one is rewritten to
 * a *neutral* byte that also occurs in no literal. For an Aho–Corasick automaton every byte outside its
 * literals sends each state back to the root, so that rewrite changes nothing for ordinary text: the scan is
 * exactly the byte scan it was, except that a special token now matches only itself. Special tokens no
 * literal names become the neutral byte (they are never text). Ordinary pieces keep their length, so a
 * position (token, offset) means the same in both views, except inside a special token, which is one byte
 * here: a literal can only start or end at its edges, never inside it.
 *
 * Sentinels are taken from bytes outside ASCII, first those that never occur in UTF-8 (0xF5–0xFF, 0xC0,
 * 0xC1), so the rewrite touches only tokens that hold broken or rare UTF-8 bytes, and never a byte the
 * scanner reads for its own sake (newline, space, `>`).
 */
import { KNOWN, SPECIAL, pieceOf, type ByteTable } from './table.ts';

const utf8 = new TextEncoder();
const decoder = new TextDecoder();

const specialsByTable = new WeakMap<ByteTable, ReadonlyMap<string, number>>();

/** The tokenizer's special added tokens: content → id. Built once per table (a pass over the vocabulary) and shared: read only. */
export function specialTokens(table: ByteTable): ReadonlyMap<string, number> {
  let out = specialsByTable.get(table);
  if (out) return out;
  const found = new Map<string, number>();
  for (let id = 0; id < table.size; id++) {
    if ((table.flags[id] & (KNOWN | SPECIAL)) === (KNOWN | SPECIAL)) found.set(decoder.decode(pieceOf(table, id)), id);
  }
  specialsByTable.set(table, (out = found));
  return out;
}

/** A literal cut at special tokens: text parts (matched on bytes) and special token contents (matched by id). */
export type LiteralPart = { text: string } | { special: string; id: number };

/** Cut `literal` at the special tokens it holds, leftmost first, the longest where several start at one place. */
export function cutLiteral(literal: string, specials: ReadonlyMap<string, number>): LiteralPart[] {
  const parts: LiteralPart[] = [];
  let text = '';
  let at = 0;
  const candidates = [...specials.keys()].filter((content) => content.length > 0 && literal.includes(content));
  while (at < literal.length) {
    let best = '';
    for (const content of candidates) if (content.length > best.length && literal.startsWith(content, at)) best = content;
    if (best) {
      if (text) { parts.push({ text }); text = ''; }
      parts.push({ special: best, id: specials.get(best)! });
      at += best.length;
    } else {
      text += literal[at];
      at++;
    }
  }
  if (text) parts.push({ text });
  return parts;
}

export interface ScanView {
  /** The byte table the scanner walks: same ids and sizes, special tokens as one sentinel (or neutral) byte. */
  table: ByteTable;
  /** A literal in the scanner's bytes. */
  encode(literal: string): Uint8Array;
  /** Special token id → its sentinel byte, for the special tokens the literals name. */
  sentinels: Map<number, number>;
  neutral: number;
}

/** Bytes the rewrite may use: outside ASCII, those that never occur in UTF-8 first. */
const CANDIDATE_BYTES: number[] = (() => {
  const never = [0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7, 0xf6, 0xf5, 0xc1, 0xc0];
  const rest: number[] = [];
  for (let byte = 0x80; byte < 0x100; byte++) if (!never.includes(byte)) rest.push(byte);
  return [...never, ...rest];
})();

/**
 * Whether the special tokens `literals` name fit in the bytes free to stand for them (one per special token,
 * plus the neutral byte): else the index of the first literal that names one too many, with the counts.
 * buildScanView refuses such a grammar; `grammar check --tokenizer` reports it at that literal.
 */
export function sentinelOverflow(table: ByteTable, literals: readonly string[]): { index: number; named: number; free: number } | undefined {
  const specials = specialTokens(table);
  if (specials.size === 0) return undefined;
  const textBytes = new Uint8Array(256);
  const namedAt: number[] = [];
  const named = new Set<number>();
  literals.forEach((literal, index) => {
    for (const part of cutLiteral(literal, specials)) {
      if ('text' in part) for (const byte of utf8.encode(part.text)) textBytes[byte] = 1;
      else if (!named.has(part.id)) { named.add(part.id); namedAt.push(index); }
    }
  });
  const free = CANDIDATE_BYTES.filter((byte) => !textBytes[byte]).length;
  if (free >= named.size + 1) return undefined;
  return { index: namedAt[Math.max(0, free - 1)], named: named.size, free };
}

/**
 * The scan tables built per vocabulary, by the sentinel each named special token gets: grammars naming the same
 * special tokens (most of the bundled ones: `tagmask detect` binds all of them) share one copy of the pieces.
 */
const scanTables = new WeakMap<ByteTable, Map<string, ByteTable>>();
const SCAN_TABLES_KEPT = 16;

function scanTableOf(table: ByteTable, sentinels: Map<number, number>, neutral: number): ByteTable {
  const isSentinel = new Uint8Array(256);
  for (const byte of sentinels.values()) isSentinel[byte] = 1;
  const { size, offsets, pieces, flags } = table;
  const scanOffsets = new Uint32Array(size + 1);
  let total = 0;
  for (let id = 0; id < size; id++) {
    scanOffsets[id] = total;
    total += flags[id] & SPECIAL ? 1 : offsets[id + 1] - offsets[id];
  }
  scanOffsets[size] = total;
  const scanPieces = new Uint8Array(total);
  // Ordinary pieces a run at a time (one copy between special tokens: this runs on every start, and a byte loop
  // over the whole vocabulary cost ~20 ms of it), then each sentinel byte in them becomes the neutral byte,
  // then each special token's own byte.
  let run = 0;
  for (let id = 0; id <= size; id++) {
    if (id < size && (flags[id] & SPECIAL) === 0) continue;
    if (run < id) scanPieces.set(pieces.subarray(offsets[run], offsets[id]), scanOffsets[run]);
    run = id + 1;
  }
  const bytes = Buffer.from(scanPieces.buffer, scanPieces.byteOffset, scanPieces.length);
  for (let byte = 0; byte < 256; byte++) {
    if (!isSentinel[byte]) continue;
    for (let at = bytes.indexOf(byte); at >= 0; at = bytes.indexOf(byte, at + 1)) bytes[at] = neutral;
  }
  for (let id = 0; id < size; id++) if (flags[id] & SPECIAL) scanPieces[scanOffsets[id]] = sentinels.get(id) ?? neutral;
  return { ...table, pieces: scanPieces, offsets: scanOffsets };
}

/**
 * The scanner's view of `table` for a grammar whose literals are `literals`. Without special tokens in the
 * tokenizer, the table itself (nothing to tell apart).
 */
export function buildScanView(table: ByteTable, literals: Iterable<string>): ScanView {
  const specials = specialTokens(table);
  if (specials.size === 0) {
    return { table, encode: (literal) => utf8.encode(literal), sentinels: new Map(), neutral: -1 };
  }
  const cuts = new Map<string, LiteralPart[]>();
  const textBytes = new Uint8Array(256);
  const named: number[] = [];
  for (const literal of literals) {
    if (cuts.has(literal)) continue;
    const parts = cutLiteral(literal, specials);
    cuts.set(literal, parts);
    for (const part of parts) {
      if ('text' in part) for (const byte of utf8.encode(part.text)) textBytes[byte] = 1;
      else if (!named.includes(part.id)) named.push(part.id);
    }
  }
  const free = CANDIDATE_BYTES.filter((byte) => !textBytes[byte]);
  if (free.length < named.length + 1) {
    throw new Error(`the grammar's literals name ${named.length} special tokens, but only ${free.length} bytes are free to stand for them`);
  }
  const neutral = free[0];
  const sentinels = new Map<number, number>(named.map((id, index) => [id, free[index + 1]]));
  const key = `${neutral}|${[...sentinels].map(([id, byte]) => `${id}:${byte}`).join(',')}`;
  let views = scanTables.get(table);
  if (!views) scanTables.set(table, (views = new Map()));
  let scanTable = views.get(key);
  if (!scanTable) {
    scanTable = scanTableOf(table, sentinels, neutral);
    if (views.size >= SCAN_TABLES_KEPT) views.delete(views.keys().next().value!);
    views.set(key, scanTable);
  }
  const encode = (literal: string): Uint8Array => {
    const parts = cuts.get(literal) ?? cutLiteral(literal, specials);
    const out: number[] = [];
    for (const part of parts) {
      if ('text' in part) out.push(...utf8.encode(part.text));
      else {
        const sentinel = sentinels.get(part.id);
        if (sentinel === undefined) throw new Error(`literal ${JSON.stringify(literal)} was not declared to the scan view`);
        out.push(sentinel);
      }
    }
    return Uint8Array.from(out);
  };
  return { table: scanTable, encode, sentinels, neutral };
}
