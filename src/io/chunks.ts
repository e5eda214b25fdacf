/**
 * JSONL read in chunks of whole lines for `mask --jobs N` (src/jobs.ts): each chunk is read straight into an
 * ArrayBuffer of its own, which is then transferred to a worker thread as it is. The thread that reads never
 * copies a chunk's lines: it finds the last newline, counts the newlines (the next chunk's first line number)
 * and moves the unfinished last line to the front of the next buffer. The worker splits the lines itself
 * (`chunkLines`), exactly as `LineSplitter` does: the same numbers, blank lines skipped, BOM and CR dropped.
 */
import { closeSync } from 'node:fs';
import { Line, MAX_LINE_BYTES, openInput, pushLine, readSomeAsync, tooLong } from './jsonl.ts';

/** Whole lines read: `buffer[0 .. end)`, numbered from `first`, `lines` of them (blank ones too). */
export interface LineChunk {
  buffer: ArrayBuffer;
  end: number;
  first: number;
  lines: number;
  /** A line too long to hold (then `end` is 0 and `lines` 1): its error. */
  error?: string;
  /** Input bytes this chunk stands for (progress). */
  bytes: number;
}

/**
 * The buffers chunks are read into, reused: fresh memory costs a page fault per 4 KiB on first touch (measured
 * here at ~4.5 ms per MB, more than masking it), so the buffers a worker hands back are read into again.
 * Only buffers of the normal size are kept; one grown for a long line is let go once it is back.
 */
export class ChunkBuffers {
  private readonly free: ArrayBuffer[] = [];
  constructor(readonly size: number) {}

  /** A buffer of at least `bytes` (the normal size when that is enough). */
  take(bytes = 0): ArrayBuffer {
    if (bytes <= this.size && this.free.length) return this.free.pop()!;
    return new ArrayBuffer(Math.max(this.size, bytes));
  }

  give(buffer: ArrayBuffer): void {
    if (buffer.byteLength === this.size) this.free.push(buffer);
  }
}

/**
 * The lines of a file (or `-`, stdin), a read's worth of whole lines per chunk, in order. A chunk's buffer is
 * the caller's once yielded (to transfer); the next chunk is read into a buffer from `buffers`. A line longer
 * than the buffer grows it (doubling, up to `maxLine`); a line of `maxLine` bytes or more is skipped as it
 * streams past and yielded as its error alone, as `LineSplitter` does. From a pipe, each read's lines are
 * yielded at once (a co-process waits for its answers).
 */
export async function* readLineChunks(path: string, buffers: ChunkBuffers, maxLine = MAX_LINE_BYTES): AsyncGenerator<LineChunk> {
  const fd = openInput(path);
  const state: ReadState = { bytes: Buffer.from(buffers.take()), filled: 0, number: 0 };
  /** Bytes of a too-long line skipped so far (-1: not skipping). */
  let skipped = -1;
  try {
    for (;;) {
      if (state.filled === state.bytes.length) {
        // One line fills the buffer: grow it, or skip the line once it reaches the longest kept.
        const { bytes, filled } = state;
        if (bytes.length >= maxLine) {
          skipped = filled;
          state.filled = 0;
          if (bytes.length > buffers.size) state.bytes = Buffer.from(buffers.take());
        } else {
          const bigger = Buffer.from(buffers.take(Math.min(bytes.length * 2, Math.max(maxLine, bytes.length))));
          bytes.copy(bigger, 0, 0, filled);
          buffers.give(bytes.buffer);
          state.bytes = bigger;
        }
      }
      const { bytes, filled } = state;
      const read = await readSomeAsync(fd, bytes, filled);
      const end = filled + read;
      if (skipped >= 0) {
        const newline = bytes.subarray(0, end).indexOf(10);
        if (newline < 0 && read > 0) { skipped += end; continue; }
        const number = ++state.number;
        yield { buffer: new ArrayBuffer(0), end: 0, first: number, lines: 1, error: tooLong(number, skipped + (newline < 0 ? end : newline), maxLine).error, bytes: skipped + (newline < 0 ? end : newline + 1) };
        skipped = -1;
        if (newline < 0) return;
        // What follows the long line's end is read as usual, from the front.
        bytes.copy(bytes, 0, newline + 1, end);
        yield* cut(state, buffers, 0, end - newline - 1);
      } else if (read === 0) {
        // The end: an unterminated last line is a line too.
        if (filled > 0) yield { buffer: bytes.buffer, end: filled, first: state.number + 1, lines: 1, bytes: filled };
        return;
      } else yield* cut(state, buffers, filled, end);
    }
  } finally {
    if (fd !== 0) closeSync(fd);
  }
}

/** Where a read is: the buffer, its unfinished line's bytes at the front, the lines numbered so far. */
interface ReadState { bytes: Buffer<ArrayBuffer>; filled: number; number: number }

/**
 * `state.bytes[from .. end)` is new (what is before holds no newline): yield the whole lines as a chunk, and
 * move the unfinished last line to the front of the next buffer; with no newline, keep reading after it.
 */
function* cut(state: ReadState, buffers: ChunkBuffers, from: number, end: number): Generator<LineChunk> {
  const { bytes } = state;
  const last = bytes.subarray(from, end).lastIndexOf(10);
  if (last < 0) { state.filled = end; return; }
  const stop = from + last + 1;
  let lines = 0;
  for (let at = bytes.indexOf(10, from); at >= 0 && at < stop; at = bytes.indexOf(10, at + 1)) lines++;
  const next = Buffer.from(buffers.take(end - stop));
  bytes.copy(next, 0, stop, end);
  const first = state.number + 1;
  state.number += lines;
  state.bytes = next;
  state.filled = end - stop;
  yield { buffer: bytes.buffer, end: stop, first, lines, bytes: stop };
}

/**
 * A chunk's lines, as a worker reads them: numbered from `first`, blank ones skipped, as `LineSplitter`
 * gives them (views into the chunk's buffer); a too-long line is its error alone.
 */
export function chunkLines(chunk: LineChunk): Line[] {
  if (chunk.error !== undefined) return [new Line(chunk.first, Buffer.alloc(0), chunk.error)];
  const bytes = Buffer.from(chunk.buffer, 0, chunk.end);
  const out: Line[] = [];
  let number = chunk.first;
  let start = 0;
  for (let newline = bytes.indexOf(10); newline >= 0; newline = bytes.indexOf(10, start)) {
    pushLine(out, number++, bytes, start, newline);
    start = newline + 1;
  }
  if (start < bytes.length) pushLine(out, number, bytes, start, bytes.length);
  return out;
}
