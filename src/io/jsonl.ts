/**
 * JSONL in and out, built for long lines and many of them.
 *
 * Input is read synchronously into one reused buffer and split on newlines by hand: stream chunks plus
 * `Buffer.concat` land in fresh memory each time, which measured 7× slower on 94 MB (bench/README.md);
 * readline is slower still on megabyte lines. A line is handed out as a view into that buffer, valid until
 * the next line is asked for. Output goes through one buffer to a temporary file that is renamed into place
 * only when complete, so an output file is complete or absent.
 */
import { closeSync, createReadStream, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { createGunzip, gzipSync } from 'node:zlib';

const READ_CHUNK = 1 << 23;

/** One input line: its bytes (a view, valid until the next line is read) and its 1-based number. */
export class Line {
  constructor(readonly number: number, readonly bytes: Buffer) {}
  get text(): string { return this.bytes.toString('utf8'); }
}

/** Wait a little for a non-blocking descriptor (stdin as a pipe or terminal) to have data. */
function pause(): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
}

function readSome(fd: number, buffer: Buffer, at: number): number {
  for (;;) {
    try {
      return readSync(fd, buffer, at, buffer.length - at, null);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') { pause(); continue; }
      if (code === 'EOF') return 0;
      throw error;
    }
  }
}

/** Lines of a file (or `-` for stdin), skipping blank ones, in order. */
export function* readJsonl(path: string): Generator<Line> {
  const fd = path === '-' ? 0 : openSync(path, 'r');
  let buffer = Buffer.allocUnsafe(READ_CHUNK);
  let filled = 0;
  let number = 0;
  try {
    for (;;) {
      if (filled === buffer.length) {
        // One line longer than the buffer: grow it.
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger, 0, 0, filled);
        buffer = bigger;
      }
      const read = readSome(fd, buffer, filled);
      const end = filled + read;
      // Search only what was read: past `end` the buffer holds stale bytes.
      const data = buffer.subarray(0, end);
      let start = 0;
      for (let newline = data.indexOf(10, start); newline >= 0; newline = data.indexOf(10, start)) {
        number++;
        let stop = newline;
        if (stop > start && buffer[stop - 1] === 13) stop--;
        if (!isBlank(buffer, start, stop)) yield new Line(number, buffer.subarray(start, stop));
        start = newline + 1;
      }
      if (read === 0) {
        if (start < end) {
          number++;
          let stop = end;
          if (buffer[stop - 1] === 13) stop--;
          if (!isBlank(buffer, start, stop)) yield new Line(number, buffer.subarray(start, stop));
        }
        return;
      }
      // Keep the unfinished line at the front for the next read.
      buffer.copy(buffer, 0, start, end);
      filled = end - start;
    }
  } finally {
    if (fd !== 0) closeSync(fd);
  }
}

function isBlank(buffer: Buffer, start: number, stop: number): boolean {
  for (let i = start; i < stop; i++) {
    const c = buffer[i];
    if (c !== 32 && c !== 9 && c !== 13) return false;
  }
  return true;
}

// `,0,0,0…` and `,1,1,1…`: mask runs are copied from these instead of written byte by byte.
const RUN = 4096;
const RUNS = [0, 1].map((value) => Buffer.from(`,${value}`.repeat(RUN)));

/** Buffered line writer to a file (atomically, on `close`) or to stdout. */
export class JsonlWriter {
  private buffer = Buffer.allocUnsafe(1 << 22);
  private used = 0;
  private readonly fd: number;
  private readonly temporary?: string;
  private closed = false;
  /** `.gz` output: each flushed buffer becomes one gzip member (a multi-member file gunzip reads whole). */
  private readonly gzip: boolean;

  constructor(private readonly path: string | undefined) {
    this.gzip = path !== undefined && path.endsWith('.gz');
    if (path === undefined || path === '-') {
      this.fd = 1;
    } else {
      this.temporary = `${path}.tmp-${process.pid}`;
      this.fd = openSync(this.temporary, 'w');
    }
  }

  /** Append raw text (callers add the newline). */
  write(text: string): void {
    // Strings are at most 3 bytes per UTF-16 unit: reserve that, skip measuring.
    this.reserve(text.length * 3);
    this.used += this.buffer.write(text, this.used);
  }

  /** Append `[m0,m1,…]` for a 0/1 mask, run by run. */
  writeMask(mask: ArrayLike<number>): void {
    const n = mask.length;
    this.reserve(n * 2 + 2);
    const buffer = this.buffer;
    let at = this.used;
    buffer[at++] = 0x5b;
    if (n > 0) buffer[at++] = 0x30 + mask[0];
    let i = 1;
    while (i < n) {
      const value = mask[i];
      let end = i + 1;
      while (end < n && mask[end] === value) end++;
      if (end - i <= 16) {
        // A short run: stores are cheaper than a copy call.
        const digit = 0x30 + value;
        for (let k = i; k < end; k++) { buffer[at++] = 0x2c; buffer[at++] = digit; }
      } else for (let count = end - i; count > 0; count -= RUN) {
        const take = count < RUN ? count : RUN;
        RUNS[value].copy(buffer, at, 0, take * 2);
        at += take * 2;
      }
      i = end;
    }
    buffer[at++] = 0x5d;
    this.used = at;
  }

  private reserve(bytes: number): void {
    if (this.used + bytes <= this.buffer.length) return;
    this.flush();
    if (bytes > this.buffer.length) this.buffer = Buffer.allocUnsafe(bytes * 2);
  }

  private flush(): void {
    const data = this.gzip && this.used > 0 ? gzipSync(this.buffer.subarray(0, this.used)) : this.buffer;
    const length = this.gzip ? (this.used > 0 ? data.length : 0) : this.used;
    let at = 0;
    while (at < length) {
      try {
        at += writeSync(this.fd, data, at, length - at);
      } catch (error) {
        // stdout as a non-blocking pipe: wait for the reader and retry.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        pause();
      }
    }
    this.used = 0;
  }

  /** Finish: flush, and move the temporary file into place. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.flush();
    if (this.temporary) {
      // The rename is what makes the output complete or absent for its readers.
      closeSync(this.fd);
      renameSync(this.temporary, this.path!);
    }
  }

  /** Give up: nothing reaches the output path. */
  abort(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.temporary) {
      closeSync(this.fd);
      rmSync(this.temporary, { force: true });
    }
  }
}

/**
 * Lines of a gzip-compressed JSONL file (`.jsonl.gz`), streamed through node:zlib: only the current chunk
 * and the unfinished line are held. Lines are numbered and blank ones skipped as `readJsonl` does.
 */
export async function* readJsonlGz(path: string): AsyncGenerator<Line> {
  const stream = (path === '-' ? process.stdin : createReadStream(path)).pipe(createGunzip());
  // The unfinished line, in pieces: a line longer than a chunk is joined once, not once per chunk.
  let pending: Buffer[] = [];
  let number = 0;
  const emit = function* (bytes: Buffer): Generator<Line> {
    number++;
    let stop = bytes.length;
    if (stop > 0 && bytes[stop - 1] === 13) stop--;
    if (!isBlank(bytes, 0, stop)) yield new Line(number, bytes.subarray(0, stop));
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline >= 0; newline = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, newline);
      yield* emit(pending.length ? Buffer.concat([...pending, piece]) : piece);
      pending = [];
      start = newline + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length) yield* emit(Buffer.concat(pending));
}
