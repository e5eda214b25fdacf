/**
 * The scanner's position in one rollout, and the byte-level moves it makes.
 *
 * One Cursor per Masker (or per concurrent scan), passed to every step: scanning allocates nothing per
 * rollout, and two scans never share state. The moves report where they ended in `atToken`/`atOffset`
 * rather than returning an object, for the same reason.
 */
import { RolloutError } from '../diagnostics.ts';
import { KNOWN, type ByteTable } from '../tokenizer/table.ts';
import type { Bound } from './bind.ts';
import { Segments } from './segments.ts';

export class Cursor {
  /** The grammar and tokenizer tables of the rollout being scanned: set by `begin`, before any step reads it. */
  bound!: Bound;
  ids: ArrayLike<number> = [];
  out: Segments;
  /** The machine state the walk is in. */
  state = 0;
  /** Where the scan stands: a token index and a byte offset inside it. */
  token = 0;
  offset = 0;
  /** Where the last successful move ended. */
  atToken = 0;
  atOffset = 0;
  /** First token of the closing padding run (ids.length when there is none): no literal counts past it. */
  padStart = 0;
  /** First token of the reply being read: its budget counts from here. */
  replyStart = 0;
  /** Where the current model turn began: a line-start marker may also stand there. */
  turnToken = -1;
  turnOffset = 0;

  constructor(out = new Segments()) {
    this.out = out;
  }

  /** Start a rollout: `out` is emptied, the position is the first byte. */
  begin(bound: Bound, ids: ArrayLike<number>): void {
    this.bound = bound;
    this.ids = ids;
    this.out.reset();
    this.state = bound.grammar.initial;
    this.token = 0;
    this.offset = 0;
    this.replyStart = 0;
    this.turnToken = -1;
    this.turnOffset = 0;
  }

  /** Stand at (token, offset). */
  moveTo(token: number, offset: number): void {
    this.token = token;
    this.offset = offset;
  }

  /** Stand where the last move ended. */
  moveToEnd(): void {
    this.token = this.atToken;
    this.offset = this.atOffset;
  }
}

/** How many bytes token `t`'s piece has (in the scanner's view, where a special token is one byte). */
export function pieceLength(c: Cursor, t: number): number {
  const { offsets } = c.bound.scan;
  const id = c.ids[t];
  return offsets[id + 1] - offsets[id];
}

/**
 * Is (token, offset) just past the last byte of `token`? That position is the next token's start, (token + 1, 0):
 * the steps write it so, so that one place has one spelling (a state beginning there straddles nothing).
 */
export function atTokenEnd(c: Cursor, token: number, offset: number): boolean {
  return offset > 0 && offset === pieceLength(c, token);
}

/**
 * Does `literal` occur at (token, offset)? On success its end is in atToken/atOffset.
 * Bytes past `limit` tokens do not count: they are padding or beyond a budget.
 */
export function matchForward(c: Cursor, limit: number, token: number, offset: number, literal: Uint8Array): boolean {
  if (token >= limit) return false;
  const { pieces, offsets } = c.bound.scan;
  const ids = c.ids;
  let t = token;
  let p = offsets[ids[t]] + offset;
  let end = offsets[ids[t] + 1];
  for (let q = 0; q < literal.length; q++) {
    while (p >= end) {
      if (++t >= limit) return false;
      p = offsets[ids[t]];
      end = offsets[ids[t] + 1];
      // An id without bytes (unknown) never matches: the automaton that runs next reports it.
      if (!(p < end)) return false;
    }
    if (pieces[p++] !== literal[q]) return false;
  }
  c.atToken = t;
  c.atOffset = p - offsets[ids[t]];
  return true;
}

/** The position `length` bytes before (token, offset), into atToken/atOffset; false before the stream. */
export function retreat(c: Cursor, token: number, offset: number, length: number): boolean {
  let t = token;
  let o = offset;
  while (length > o) {
    length -= o;
    if (--t < 0) return false;
    o = pieceLength(c, t);
  }
  c.atToken = t;
  c.atOffset = o - length;
  return true;
}

/** The first position from (token, offset) that is not whitespace, before token `limit`, into atToken/atOffset. */
export function skipWhitespace(c: Cursor, token: number, offset: number, limit: number): void {
  const { pieces, offsets } = c.bound.scan;
  const ids = c.ids;
  let t = token;
  let o = offset;
  for (; t < limit; t++, o = 0) {
    for (let p = offsets[ids[t]] + o, end = offsets[ids[t] + 1]; p < end; p++, o++) {
      const byte = pieces[p];
      if (!(byte === 0x0a || byte === 0x20 || byte === 0x0d || byte === 0x09)) { c.atToken = t; c.atOffset = o; return; }
    }
  }
  c.atToken = t;
  c.atOffset = 0;
}

/** Are the bytes from (token, offset) up to token `limit` all whitespace (or none)? */
export function onlyWhitespaceBefore(c: Cursor, token: number, offset: number, limit: number): boolean {
  const { pieces, offsets } = c.bound.scan;
  const ids = c.ids;
  for (let t = token, o = offset; t < limit; t++, o = 0) {
    for (let p = offsets[ids[t]] + o, end = offsets[ids[t] + 1]; p < end; p++) {
      const c = pieces[p];
      if (!(c === 0x0a || c === 0x20 || c === 0x0d || c === 0x09)) return false;
    }
  }
  return true;
}

/** Is (token, offset) at the start of a line, or where the model's turn began? */
export function atLineStart(c: Cursor, t: number, o: number): boolean {
  if (t === c.turnToken && o === c.turnOffset) return true;
  if (t === 0 && o === 0) return true;
  const { scan } = c.bound;
  retreat(c, t, o, 1);
  return scan.pieces[scan.offsets[c.ids[c.atToken]] + c.atOffset] === 0x0a;
}

const MAX_TAG_BYTES = 4096;

/**
 * After a tag-name literal (`<invoke`) at (token, offset): does the name end there, with a `>` within
 * MAX_TAG_BYTES? Then the `>`'s end is in atToken/atOffset. False for another name (`<invoker`).
 * Only bytes are looked at; the attributes between are decoded later, by whoever wants them.
 */
export function findTagEnd(c: Cursor, limit: number, token: number, offset: number): boolean {
  const { pieces, offsets } = c.bound.scan;
  const ids = c.ids;
  let t = token;
  let p = offsets[ids[t]] + offset;
  let end = offsets[ids[t] + 1];
  for (let count = 0; ; count++) {
    while (p >= end) {
      if (++t >= limit) return false;
      p = offsets[ids[t]];
      end = offsets[ids[t] + 1];
      if (!(p < end)) return false;
    }
    const byte = pieces[p++];
    if (count === 0 && !(byte === 0x3e || byte === 0x2f || byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d)) return false;
    if (byte === 0x3e) break;
    if (count >= MAX_TAG_BYTES) return false;
  }
  c.atToken = t;
  c.atOffset = p - offsets[ids[t]];
  return true;
}

export function unknownToken(table: ByteTable, index: number, id: number): RolloutError {
  return new RolloutError(`token ${index}: id ${JSON.stringify(id)} is not in the tokenizer's vocabulary (size ${table.size})`, index);
}

/** Check ids the automata never walk (a prompt given by length, the rest after the last state). */
export function checkIds(table: ByteTable, ids: ArrayLike<number>, from: number, to: number): void {
  const { size, flags } = table;
  for (let i = from; i < to; i++) {
    const id = ids[i];
    if (!(id < size && (flags[id] & KNOWN))) throw unknownToken(table, i, id);
  }
}
