/**
 * `tagmask mask` JSONL → JSONL, the fast path: a chunk of plain flat lines (`{"id", "tokens", "prompt_length"?}`)
 * read straight from the bytes into one id array, masked in one `maskBatch` call into one reused mask buffer,
 * and written as output bytes straight from the scan's segments (no MaskResult, Span or string per rollout).
 *
 * What this path does not take (another shape, per-line options, an unusual line, a rollout with a diagnostic
 * or tag attributes) goes to the caller's general path, line by line, in input order: the output is the same
 * bytes either way (test/cli/jobs.test.ts compares them).
 */
import type { Masker, MaskerPool, MaskResult, Scanned } from '../masker.ts';
import type { RunSummary } from '../summary.ts';
import { record } from '../summary.ts';
import { OutputClosed, OutputError } from './jsonl.ts';
import { idJson, writeMaskLine, type TextOut } from './lines.ts';
import { readPlainLine, readTokens, IdArena, type InputRecord, type PlainLine } from './records.ts';
import { detectShape, flatRollout } from './shapes.ts';

export type { TextOut };

/**
 * Output bytes that grow as needed: the lines of one chunk. Starts on an even address, so a mask goes out
 * as one 16-bit store per token (`"1,"`, or `",1"` when the list starts on an odd byte).
 */
export class ByteOut implements TextOut {
  buffer: Buffer;
  private pairs: Uint16Array;
  used = 0;

  constructor(size = 1 << 20) {
    this.buffer = Buffer.from(new ArrayBuffer(size));
    this.pairs = new Uint16Array(this.buffer.buffer, 0, size >> 1);
  }

  /** Room for `bytes` more. */
  reserve(bytes: number): void {
    if (this.used + bytes <= this.buffer.length) return;
    const size = Math.max(this.used + bytes, this.buffer.length * 2);
    const bigger = Buffer.from(new ArrayBuffer(size + (size & 1)));
    this.buffer.copy(bigger, 0, 0, this.used);
    this.buffer = bigger;
    this.pairs = new Uint16Array(bigger.buffer, 0, bigger.length >> 1);
  }

  write(text: string): void {
    // Short ASCII text (ids, keys) byte by byte: a Buffer.write call costs more than the copy.
    const n = text.length;
    if (n <= 256) {
      this.reserve(n);
      const buffer = this.buffer;
      let at = this.used;
      let i = 0;
      for (; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c >= 0x80) break;
        buffer[at++] = c;
      }
      if (i === n) { this.used = at; return; }
    }
    this.reserve(n * 3);
    this.used += this.buffer.write(text, this.used);
  }

  /** Bytes, copied one by one when few (a call to set() costs more). */
  bytes(bytes: Uint8Array): void {
    const n = bytes.length;
    this.reserve(n);
    if (n > 64) { this.buffer.set(bytes, this.used); this.used += n; return; }
    const buffer = this.buffer;
    let at = this.used;
    for (let i = 0; i < n; i++) buffer[at++] = bytes[i];
    this.used = at;
  }

  /** TextOut's name for bytes(). */
  writeBytes(bytes: Uint8Array): void {
    this.bytes(bytes);
  }

  /** A non-negative integer's digits. */
  int(value: number): void {
    this.reserve(16);
    const buffer = this.buffer;
    let digits = 1;
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
    let at = this.used + digits;
    this.used = at;
    do {
      const next = Math.floor(value / 10);
      buffer[--at] = 0x30 + value - next * 10;
      value = next;
    } while (value > 0);
  }

  writeMask(mask: ArrayLike<number>): void {
    this.maskBytes(mask, 0, mask.length);
  }

  /** `[m0,m1,…]` of `mask[from .. from + n)`, each value 0 or 1. */
  maskBytes(mask: ArrayLike<number>, from: number, n: number): void {
    this.reserve(2 * n + 2);
    const buffer = this.buffer;
    let at = this.used;
    buffer[at++] = 0x5b;
    if (n === 0) { buffer[at++] = 0x5d; this.used = at; return; }
    const pairs = this.pairs;
    const end = from + n;
    if ((at & 1) === 0) {
      // "m," pairs from an even byte; the last comma becomes the closing bracket.
      let k = at >> 1;
      for (let i = from; i < end; i++) pairs[k++] = 0x2c30 + mask[i];
      at += 2 * n;
      buffer[at - 1] = 0x5d;
    } else {
      // The first value alone, then ",m" pairs from the even byte after it.
      buffer[at++] = 0x30 + mask[from];
      let k = at >> 1;
      for (let i = from + 1; i < end; i++) pairs[k++] = 0x302c + (mask[i] << 8);
      at += 2 * (n - 1);
      buffer[at++] = 0x5d;
    }
    this.used = at;
  }

  /** The bytes so far, and start over (the view is valid until the next write). */
  take(): Buffer {
    const bytes = this.buffer.subarray(0, this.used);
    this.used = 0;
    return bytes;
  }
}

const LINE_START = Buffer.from('{"id":');
const MASK_KEY = Buffer.from(',"mask":');
const SPANS_KEY = Buffer.from(',"spans":[');
const END_KEY = Buffer.from(',"end":');
const SPAN_NEXT = Buffer.from('},');
const SPAN_LAST = Buffer.from('}');
const LINE_END = Buffer.from('],"diagnostics":[]}\n');

/** Per grammar state, the span's opening bytes `{"role":"…","tag":"…","start":`, and which states share them. */
export interface SpanHeads { head: Uint8Array[]; key: Int32Array; action: Uint8Array }

export function spanHeads(masker: Masker): SpanHeads {
  const { stateMask, grammar } = masker.bound;
  const keys = new Map<string, number>();
  const head: Uint8Array[] = [];
  const key = new Int32Array(grammar.states.length);
  const action = new Uint8Array(grammar.states.length);
  grammar.states.forEach((state, s) => {
    const text = `{"role":"${stateMask[s] === 1 ? 'action' : 'observation'}","tag":${JSON.stringify(state.kind)},"start":`;
    if (!keys.has(text)) { keys.set(text, head.length); head.push(Buffer.from(text)); }
    key[s] = keys.get(text)!;
    action[s] = stateMask[s];
  });
  return { head, key, action };
}

let plainFlat: boolean | undefined;
/** Lines of `{"id", "tokens"}` and `{"id", "tokens", "prompt_length"}` are the flat shape (readPlainLine's lines). */
function plainLinesAreFlat(): boolean {
  return (plainFlat ??= detectShape({ id: '', tokens: [] }).name === 'flat' && detectShape({ id: '', tokens: [], prompt_length: 0 }).name === 'flat');
}

/** Ids masked in one `maskBatch` call (lines are not split: a longer line is one call). */
const GROUP_IDS = 1 << 18;

/** Lines the fast path leaves to the caller, which writes their output (or error) itself. */
export type OtherLine = (item: InputRecord) => void;

/**
 * Where MaskLines puts each rollout it masked instead of a JSONL line in `out` (Parquet rows): its id as read,
 * the scan, and the span heads of the masker. Counts what it writes into the run's summary. A throw writes
 * nothing for that rollout: the general path then masks it again and reports it.
 */
export type MaskedRow = (id: unknown, scanned: Scanned, heads: SpanHeads) => void;

/** Stands for the id of a plain line, read from its JSON text only when rows want it. */
const ID_AS_TEXT = Symbol('id as text');

/**
 * Masks chunks of JSONL lines for `runRollouts` when the output is plain JSONL masks. `run` writes the output
 * of the lines it takes into `out`; before it hands a line to `other`, it flushes `out` through `drain`, so
 * the output stays in input order.
 */
export class MaskLines {
  private readonly arena = new IdArena();
  /** Rollout k's ids are `arena.ids[starts[k] .. starts[k + 1]]`. */
  private starts = new Uint32Array(1025);
  private promptLengths = new Int32Array(1025);
  private idTexts: string[] = [];
  /** The ids as read (ID_AS_TEXT: in idTexts only), for `row`. */
  private ids: unknown[] = [];
  private readonly plain: PlainLine = { idText: '', promptLength: -1 };
  private mask = new Uint8Array(1 << 16);
  private count = 0;
  private readonly masker: Masker;
  private readonly heads: SpanHeads;
  /** Index of the batch's first rollout in this run, during `maskBatch` (it may restart after a failed one). */
  private base = 0;
  private readonly each: (r: number, scanned: Scanned) => void;

  /** `row`: each masked rollout goes there instead of into `out` (which then stays empty). */
  constructor(pool: MaskerPool, readonly out: ByteOut, public summary: RunSummary, private readonly row?: MaskedRow) {
    this.masker = pool.get({});
    this.heads = spanHeads(this.masker);
    this.each = (r, scanned) => {
      // A line is written whole or not at all.
      const mark = this.out.used;
      try {
        this.line(this.base + r, scanned);
      } catch (error) {
        this.out.used = mark;
        throw error;
      }
      this.done++;
    };
  }

  /**
   * Mask the records of one chunk in order. Each line this path does not take goes to `other`, after
   * `drain` has handed on what `out` holds, so that the output stays in input order.
   */
  run(items: InputRecord[], other: OtherLine, drain: () => void): void {
    const handOff = (item: InputRecord) => { drain(); other(item); };
    this.arena.reset();
    this.count = 0;
    for (const item of items) {
      if (!this.take(item)) {
        this.flush(handOff);
        handOff(item);
        this.arena.reset();
      } else if (this.arena.used >= GROUP_IDS) {
        // A group's ids, masks and output stay in the processor's cache: masked and written a group at a time.
        this.flush(handOff);
        drain();
        this.arena.reset(GROUP_IDS);
      }
    }
    this.flush(handOff);
    this.arena.reset(GROUP_IDS);
  }

  /**
   * Read a line into the pending run if it is a plain flat line without options (or a Parquet row of that shape
   * whose ids came typed: readRecordBatches' `typedIds`); false leaves it to the caller.
   */
  private take(item: InputRecord): boolean {
    if (item.error !== undefined) return false;
    const { arena } = this;
    const before = arena.used;
    if (item.bytes !== undefined && plainLinesAreFlat() && readPlainLine(item.bytes, arena, this.plain)) {
      // The commonest line, read without JSON.parse (what the general reading below would give it).
      const k = this.count;
      if (k + 1 >= this.starts.length) this.grow();
      this.idTexts[k] = this.plain.idText;
      this.ids[k] = ID_AS_TEXT;
      this.items[k] = item;
      this.promptLengths[k] = this.plain.promptLength;
      this.starts[k] = before;
      this.starts[k + 1] = arena.used;
      this.count = k + 1;
      return true;
    }
    let value: Record<string, unknown> | undefined;
    if (item.bytes !== undefined) value = readTokens(item.bytes, arena);
    else if (item.value?.tokens instanceof Uint32Array) {
      const ids = item.value.tokens;
      arena.reserve(ids.length);
      arena.ids.set(ids, before);
      arena.used = before + ids.length;
      value = item.value;
    }
    if (value === undefined) return false;
    try {
      if (detectShape(value).name !== 'flat') throw undefined;
      const rollout = flatRollout(value, arena.ids.subarray(before, arena.used));
      for (const _ in rollout.options) throw undefined;
      const k = this.count;
      if (k + 1 >= this.starts.length) this.grow();
      this.idTexts[k] = idJson(rollout.id);
      this.ids[k] = rollout.id;
      this.items[k] = item;
      this.promptLengths[k] = rollout.promptLength;
      this.starts[k] = before;
      this.starts[k + 1] = arena.used;
      this.count = k + 1;
      return true;
    } catch {
      // Whatever is wrong with the line, the general path says it (or masks it) the usual way.
      arena.used = before;
      return false;
    }
  }

  private grow(): void {
    const starts = new Uint32Array(this.starts.length * 2);
    starts.set(this.starts);
    this.starts = starts;
    const promptLengths = new Int32Array(this.promptLengths.length * 2);
    promptLengths.set(this.promptLengths);
    this.promptLengths = promptLengths;
  }

  /** Mask the pending run and write its lines; a rollout the masker refuses goes to `other` (which reports it). */
  private flush(other: OtherLine): void {
    const count = this.count;
    if (count === 0) return;
    const total = this.arena.used;
    if (this.mask.length < total) this.mask = new Uint8Array(Math.max(total, this.mask.length * 2));
    for (let from = 0; from < count;) {
      this.base = from;
      this.done = 0;
      try {
        this.masker.maskBatch(this.arena.ids, this.starts.subarray(from, count + 1), this.promptLengths.subarray(from, count), this.mask, this.each);
        break;
      } catch (error) {
        // A failed write of the output (a row group going out) ends the run, as everywhere.
        if (error instanceof OutputError || error instanceof OutputClosed) throw error;
        // The rollouts before the failed one are written; the failed one is the general path's to report
        // (the same masker refuses it there, with the line's number), and the rest are masked on.
        const failed = from + this.done;
        other(this.items[failed]!);
        from = failed + 1;
      }
    }
    this.count = 0;
    this.items.fill(undefined);
  }

  /** Rollouts of the current `maskBatch` call written so far. */
  private done = 0;
  private items: Array<InputRecord | undefined> = [];

  /** The output line of rollout k, just masked. */
  private line(k: number, scanned: Scanned): void {
    if (this.row) {
      const id = this.ids[k];
      this.row(id === ID_AS_TEXT ? JSON.parse(this.idTexts[k]) : id, scanned, this.heads);
    } else writeScannedLine(this.out, this.heads, this.idTexts[k], scanned, this.summary);
  }
}

/**
 * The output line of a rollout `maskBatch` just masked, as `writeMaskLine` writes it from `mask()`'s result:
 * straight from the segments when there is nothing to say about it (no diagnostic, no tag attributes), else
 * through the result's objects. Counted into `summary`.
 */
export function writeScannedLine(out: ByteOut, heads: SpanHeads, idText: string, scanned: Scanned, summary: RunSummary): void {
  const n = scanned.tokens.length;
  if (scannedNeedsResult(scanned)) {
    // Diagnostics or attributes: the words and objects of mask(), written as always.
    const result: MaskResult = scanned.result();
    writeMaskLine(out, idText, result);
    record(summary, result);
    return;
  }
  out.bytes(LINE_START);
  out.write(idText);
  out.bytes(MASK_KEY);
  out.maskBytes(scanned.mask, scanned.from, n);
  out.bytes(SPANS_KEY);
  const actionTokens = writeSpans(out, heads, scanned);
  out.bytes(LINE_END);
  summary.rollouts++;
  summary.tokens += n;
  summary.actionTokens += actionTokens;
}

/** Whether a rollout just masked has something to say (a diagnostic, tag attributes): then only its result() says it. */
export const scannedNeedsResult = (scanned: Scanned): boolean => {
  const segments = scanned.segments;
  return segments.records.length > 0 || segments.tagRanges.length > 0 || (!scanned.anyAction && scanned.tokens.length > 0);
};

/**
 * The spans of a rollout `maskBatch` just masked, as JSON objects separated by commas (what JSON.stringify
 * writes between the brackets of `mask()`'s spans, for a rollout without diagnostics or attributes); returns
 * its action token count.
 */
export function writeSpans(out: ByteOut, heads: SpanHeads, scanned: Scanned): number {
  const segments = scanned.segments;
  const n = scanned.tokens.length;
  const { head, key, action } = heads;
  const { count, state } = segments;
  const starts = segments.starts;
  let open = -1;
  let actionTokens = 0;
  for (let j = 0; j < count; j++) {
    const start = starts[j];
    const end = j + 1 < count ? starts[j + 1] : n;
    if (end <= start) continue;
    const s = state[j];
    if (action[s] === 1) actionTokens += end - start;
    if (key[s] === open) continue;
    if (open >= 0) { out.int(start); out.bytes(SPAN_NEXT); }
    open = key[s];
    out.bytes(head[open]);
    out.int(start);
    out.bytes(END_KEY);
  }
  if (open >= 0) { out.int(n); out.bytes(SPAN_LAST); }
  return actionTokens;
}
