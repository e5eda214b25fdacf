/**
 * JSONL in and out, built for long lines and many of them.
 *
 * Input is read synchronously into one reused buffer and split on newlines by hand: stream chunks plus
 * `Buffer.concat` land in fresh memory each time, which measured 7× slower on 94 MB (bench/README.md);
 * readline is slower still on megabyte lines. A line is handed out as a view into that buffer, valid until
 * the next line is asked for. Output goes through one buffer to a temporary file that is renamed into place
 * only when complete, so an output file is complete or absent.
 */
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, resolve } from 'node:path';
import { fileFormat } from './format.ts';
import { createGunzip, gzipSync } from 'node:zlib';
import { type Stats, closeSync, createReadStream, fstatSync, openSync, read, readSync, realpathSync, renameSync, rmSync, statSync, write, writeSync } from 'node:fs';

/**
 * Bytes read at a time. Small on purpose: the two read buffers are the CLI's largest fresh memory, and first-touched
 * memory is slow on some VMs (~4-10 ms per MiB on the 2-core bench machine, bench/README.md); 1 MiB reads took
 * ~15 % of the CPU time off `tagmask mask` on 20 M tokens against 8 MiB ones (paired runs).
 */
export const READ_CHUNK = 1 << 20;
const BUFFER = 1 << 22;
/** Bytes handed to `writeBytes` at once from this size on go to the output as they are, not through the buffer. */
const DIRECT_BYTES = 1 << 16;
/** Longest string written in one piece: at 3 bytes per unit it fits the buffer. */
const SLICE = BUFFER / 8;

/**
 * The longest line read: 256 MiB (a 200 MB rollout fits; a JavaScript string cannot hold 512 M characters). A
 * longer line is skipped as it streams past, never held, and is that line's error; the others go on.
 */
export const MAX_LINE_BYTES = 1 << 28;

/** One input line: its bytes (a view, valid until the next line is read) and its 1-based number; `error` when it could not be read (too long: no bytes). */
export class Line {
  constructor(readonly number: number, readonly bytes: Buffer, readonly error?: string) {}
  get text(): string { return this.bytes.toString('utf8'); }
}

/** The error of a line too long to hold (`readJsonl`'s and `--jobs`' readers say it alike). */
export const tooLong = (number: number, bytes: number, limit: number) => new Line(number, Buffer.alloc(0), `the line is ${bytes.toLocaleString('en-US')} bytes, longer than the ${limit.toLocaleString('en-US')} a line may be: skipped`);

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

/**
 * Splits what is read into lines, in two reused buffers taken in turn: the caller reads into one at `space()`
 * while the lines of the other are still in use, and takes the complete lines; a line longer than the buffer
 * grows it, and the buffer shrinks back after such a line so that one huge rollout does not keep its memory
 * for the rest of the run.
 */
export class LineSplitter {
  buffer: Buffer;
  /** The buffer read into before this one, whose lines may still be in use until the next `release()`. */
  private other: Buffer | undefined;
  /** `size`: the normal buffer size (tests use tiny ones, so lines outgrow it); `maxLine`: the longest line kept. */
  constructor(private readonly size = READ_CHUNK, private readonly maxLine = MAX_LINE_BYTES) {
    this.buffer = Buffer.allocUnsafe(size);
  }
  /** Bytes of an unfinished line kept at the front. */
  kept = 0;
  number = 0;
  /** Bytes of a too-long line skipped so far (-1: not skipping). */
  private skipped = -1;

  /** Where the next read goes; grows the buffer when one line fills it, up to the longest line kept. */
  space(): number {
    if (this.kept === this.buffer.length) {
      if (this.buffer.length >= this.maxLine) {
        // Too long: drop what is held and skip the rest of the line as it comes.
        this.skipped = this.kept;
        this.kept = 0;
        if (this.buffer.length > this.size) this.buffer = Buffer.allocUnsafe(this.size);
        return 0;
      }
      const bigger = Buffer.allocUnsafe(Math.min(this.buffer.length * 2, Math.max(this.maxLine, this.buffer.length)));
      this.buffer.copy(bigger, 0, 0, this.kept);
      this.buffer = bigger;
    }
    return this.kept;
  }

  /** `read` new bytes are in; returns the complete lines (views, valid until `release()`). At the end (`read` 0), the last unterminated line too. */
  lines(read: number): Line[] {
    const end = this.kept + read;
    const buffer = this.buffer;
    let start = 0;
    this.kept = 0;
    const out: Line[] = [];
    if (this.skipped >= 0) {
      const newline = buffer.subarray(0, end).indexOf(10);
      if (newline < 0 && read > 0) { this.skipped += end; return out; }
      this.number++;
      out.push(tooLong(this.number, this.skipped + (newline < 0 ? end : newline), this.maxLine));
      this.skipped = -1;
      if (newline < 0) return out;
      start = newline + 1;
    }
    // Search only what was read: past `end` the buffer holds stale bytes.
    const data = buffer.subarray(0, end);
    for (let newline = data.indexOf(10, start); newline >= 0; newline = data.indexOf(10, start)) {
      this.push(out, start, newline);
      start = newline + 1;
    }
    if (read === 0) {
      if (start < end) this.push(out, start, end);
      return out;
    }
    // The unfinished line moves to the front once the lines handed out are no longer used (`release`).
    this.unfinished = { start, end };
    return out;
  }

  private unfinished?: { start: number; end: number };

  /**
   * Called before the next read: the unfinished line moves to the front of the other buffer, which the next
   * read fills. The lines handed out last stay valid until the release after this one.
   */
  release(): void {
    const { start, end } = this.unfinished ?? { start: 0, end: 0 };
    this.unfinished = undefined;
    const kept = end - start;
    let next = this.other;
    // A long line is done: go back to the normal buffer size (and never read into one too small for what is kept).
    if (next === undefined || next.length < kept || (next.length > this.size && kept < this.size / 2)) next = Buffer.allocUnsafe(Math.max(this.size, kept));
    this.buffer.copy(next, 0, start, end);
    this.other = this.buffer.length > this.size && kept < this.size / 2 ? undefined : this.buffer;
    this.buffer = next;
    this.kept = kept;
  }

  private push(out: Line[], start: number, newline: number): void {
    pushLine(out, ++this.number, this.buffer, start, newline);
  }
}

/**
 * The line `buffer[start .. newline)`, numbered `number`, onto `out` unless blank (`LineSplitter` and the
 * `--jobs` workers split alike).
 */
export function pushLine(out: Line[], number: number, buffer: Buffer, start: number, newline: number): void {
  // Each line is a JSON text, which may begin with a UTF-8 byte order mark (RFC 8259 §8.1 lets readers
  // ignore it; Python's json.loads of bytes does): skipped, so both rollout readers see the same bytes.
  if (newline - start >= 3 && buffer[start] === 0xef && buffer[start + 1] === 0xbb && buffer[start + 2] === 0xbf) start += 3;
  let stop = newline;
  if (stop > start && buffer[stop - 1] === 13) stop--;
  if (!isBlank(buffer, start, stop)) out.push(new Line(number, buffer.subarray(start, stop)));
}

export function openInput(path: string): number {
  try {
    const fd = path === '-' ? 0 : openSync(path, 'r');
    if (fd !== 0 && fstatSync(fd).isDirectory()) { closeSync(fd); throw new InputError(`${path} is a folder, not a ${fileFormat(path) === 'jsonl.gz' ? 'gzip JSONL' : 'JSONL'} file`); }
    return fd;
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(`cannot read ${path}: ${(error as Error).message}`);
  }
}

/** The input cannot be opened or read at all (a usage problem, not a bad line). */
export class InputError extends Error {}

/**
 * Whether an input is a stream (stdin or a named pipe, a terminal, a socket) rather than a regular file: its
 * writer then flushes after each read, so a co-process sees each answer without closing its input.
 */
export function inputIsStream(path: string): boolean {
  try {
    const stat = path === '-' ? fstatSync(0) : statSync(path);
    return !stat.isFile();
  } catch {
    return false;
  }
}

/** Lines of a file (or `-` for stdin), skipping blank ones, in order. */
export function* readJsonl(path: string): Generator<Line> {
  const fd = openInput(path);
  const splitter = new LineSplitter();
  try {
    for (;;) {
      splitter.release();
      const at = splitter.space();
      const read = readSome(fd, splitter.buffer, at);
      yield* splitter.lines(read);
      if (read === 0) return;
    }
  } finally {
    if (fd !== 0) closeSync(fd);
  }
}

/**
 * The same lines, a read's worth at a time, read asynchronously: between reads the event loop runs, so a
 * signal (Ctrl-C, SIGTERM) is handled mid-run and the temporary output is removed. Each batch's lines
 * are valid until the next batch is asked for.
 */
export async function* readJsonlBatches(path: string, maxLine = MAX_LINE_BYTES, chunk = READ_CHUNK): AsyncGenerator<Line[]> {
  const fd = openInput(path);
  const splitter = new LineSplitter(chunk, maxLine);
  // The next read is under way (on libuv's thread pool) while the caller works on the lines of this one.
  let pending: Promise<number> | undefined;
  try {
    // space() first: it may replace the buffer with a bigger one, which is where the read must go (read into the
    // old, full one it would get 0 bytes, taken for the end of the input).
    for (pending = readInto(fd, splitter); ;) {
      const read = await pending;
      pending = undefined;
      const lines = splitter.lines(read);
      if (read === 0) {
        if (lines.length) yield lines;
        return;
      }
      splitter.release();
      pending = readInto(fd, splitter);
      if (lines.length) yield lines;
    }
  } finally {
    // Stopped early (an error, a closed output): the read under way finishes before its descriptor is closed.
    if (pending) await pending.catch(() => 0);
    if (fd !== 0) closeSync(fd);
  }
}

/** The next read of a splitter: into its buffer at `space()`, asked for first (it may grow the buffer). */
function readInto(fd: number, splitter: LineSplitter): Promise<number> {
  const at = splitter.space();
  return readSomeAsync(fd, splitter.buffer, at);
}

/** Read into `buffer` from `at` on libuv's thread pool; a non-blocking descriptor with nothing yet is waited for. */
export async function readSomeAsync(fd: number, buffer: Buffer, at: number): Promise<number> {
  for (;;) {
    try {
      return await new Promise<number>((resolve, reject) => read(fd, buffer, at, buffer.length - at, null, (error, bytes) => (error ? reject(error) : resolve(bytes))));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') { await new Promise((resolve) => setTimeout(resolve, 2)); continue; }
      if (code === 'EOF') return 0;
      throw error;
    }
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

/** Writing the output failed (disk full, I/O error): the run stops and the old output is kept. */
export class OutputError extends Error {
  constructor(readonly output: string, cause: Error) {
    super(`cannot write ${output}: ${cause.message}`);
  }
}

/** The reader of stdout went away (`tagmask … | head`): stop quietly, there is nobody to write for. */
export class OutputClosed extends Error {
  constructor() { super('the reader of the output closed it'); }
}

/** Temporary files of writers still open, removed if the process is stopped by a signal or exits early. */
const temporaries = new Set<string>();
let cleanupInstalled = false;

function removeTemporaries(): void {
  for (const file of temporaries) rmSync(file, { force: true });
  temporaries.clear();
}

function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', removeTemporaries);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, function stop() {
      removeTemporaries();
      // Die of the signal as if unhandled, so the parent (shell, CI runner) sees what happened.
      process.removeListener(signal, stop);
      process.kill(process.pid, signal);
    });
  }
}

/** Where a writer puts its bytes: straight into `path`, or into a temporary file renamed onto `target`. */
interface Destination { fd: number; name: string; temporary?: string; target?: string }

/**
 * Open the output. A regular file (or none yet) is written to a temporary file next to it and renamed into
 * place when complete, so it is complete or absent; through a symlink, the file it points to is replaced
 * and the link stays. Anything else (a FIFO, /dev/null, /dev/stdout, a terminal) is written through as it
 * is: replacing a device node or a pipe with a regular file would break it. A folder is a usage error.
 */
function openOutput(path: string | undefined, flag: string, mode = 0o666): Destination {
  if (path === undefined || path === '-') return { fd: 1, name: '<stdout>' };
  let stat;
  try {
    stat = statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new OutputError(path, error as Error);
  }
  if (stat?.isDirectory()) throw new OutputPathError(`${flag} ${path} is a folder: give a file name`);
  if (stat && isStdout(stat)) return { fd: 1, name: path };
  let target = path;
  if (stat?.isFile()) {
    // Through a symlink, the file it points to is replaced; a link that cannot be resolved (a /proc magic
    // link such as /dev/stdout) is written through instead, never replaced.
    try { target = realpathSync(path); } catch { target = ''; }
  }
  if (stat && (!stat.isFile() || !target || isSystemPath(resolve(path)) || isSystemPath(target))) {
    try {
      return { fd: openSync(path, 'w'), name: path };
    } catch (error) {
      throw new OutputError(path, error as Error);
    }
  }
  // Created exclusively (O_EXCL: a file or link planted under the name fails the open, never gets written
  // through) under a name nobody can guess ahead, hidden beside the target.
  const temporary = join(dirname(target), `.${basename(target)}.tmp-${randomBytes(8).toString('hex')}`);
  installCleanup();
  let fd: number;
  try {
    fd = openSync(temporary, 'wx', stat ? stat.mode & 0o7777 : mode);
  } catch (error) {
    // Not the random name: the folder is what the user can act on.
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new OutputPathError(`${flag} ${path}: cannot write in ${dirname(target)} (${code})`);
  }
  temporaries.add(temporary);
  return { fd, name: path, temporary, target };
}

/** Is this file our own stdout (`-o /dev/stdout`)? Then write to it as stdout: a socket cannot be opened by name. */
function isStdout(stat: Stats): boolean {
  try {
    const out = fstatSync(1);
    return out.dev === stat.dev && out.ino === stat.ino;
  } catch {
    return false;
  }
}

/** /dev/stdout, /dev/fd/N, /proc/self/fd/N: names of open files, which only a write through respects. */
const isSystemPath = (path: string) => path.startsWith('/dev/') || path.startsWith('/proc/');

/** The output path cannot be used at all (a folder): a usage error. */
export class OutputPathError extends Error {}

export interface WriterOptions {
  /** The flag that named the file, for messages (`-o`, `--html`). */
  flag?: string;
  /** Gzip what is written; by default, when the name ends in `.gz`. */
  gzip?: boolean;
  /** Permissions of a new file (before the umask); a replaced file keeps its own. Default 0o666. */
  mode?: number;
}

/**
 * Buffered writer to a file (atomically, on `close`) or to stdout: every file tagmask writes goes through it
 * (`-o` in any format, `--html`, `samples -o`, the byte-table cache), so all get the same output safety.
 */
export class JsonlWriter {
  private buffer = Buffer.allocUnsafe(BUFFER);
  private used = 0;
  private readonly destination: Destination;
  /** `.gz` output: each flushed buffer becomes one gzip member (a multi-member file gunzip reads whole). */
  private readonly gzip: boolean;
  /** Closed (renamed into place) or aborted: nothing more happens. */
  private finished = false;
  private failed?: Error;

  constructor(path: string | undefined, options: WriterOptions = {}) {
    this.gzip = options.gzip ?? fileFormat(path) === 'jsonl.gz';
    this.destination = openOutput(path, options.flag ?? '-o', options.mode);
  }

  /** Append raw text (callers add the newline). */
  write(text: string): void {
    // Strings are at most 3 bytes per UTF-16 unit: reserve that, skip measuring.
    if (text.length > SLICE) {
      // A long string (a huge line's spans) goes through in slices, so the buffer keeps its normal size.
      for (let at = 0; at < text.length;) {
        let end = Math.min(text.length, at + SLICE);
        if (end < text.length && (text.charCodeAt(end - 1) & 0xfc00) === 0xd800) end++; // never split a surrogate pair
        this.write(text.slice(at, end));
        at = end;
      }
      return;
    }
    this.reserve(text.length * 3);
    this.used += this.buffer.write(text, this.used);
  }

  /** Append raw bytes (a Parquet writer's output goes through here, to get the same output safety). */
  writeBytes(bytes: Uint8Array): void {
    if (!this.gzip && bytes.length >= DIRECT_BYTES) {
      // A chunk's worth (the fast mask path's lines) goes out as it is, after what is buffered: no copy, and the
      // buffer's pages are never touched (fresh memory is slow).
      this.flush();
      this.send(bytes, bytes.length);
      return;
    }
    for (let at = 0; at < bytes.length;) {
      if (this.used === this.buffer.length) this.flush();
      const take = Math.min(bytes.length - at, this.buffer.length - this.used);
      this.buffer.set(bytes.subarray(at, at + take), this.used);
      this.used += take;
      at += take;
    }
  }

  /** Append `[m0,m1,…]` for a 0/1 mask, run by run, flushing as it goes. */
  writeMask(mask: ArrayLike<number>): void {
    const n = mask.length;
    this.reserve(40);
    let buffer = this.buffer;
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
        if (at + 34 > buffer.length) { this.used = at; this.flush(); buffer = this.buffer; at = 0; }
        const digit = 0x30 + value;
        for (let k = i; k < end; k++) { buffer[at++] = 0x2c; buffer[at++] = digit; }
      } else for (let count = end - i; count > 0; count -= RUN) {
        if (at + RUN * 2 > buffer.length) { this.used = at; this.flush(); buffer = this.buffer; at = 0; }
        const take = count < RUN ? count : RUN;
        RUNS[value].copy(buffer, at, 0, take * 2);
        at += take * 2;
      }
      i = end;
    }
    if (at + 1 > buffer.length) { this.used = at; this.flush(); buffer = this.buffer; at = 0; }
    buffer[at++] = 0x5d;
    this.used = at;
  }

  /**
   * Hand what is buffered to the output now, when it is written through (stdout, a FIFO, a device): a reader
   * at the other end of a pipe sees the lines so far. A temporary file is only flushed when full or closed.
   */
  flushThrough(): void {
    if (this.finished || this.destination.temporary !== undefined || this.used === 0) return;
    this.flush();
  }

  private reserve(bytes: number): void {
    if (this.used + bytes <= this.buffer.length) return;
    this.flush();
    if (bytes > this.buffer.length) this.buffer = Buffer.allocUnsafe(bytes);
  }

  private flush(): void {
    if (this.failed) throw this.failed;
    const data = this.gzip && this.used > 0 ? gzipSync(this.buffer.subarray(0, this.used)) : this.buffer;
    const length = this.gzip ? (this.used > 0 ? data.length : 0) : this.used;
    this.send(data, length);
    this.used = 0;
    // A huge line grew the buffer: give the memory back.
    if (this.buffer.length > BUFFER) this.buffer = Buffer.allocUnsafe(BUFFER);
  }

  /** Write `data[0 .. length)` to the output, whole. */
  private send(data: Uint8Array, length: number): void {
    if (this.failed) throw this.failed;
    let at = 0;
    while (at < length) {
      try {
        at += writeSync(this.destination.fd, data, at, length - at);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // stdout as a non-blocking pipe: wait for the reader and retry.
        if (code === 'EAGAIN') { pause(); continue; }
        throw this.failure(error as NodeJS.ErrnoException);
      }
    }
  }

  /** A write error ends the run: what was written so far is never offered as output. */
  private failure(error: NodeJS.ErrnoException): Error {
    this.failed = error.code === 'EPIPE' && this.destination.fd === 1 ? new OutputClosed() : new OutputError(this.destination.name, error);
    return this.failed;
  }

  /**
   * Append raw bytes, written on libuv's thread pool while this thread goes on (`mask --jobs`, whose main thread
   * is the run's serial part: copying output into the page cache was over half of it). What is buffered goes
   * first; resolves once all is written. A caller waits for each call before the next and writes nothing else
   * meanwhile. Gzip output is compressed here, as `writeBytes` does.
   */
  async writeBytesAsync(bytes: Uint8Array): Promise<void> {
    if (this.gzip) { this.writeBytes(bytes); return; }
    this.flush();
    const fd = this.destination.fd;
    for (let at = 0; at < bytes.length;) {
      if (this.failed) throw this.failed;
      try {
        at += await new Promise<number>((resolve, reject) => write(fd, bytes, at, bytes.length - at, null, (error, written) => (error ? reject(error) : resolve(written))));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') { await new Promise((resolve) => setTimeout(resolve, 2)); continue; }
        throw this.failure(error as NodeJS.ErrnoException);
      }
    }
  }

  /** Finish: flush, and move the temporary file into place. */
  close(): void {
    if (this.finished) return;
    this.flush();
    const { fd, temporary, target, name } = this.destination;
    if (fd === 1) { this.finished = true; return; }
    try {
      closeSync(fd);
      // The rename is what makes the output complete or absent for its readers.
      if (temporary) renameSync(temporary, target!);
    } catch (error) {
      if (temporary) rmSync(temporary, { force: true });
      throw new OutputError(name, error as Error);
    } finally {
      this.finished = true;
      if (temporary) temporaries.delete(temporary);
    }
  }

  /** Give up: nothing reaches the output path. */
  abort(): void {
    if (this.finished) return;
    this.finished = true;
    const { fd, temporary } = this.destination;
    if (fd !== 1) { try { closeSync(fd); } catch { /* already failing */ } }
    if (temporary) {
      rmSync(temporary, { force: true });
      temporaries.delete(temporary);
    }
  }
}

/**
 * Lines of a gzip-compressed JSONL file (`.jsonl.gz`), streamed through node:zlib: only the current chunk
 * and the unfinished line are held. Lines are numbered and blank ones skipped as `readJsonl` does.
 */
export async function* readJsonlGz(path: string, maxLine = MAX_LINE_BYTES): AsyncGenerator<Line> {
  // Opened here, synchronously: a missing file or a folder is an InputError (exit 2 with a message), never a
  // stream's unhandled 'error' event.
  const fd = openInput(path);
  const stream = (fd === 0 ? process.stdin : createReadStream('', { fd })).pipe(createGunzip());
  // The unfinished line, in pieces: a line longer than a chunk is joined once, not once per chunk.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** Bytes of a too-long line skipped so far (-1: not skipping): a gzip bomb's one endless line is never held. */
  let skipped = -1;
  let number = 0;
  const emit = function* (bytes: Buffer): Generator<Line> {
    number++;
    let begin = 0;
    if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) begin = 3;
    let stop = bytes.length;
    if (stop > begin && bytes[stop - 1] === 13) stop--;
    if (!isBlank(bytes, begin, stop)) yield new Line(number, bytes.subarray(begin, stop));
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline >= 0; newline = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, newline);
      if (skipped >= 0) {
        yield tooLong(++number, skipped + piece.length, maxLine);
        skipped = -1;
      } else if (pendingBytes + piece.length > maxLine) {
        yield tooLong(++number, pendingBytes + piece.length, maxLine);
      } else yield* emit(pending.length ? Buffer.concat([...pending, piece]) : piece);
      pending = [];
      pendingBytes = 0;
      start = newline + 1;
    }
    const rest = chunk.length - start;
    if (rest <= 0) continue;
    if (skipped >= 0) skipped += rest;
    else if (pendingBytes + rest > maxLine) { skipped = pendingBytes + rest; pending = []; pendingBytes = 0; }
    else { pending.push(chunk.subarray(start)); pendingBytes += rest; }
  }
  if (skipped >= 0) yield tooLong(++number, skipped, maxLine);
  else if (pending.length) yield* emit(Buffer.concat(pending));
}
