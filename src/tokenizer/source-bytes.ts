/**
 * tokenizer.json read for a cold start (issue 21 goal 5): in 256 KiB reads, each hashed as it comes, the vocabulary
 * read entry by entry as it streams past (only its keys kept) and the contents of the merges array left out. The
 * byte table never reads the merges, and they are most of a large file (gpt-oss: 22 of its 26 MB). Reading the whole file into memory the process never touched
 * cost more than anything done with it on the VMs we measured (page faults: 26 MB read at once 160–180 ms, in
 * reads that reuse the same pages 10–30 ms), and hashing one piece at a time stays in the processor's cache.
 */
import { isUtf8 } from 'node:buffer';
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { isJsonSpace, VocabReader, type VocabEntries } from './table.ts';

// Reads reuse this much memory while the merges stream past (a smaller piece is fewer fresh pages; 256 KiB reads
// cost no more than 1 MiB ones in system calls).
const READ_SIZE = 1 << 18;
const MERGES_KEY = Buffer.from('"merges"');
const VOCAB_KEY = Buffer.from('"vocab"');

export interface SourceBytes {
  /**
   * The file's bytes, or, where `mergesLeftOut`, the file with everything between the `[` and the `]` of its first
   * `"merges": [...]` left out (`"merges": []`); where `vocab`, also the contents of its first `"vocab": {...}`
   * (`"vocab": {}`).
   */
  bytes: Buffer;
  mergesLeftOut: boolean;
  /** The entries of the vocabulary left out, read as they streamed past. */
  vocab?: VocabEntries;
  /** Is the whole file valid UTF-8 (what was left out too)? */
  utf8: boolean;
}

/**
 * Read `path`, feeding every byte to a new SHA-256 (where `hashing`) in file order. The merges' contents are left out
 * only where nothing else can be in them: the array follows `"merges"` and a colon, and holds only lists of
 * strings (ArraySkipper). The vocabulary's are read as they pass (VocabReader) where it is a flat object of
 * strings to integers. So no key of the file is inside what is left out, and the parsed file differs only by those
 * two values being empty. (`"merges"` followed by a colon is a key in valid JSON: inside a string its closing quote
 * would need a backslash before it.) A file where that is not certain is read again whole, and hashed again, so the
 * digest is always of the bytes returned. Whether these were the file's only merges and vocabulary is the caller's
 * to check. (`readSize`: for tests, which cut the file at every place.)
 */
export function readSourceBytes(path: string, hashing: boolean, readSize = READ_SIZE): SourceBytes & { hash?: Hash } {
  const fd = openSync(path, 'r');
  try {
    const hash = hashing ? createHash('sha256') : undefined;
    const utf8 = new Utf8Check();
    const size = fstatSync(fd).size;
    // Sized for the whole file (one byte more, to see its end) but touched only where kept: untouched pages cost nothing.
    let buffer: Buffer = Buffer.allocUnsafeSlow(size + 1);
    // [0, end) is what has been read and kept; reads go at `end`.
    let end = 0;
    let state: 'search' | 'vocab' | 'merges' | 'after' = 'search';
    let searchFrom = 0;
    // Where the contents of the value being left out start: what is read next goes there, reusing the same memory.
    let contents = 0;
    let vocab: VocabReader | undefined;
    let merges: ArraySkipper | undefined;
    for (;;) {
      // Only a file that grew since fstat needs more room.
      if (end === buffer.length) buffer = grow(buffer, end);
      const read = readSync(fd, buffer, end, Math.min(readSize, buffer.length - end), null);
      if (read === 0) break;
      const region = buffer.subarray(end, end + read);
      hash?.update(region);
      utf8.push(region);
      // Where to go on from: a vocabulary entry cut by the last read waits at `contents`.
      let at = state === 'vocab' ? contents : end;
      end += read;
      for (;;) {
        if (state === 'search') {
          const found = findOpen(buffer, searchFrom, end, vocab ? undefined : VOCAB_KEY, merges ? undefined : MERGES_KEY);
          if (found.open < 0) { searchFrom = found.resume; break; }
          contents = found.open + 1;
          if (found.key === VOCAB_KEY) { state = 'vocab'; vocab = new VocabReader(size - contents); at = contents; }
          else { state = 'merges'; merges = new ArraySkipper(); at = contents; }
        }
        if (state === 'vocab') {
          // The entries are taken as they come; an entry cut by the end of what is read waits at `contents`.
          const stop = vocab!.read(buffer, at, end);
          if (vocab!.failed) return readWhole(path, hashing);
          const close = vocab!.close;
          if (close < 0) { buffer.copyWithin(contents, stop, end); end = contents + end - stop; at = contents; break; }
          buffer.copyWithin(contents, close, end);
          end = contents + end - close;
        } else if (state === 'merges') {
          const close = merges!.scan(buffer, at, end);
          if (close === UNSURE) return readWhole(path, hashing);
          // Still inside: the next read goes where the contents started.
          if (close < 0) { end = contents; break; }
          merges!.closed = true;
          buffer.copyWithin(contents, close, end);
          end = contents + end - close;
        } else break;
        // Past the value: on to the other one, if it is still to come.
        state = vocab && vocab.close >= 0 && merges?.closed ? 'after' : 'search';
        searchFrom = contents;
        at = contents;
      }
    }
    if (state === 'vocab' || state === 'merges') return readWhole(path, hashing);
    return { bytes: buffer.subarray(0, end), mergesLeftOut: merges?.closed === true, vocab: vocab?.entries(), utf8: utf8.end(), hash };
  } finally {
    closeSync(fd);
  }
}

/** The whole file, hashed (where `hashing`): for a file whose vocabulary or merges cannot be left out for certain. */
export function readWhole(path: string, hashing: boolean): SourceBytes & { hash?: Hash } {
  const bytes = readFileSync(path);
  return { bytes, mergesLeftOut: false, utf8: isUtf8(bytes), hash: hashing ? createHash('sha256').update(bytes) : undefined };
}

function grow(buffer: Buffer, used: number): Buffer {
  const bigger = Buffer.allocUnsafeSlow(2 * buffer.length + READ_SIZE);
  buffer.copy(bigger, 0, 0, used);
  return bigger;
}


/**
 * The first of the keys `vocab` and `merges` (either may be left out, once read) in [from, end) followed by a colon
 * and `{` (the vocabulary) or `[` (the merges): `open` is that bracket, `key` which one. Else open -1 and `resume`, where to search once more
 * bytes are read (a key that the end of what is read cuts is found then).
 */
function findOpen(bytes: Buffer, from: number, end: number, vocab: Buffer | undefined, merges: Buffer | undefined): { open: number; key?: Buffer; resume: number } {
  const view = bytes.subarray(0, end);
  let best: { open: number; key?: Buffer; resume: number } = { open: -1, resume: Math.max(from, end - MERGES_KEY.length + 1) };
  for (const [key, bracket] of [[vocab, 0x7b], [merges, 0x5b]] as const) {
    if (!key) continue;
    for (let at = view.indexOf(key, from); at >= 0; at = view.indexOf(key, at + 1)) {
      if (best.open >= 0 ? at > best.open : at >= best.resume) break;
      let k = at + key.length;
      while (k < end && isJsonSpace(bytes[k])) k++;
      // Cut by the end: decided when more is read, and nothing after it is taken first.
      if (k === end) { best = { open: -1, resume: at }; break; }
      if (bytes[k++] !== 0x3a) continue;
      while (k < end && isJsonSpace(bytes[k])) k++;
      if (k === end) { best = { open: -1, resume: at }; break; }
      if (bytes[k] === bracket) { best = { open: k, key, resume: k }; break; }
    }
  }
  return best;
}

const UNSURE = -2;

/**
 * Finds the `]` that closes an array, its contents given in pieces (from just after its `[`): strings skipped
 * past their escapes, nested lists counted. Outside strings only lists, commas and white space may be (what merges
 * are made of); anything else makes it UNSURE. So no key can be inside: `"merges"` or `"vocab"` followed by a colon
 * in the contents would need a colon or a letter outside a string.
 */
class ArraySkipper {
  /** Has its `]` been read? */
  closed = false;
  private depth = 1;
  private inString = false;
  /** 1 when the last piece ended on a backslash in a string: the next piece's first byte is escaped. */
  private escaped = 0;

  /** The index of the closing `]` in [from, end), -1 if it is not there, or UNSURE. */
  scan(bytes: Uint8Array, from: number, end: number): number {
    let depth = this.depth;
    let k = from + this.escaped;
    this.escaped = 0;
    // The rest of a string the last piece cut. (Strings in their own loop: ~1.5× faster than one loop with a flag.)
    if (this.inString) {
      for (; k < end; k++) { const c = bytes[k]; if (c === 0x22) break; if (c === 0x5c) k++; }
      if (k >= end) { this.escaped = k - end; return -1; }
      this.inString = false;
      k++;
    }
    for (; k < end; k++) {
      const c = bytes[k];
      if (c === 0x20) continue;
      if (c === 0x22) {
        for (k++; k < end; k++) { const d = bytes[k]; if (d === 0x22) break; if (d === 0x5c) k++; }
        if (k >= end) { this.inString = true; this.escaped = k - end; this.depth = depth; return -1; }
      } else if (c === 0x0a || c === 0x2c || c === 0x0d || c === 0x09) continue;
      else if (c === 0x5b) depth++;
      else if (c === 0x5d) { if (--depth === 0) return k; }
      else return UNSURE;
    }
    this.depth = depth;
    return -1;
  }
}

/** isUtf8 over bytes given in pieces: a character cut by a piece's end is checked with the next piece's start. */
class Utf8Check {
  private valid = true;
  /** The start of a character cut by the last piece's end (1–3 bytes). */
  private cut: Buffer | undefined;

  push(piece: Uint8Array): void {
    if (!this.valid) return;
    let from = 0;
    if (this.cut) {
      const need = sequenceLength(this.cut[0]) - this.cut.length;
      const joined = Buffer.concat([this.cut, piece.subarray(0, need)]);
      this.cut = undefined;
      if (piece.length < need) { this.cut = joined; return; }
      if (!isUtf8(joined)) { this.valid = false; return; }
      from = need;
    }
    // A lead byte among the last three whose sequence runs past the end is kept for the next piece.
    let to = piece.length;
    for (let k = piece.length - 1; k >= Math.max(from, piece.length - 3); k--) {
      const c = piece[k];
      if (c < 0x80) break;
      if (c >= 0xc0) { if (k + sequenceLength(c) > piece.length && sequenceLength(c) > 1) to = k; break; }
    }
    if (!isUtf8(piece.subarray(from, to))) { this.valid = false; return; }
    if (to < piece.length) this.cut = Buffer.from(piece.subarray(to));
  }

  /** Was everything valid UTF-8, with no character cut at the end? */
  end(): boolean {
    return this.valid && !this.cut;
  }
}

/** How many bytes a UTF-8 sequence with this lead byte has (1 for what cannot lead a longer one: isUtf8 judges it). */
const sequenceLength = (lead: number) => (lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1);
