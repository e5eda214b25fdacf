/**
 * `tagmask mask --jobs N`: chunks of JSONL lines masked on N worker threads (src/mask-worker.ts), the output
 * written in input order, the same bytes as one thread writes. The main thread only reads, hands out and writes.
 * A chunk is one read's lines (8 MiB, or one longer line); chunk k goes to worker k mod N, and at most two
 * chunks per worker are in flight, so memory stays bounded whatever the input's length.
 */
import { Worker } from 'node:worker_threads';
import type { InputRecord } from './io/records.ts';
import type { OptionValues } from './scan/bind.ts';
import type { OutputOptions } from './io/mask-forms.ts';
import type { Progress, RunSummary } from './summary.ts';
import type { ByteTable } from './tokenizer/table.ts';

/** What a worker needs to open the same MaskerPool and write lines the same way. */
export interface WorkerSetup {
  grammar: string;
  /** The tokenizer.json path and the main thread's byte table (copied to each worker: nothing is read or hashed again). */
  tokenizer: string;
  table: ByteTable;
  options: OptionValues;
  output: OutputOptions;
  /** The input as messages name it. */
  where: string;
}

/** One chunk of lines for a worker: their bytes back to back, line k at `bytes[offsets[k] .. offsets[k + 1]]`. */
export interface Chunk {
  seq: number;
  bytes: Uint8Array<ArrayBuffer>;
  numbers: Int32Array;
  offsets: Int32Array;
  /** Lines that could not be read at all (too long), by index: their error. */
  errors?: Record<number, string>;
}

/** A worker's answer: a chunk's output, its log lines and counts; or why it failed (seq -1: the worker's start). */
export interface ChunkDone {
  seq: number;
  out?: Uint8Array<ArrayBuffer>;
  /** The chunk's input buffer, handed back for the next chunk. */
  input?: ArrayBuffer;
  logs?: string[];
  summary?: RunSummary;
  /** Wall ms the worker spent on the chunk. */
  busyMs?: number;
  error?: string;
}

/** Where a parallel run's time went (for the bench: per-worker throughput and the main thread's serial part). */
export interface JobsStats {
  jobs: number;
  tokens: number;
  /** Sum over chunks of the worker's wall time on it. */
  workerBusyMs: number;
  /** The main thread's time packing chunks and writing their output. */
  mainBusyMs: number;
  /** From the first chunk handed out to the last written. */
  wallMs: number;
}

/** Chunks in flight per worker: one being masked, one waiting, so a worker never waits for the reader. */
const IN_FLIGHT_PER_WORKER = 2;
/** The smallest chunk buffer: a read's worth (src/io/jsonl.ts reads 8 MiB). */
const CHUNK_BUFFER = (1 << 23) + (1 << 16);

export interface ParallelRun {
  jobs: number;
  setup: WorkerSetup;
  batches: AsyncIterable<InputRecord[]>;
  /** A chunk's output lines, in input order. */
  write(bytes: Uint8Array): void;
  log(line: string): void;
  summary: RunSummary;
  progress?: Progress;
  /** Called after each chunk is written (a stream's reader sees its lines). */
  written(): void;
  stats?(stats: JobsStats): void;
}

/** Mask every batch on `jobs` worker threads; resolves once all is written, rejects (and stops the workers) on a failure. */
export async function maskInParallel(run: ParallelRun): Promise<void> {
  const url = new URL(import.meta.url.endsWith('.ts') ? './mask-worker.ts' : './mask-worker.js', import.meta.url);
  const waiting = new Map<number, { resolve(done: ChunkDone): void; reject(error: Error): void }>();
  let failure: Error | undefined;
  const fail = (error: Error) => {
    failure ??= error;
    for (const { reject } of waiting.values()) reject(failure);
    waiting.clear();
  };
  let stopping = false;
  // Buffers go back and forth instead of being allocated per chunk: first-touched memory is slow on some
  // machines (a page fault per 4 KiB; measured here at ~1 s of CPU for 90 MB of input).
  const freeInputs: ArrayBuffer[] = [];
  const workers = Array.from({ length: run.jobs }, () => {
    const worker = new Worker(url, { workerData: { tagmaskMaskWorker: run.setup } });
    worker.on('message', (done: ChunkDone) => {
      if (done.input) freeInputs.push(done.input);
      if (done.seq < 0) { if (done.error !== undefined) fail(new Error(done.error)); return; }
      const entry = waiting.get(done.seq);
      waiting.delete(done.seq);
      if (done.error !== undefined) fail(new Error(`chunk ${done.seq}: ${done.error}`));
      else entry?.resolve(done);
    });
    worker.on('error', (error) => fail(error));
    worker.on('exit', (code) => { if (!stopping) fail(new Error(`a --jobs worker stopped (exit code ${code})`)); });
    return worker;
  });
  const results = new Map<number, Promise<ChunkDone>>();
  const bytesOf = new Map<number, number>();
  let seq = 0;
  let next = 0;
  let bytesDone = 0;
  let workerBusyMs = 0;
  let mainBusyMs = 0;
  let started = 0;
  const writeNext = async () => {
    const done = await results.get(next)!;
    const t0 = performance.now();
    results.delete(next);
    workerBusyMs += done.busyMs ?? 0;
    run.write(done.out!);
    // The output buffer goes back to its worker for a later chunk.
    const buffer = done.out!.buffer;
    workers[next % run.jobs].postMessage({ recycle: buffer }, [buffer]);
    for (const line of done.logs!) run.log(line);
    addSummary(run.summary, done.summary!);
    bytesDone += bytesOf.get(next)!;
    bytesOf.delete(next);
    next++;
    run.progress?.update(bytesDone, run.summary.rollouts + run.summary.failed, run.summary.tokens);
    run.written();
    mainBusyMs += performance.now() - t0;
  };
  try {
    for await (const batch of run.batches) {
      if (failure) throw failure;
      const t0 = performance.now();
      if (seq === 0) started = t0;
      const chunk = pack(seq, batch, freeInputs);
      bytesOf.set(seq, chunk.bytes.length + batch.length);
      const worker = workers[seq % run.jobs];
      results.set(seq, new Promise<ChunkDone>((resolve, reject) => {
        waiting.set(chunk.seq, { resolve, reject });
        worker.postMessage(chunk, [chunk.bytes.buffer]);
      }));
      // A rejection is seen when its turn comes to be written; until then it must not count as unhandled.
      results.get(seq)!.catch(() => {});
      seq++;
      mainBusyMs += performance.now() - t0;
      while (results.size >= IN_FLIGHT_PER_WORKER * run.jobs) await writeNext();
    }
    while (next < seq) await writeNext();
    if (failure) throw failure;
    run.stats?.({ jobs: run.jobs, tokens: run.summary.tokens, workerBusyMs, mainBusyMs, wallMs: started ? performance.now() - started : 0 });
  } finally {
    stopping = true;
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

/** A batch's line bytes copied back to back into one transferable buffer (a free one when one is big enough). */
function pack(seq: number, batch: InputRecord[], free: ArrayBuffer[]): Chunk {
  let total = 0;
  for (const item of batch) if (item.error === undefined && item.bytes) total += item.bytes.length;
  const k = free.findIndex((buffer) => buffer.byteLength >= total);
  const buffer = k >= 0 ? free.splice(k, 1)[0] : new ArrayBuffer(Math.max(total, CHUNK_BUFFER));
  const bytes = new Uint8Array(buffer, 0, total);
  const numbers = new Int32Array(batch.length);
  const offsets = new Int32Array(batch.length + 1);
  let errors: Record<number, string> | undefined;
  let at = 0;
  batch.forEach((item, k) => {
    numbers[k] = item.number;
    if (item.error !== undefined || !item.bytes) (errors ??= {})[k] = item.error ?? 'no bytes to read';
    else { bytes.set(item.bytes, at); at += item.bytes.length; }
    offsets[k + 1] = at;
  });
  return { seq, bytes, numbers, offsets, errors };
}

/** Add a chunk's counts into the run's. */
function addSummary(into: RunSummary, from: RunSummary): void {
  into.rollouts += from.rollouts;
  into.failed += from.failed;
  into.tokens += from.tokens;
  into.actionTokens += from.actionTokens;
  into.disagreeing += from.disagreeing;
  into.targetFrame += from.targetFrame;
  const add = (a: Map<string, number> | undefined, b: Map<string, number> | undefined) => { if (a && b) for (const [key, count] of b) a.set(key, (a.get(key) ?? 0) + count); };
  add(into.diagnostics, from.diagnostics);
  add(into.directions, from.directions);
  add(into.patterns, from.patterns);
  add(into.hints, from.hints);
  add(into.parts, from.parts);
}
