/**
 * What a scan leaves behind: where each state begins, as exact (token, byte offset) positions, and the
 * diagnostics it raised as plain records (code and arguments; words come later, from src/report).
 */
import type { DiagnosticCode } from '../diagnostics.ts';

/**
 * Checks that can fail only on a bug in the scanner, never on input: on under tests and in development
 * (NODE_ENV test, as vitest sets it, or development), off for users, where they would cost time on every rollout.
 */
const CHECKS = process.env.NODE_ENV === 'test' || process.env.NODE_ENV === 'development';

/** A diagnostic as detected: the code and its arguments, no prose (the batch path only counts these). */
export interface ScanRecord {
  code: DiagnosticCode;
  /** 0-based token index the record is about. */
  token: number;
  /** Index of the reply it concerns (into the compiled grammar's `replies`), or -1. */
  reply: number;
  /** The mask a straddling token was given; -1 for other codes. */
  value: number;
  /**
   * For a straddling token, the mask value of each side holding its bytes, in byte order: bit k is side
   * k, above them a 1 marks the end (action then observation: 0b101). 0 for other codes. See `sidesOf`.
   */
  sides: number;
  /** For a straddling token, the byte inside it where its first other side begins; 0 for other codes. */
  offset: number;
}

/** The side values a straddling token's record holds, in byte order. */
export function sidesOf(record: ScanRecord): number[] {
  const sides: number[] = [];
  for (let bits = record.sides; bits > 1; bits >>>= 1) sides.push(bits & 1);
  return sides;
}

/** Where each state begins: parallel arrays, reused between rollouts. */
export class Segments {
  count = 0;
  token = new Int32Array(64);
  offset = new Int32Array(64);
  state = new Int32Array(64);
  records: ScanRecord[] = [];
  /** Token index where each segment's tokens start (filled by spans.ts), reused between rollouts. */
  starts = new Int32Array(64);
  /**
   * Tags whose attributes are to be read (tags declared with `attributes`), five numbers each: the segment
   * the tag opens, then the (token, offset) after its name and the (token, offset) after its `>`. Only
   * positions: decoding them (parse5) is left to whoever builds spans, so the batch path never pays for it.
   */
  tagRanges: number[] = [];

  reset() {
    this.count = 0;
    if (this.records.length) this.records = [];
    if (this.tagRanges.length) this.tagRanges.length = 0;
  }

  /**
   * A state begins at (token, offset). Positions never go back: a state cannot begin before the one it
   * follows, so no byte (and no token) is ever claimed twice. This is what makes spans tile by construction;
   * the scanner's steps keep to it themselves (see runner.ts `startsBeforeCurrentState`). A step that did not
   * is a bug: under tests it fails here, where it happens, instead of being moved forward unseen.
   */
  push(token: number, offset: number, state: number) {
    if (CHECKS) this.checkForward(token, offset, state);
    if (this.count === this.token.length) {
      const grow = (array: Int32Array) => { const next = new Int32Array(array.length * 2); next.set(array); return next; };
      this.token = grow(this.token); this.offset = grow(this.offset); this.state = grow(this.state); this.starts = grow(this.starts);
    }
    this.token[this.count] = token;
    this.offset[this.count] = offset;
    this.state[this.count] = state;
    this.count++;
  }

  private checkForward(token: number, offset: number, state: number): void {
    const last = this.count - 1;
    if (last >= 0 && (token < this.token[last] || (token === this.token[last] && offset < this.offset[last]))) {
      throw new Error(`internal: state ${state} would begin at token ${token} byte ${offset}, before state ${this.state[last]} at token ${this.token[last]} byte ${this.offset[last]}`);
    }
  }

  note(code: DiagnosticCode, token: number, reply = -1, value = -1, sides = 0, offset = 0) {
    this.records.push({ code, token, reply, value, sides, offset });
  }
}
