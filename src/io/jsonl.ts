/**
 * JSONL in and out, built for long lines and many of them: input read in large chunks and split on
 * newlines by hand (readline is slow on megabyte lines); output written through one buffer to a temporary
 * file that is renamed into place only when complete, so an output file is complete or absent.
 */
import { closeSync, createReadStream, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

export interface Line {
  /** 1-based line number in its file. */
  number: number;
  text: string;
}

/** Lines of a file (or `-` for stdin), skipping blank ones, in order. */
export async function* readJsonl(path: string): AsyncGenerator<Line> {
  const stream = path === '-' ? process.stdin : createReadStream(path, { highWaterMark: 1 << 24 });
  let pending: Buffer | undefined;
  let number = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let buffer = pending ? Buffer.concat([pending, chunk]) : chunk;
    let start = 0;
    for (let newline = buffer.indexOf(10, start); newline >= 0; newline = buffer.indexOf(10, start)) {
      number++;
      const end = newline > start && buffer[newline - 1] === 13 ? newline - 1 : newline;
      if (end > start) yield { number, text: buffer.toString('utf8', start, end) };
      start = newline + 1;
    }
    pending = start < buffer.length ? buffer.subarray(start) : undefined;
    buffer = Buffer.alloc(0);
  }
  if (pending && pending.length) {
    number++;
    const text = pending.toString('utf8').replace(/\r$/, '');
    if (text.trim()) yield { number, text };
  }
}

/** Buffered line writer to a file (atomically, on `close`) or to stdout. */
export class JsonlWriter {
  private buffer = Buffer.allocUnsafe(1 << 22);
  private used = 0;
  private readonly fd: number;
  private readonly temporary?: string;
  private closed = false;

  constructor(private readonly path: string | undefined) {
    if (path === undefined || path === '-') {
      this.fd = 1;
    } else {
      this.temporary = `${path}.tmp-${process.pid}`;
      this.fd = openSync(this.temporary, 'w');
    }
  }

  /** Append raw text (callers add the newline). */
  write(text: string): void {
    const needed = Buffer.byteLength(text);
    this.reserve(needed);
    this.used += this.buffer.write(text, this.used);
  }

  /** Append `[m0,m1,…]` for a 0/1 mask without building a string. */
  writeMask(mask: ArrayLike<number>): void {
    this.reserve(mask.length * 2 + 2);
    const buffer = this.buffer;
    let at = this.used;
    buffer[at++] = 0x5b;
    for (let i = 0; i < mask.length; i++) {
      if (i > 0) buffer[at++] = 0x2c;
      buffer[at++] = 0x30 + mask[i];
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
    let at = 0;
    while (at < this.used) {
      try {
        at += writeSync(this.fd, this.buffer, at, this.used - at);
      } catch (error) {
        // stdout as a non-blocking pipe: wait for the reader and retry.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
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
      fsyncSync(this.fd);
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
