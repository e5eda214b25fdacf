/**
 * `tagmask mask --jobs N`: chunks of JSONL lines masked on N worker threads (src/mask-worker.ts), the output
 * written in input order, the same bytes as one thread writes. The main thread reads each chunk straight into
 * a buffer that it hands (transfers) to a worker without copying its lines (src/io/chunks.ts), and writes each
 * chunk's output, a buffer the worker hands back, as soon as every chunk before it is written. A chunk is one
 * read's whole lines (1 MiB, or one longer line); it goes to the worker with the fewest in flight, and at most
 * two chunks per worker are in flight, so memory stays bounded whatever the input's length.
 */
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { ChunkBuffers, readLineChunks, type LineChunk } from './io/chunks.ts';
import { READ_CHUNK } from './io/jsonl.ts';
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
  /** Measure each chunk's thread CPU time (for the bench). */
  stats?: boolean;
}

/** A chunk for a worker: its place in the output and its lines. */
export interface ChunkJob { seq: number; chunk: LineChunk }

/** A worker's answer: a chunk's output, its log lines and counts; or why it failed (seq -1: the worker's start). */
export interface ChunkDone {
  seq: number;
  out?: Uint8Array<ArrayBuffer>;
  /** The chunk's input buffer, handed back to be read into again. */
  input?: ArrayBuffer;
  logs?: string[];
  summary?: RunSummary;
  /** Wall ms the worker spent on the chunk (or on its start, for seq -1). */
  busyMs?: number;
  /** The worker thread's CPU ms on the chunk (or on its start), where the system tells it. */
  cpuMs?: number;
  error?: string;
}

/** Where a parallel run's time went (for the bench: what a worker and the main thread cost per token). */
export interface JobsStats {
  jobs: number;
  tokens: number;
  /** Sums over chunks of the worker's wall and thread CPU time on it. */
  workerBusyMs: number;
  workerCpuMs?: number;
  /** Sum over workers of the thread CPU time of their start (grammar, tables), before the first chunk. */
  workerStartCpuMs?: number;
  /** The main thread's CPU time from the first read to the last write (reading, handing out, writing in order). */
  mainCpuMs?: number;
  /** The main thread's CPU time since it started (its start, the grammar and tables, and the above). */
  mainThreadCpuMs?: number;
  /** Wall time of the output's writes, one after another (on libuv's thread pool: a serial stage of its own). */
  writeMs: number;
  /** From the first read to the last chunk written. */
  wallMs: number;
}

/** Chunks in flight per worker: one being masked, one waiting, so a worker never waits for the reader. */
const IN_FLIGHT_PER_WORKER = 2;
/**
 * A chunk's buffer: a read's worth (src/io/jsonl.ts READ_CHUNK, 1 MiB: ~0.25 M tokens of ids, ~8 ms of a worker's
 * time), small enough that the buffers in flight (2 per worker) cost little fresh memory, large enough that a
 * hand-off's cost is noise. Against 2 MiB, paired (3 rounds, --jobs 2, 20 M tokens): the same CPU (1.00×,
 * 0.94-1.00), wall 0.95× (0.79-1.03), peak memory 130 MB against 143.
 */
const CHUNK_BYTES = READ_CHUNK;

export interface ParallelRun {
  jobs: number;
  setup: WorkerSetup;
  /** A JSONL file, or `-` for stdin. */
  input: string;
  /** A chunk's output lines, in input order; a promise: the next write waits for it (the main thread does not). */
  write(bytes: Uint8Array): void | Promise<void>;
  log(line: string): void;
  summary: RunSummary;
  progress?: Progress;
  /** Called after each chunk is written (a stream's reader sees its lines). */
  written(): void;
  stats?(stats: JobsStats): void;
}

/** This thread's CPU time so far, in ms (Linux: /proc/thread-self/schedstat, ns on the CPU); undefined elsewhere. */
export function threadCpuMs(): number | undefined {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** Mask every line on `jobs` worker threads; resolves once all is written, rejects (and stops the workers) on a failure. */
export async function maskInParallel(run: ParallelRun): Promise<void> {
  const url = new URL(import.meta.url.endsWith('.ts') ? './mask-worker.ts' : './mask-worker.js', import.meta.url);
  const buffers = new ChunkBuffers(CHUNK_BYTES);
  let failure: Error | undefined;
  /** The main loop's wait for a free slot (or the last chunk written, or a failure). */
  let wake: (() => void) | undefined;
  const rouse = () => { const resolve = wake; wake = undefined; resolve?.(); };
  const fail = (error: Error) => { failure ??= error; rouse(); };
  const sleep = () => new Promise<void>((resolve) => { wake = resolve; });
  let stopping = false;
  /** Chunks done by the workers and not yet written, by seq; who masked each, and its lines (for messages). */
  const ready = new Map<number, ChunkDone>();
  const sent = new Map<number, { worker: number; bytes: number; lines: string }>();
  const inFlight = new Int32Array(run.jobs);
  let seq = 0;
  let next = 0;
  let bytesDone = 0;
  let workerBusyMs = 0;
  let writeMs = 0;
  let workerCpuMs: number | undefined = run.setup.stats ? 0 : undefined;
  let workerStartCpuMs: number | undefined = run.setup.stats ? 0 : undefined;
  const addCpu = (sum: number | undefined, ms: number | undefined) => (sum === undefined || ms === undefined ? undefined : sum + ms);
  const workers: Worker[] = [];
  /** Chunks whose output is written (`next` counts those handed to the writer). */
  let written = 0;
  /** The writes, one after another: each chunk's waits for the one before. */
  let writing: Promise<void> = Promise.resolve();
  // Each chunk's output goes out once every chunk before it has: in input order, as soon as it can. Its log
  // lines and counts are taken now; its bytes are written while the main thread goes on handing out chunks.
  const writeReady = () => {
    for (let done = ready.get(next); done; done = ready.get(next)) {
      ready.delete(next);
      const { worker, bytes } = sent.get(next)!;
      sent.delete(next);
      next++;
      workerBusyMs += done.busyMs ?? 0;
      workerCpuMs = addCpu(workerCpuMs, done.cpuMs);
      for (const line of done.logs!) run.log(line);
      addSummary(run.summary, done.summary!);
      const out = done.out!;
      let started = 0;
      writing = writing.then(() => { started = performance.now(); return run.write(out); }).then(() => {
        writeMs += performance.now() - started;
        // The output buffer goes back to its worker for a later chunk.
        workers[worker].postMessage({ recycle: out.buffer }, [out.buffer]);
        bytesDone += bytes;
        written++;
        run.progress?.update(bytesDone, run.summary.rollouts + run.summary.failed, run.summary.tokens);
        run.written();
        rouse();
      });
      writing.catch((error: Error) => fail(error));
    }
  };
  for (let k = 0; k < run.jobs; k++) {
    const worker = new Worker(url, { workerData: { tagmaskMaskWorker: run.setup } });
    worker.on('message', (done: ChunkDone) => {
      if (done.input) buffers.give(done.input);
      if (done.seq < 0) {
        if (done.error !== undefined) fail(new Error(done.error));
        workerStartCpuMs = addCpu(workerStartCpuMs, done.cpuMs);
        return;
      }
      if (failure) return;
      inFlight[k]--;
      if (done.error !== undefined) { fail(new Error(`${run.setup.where}: ${sent.get(done.seq)?.lines}: ${done.error}`)); return; }
      ready.set(done.seq, done);
      try {
        writeReady();
      } catch (error) {
        fail(error as Error);
      }
      rouse();
    });
    worker.on('error', (error) => fail(error));
    worker.on('exit', (code) => { if (!stopping) fail(new Error(`a --jobs worker stopped (exit code ${code})`)); });
    workers.push(worker);
  }
  const mainCpu0 = run.setup.stats ? threadCpuMs() : undefined;
  const started = performance.now();
  try {
    for await (const chunk of readLineChunks(run.input, buffers)) {
      if (failure) break;
      // The least busy worker: another process's load slows one core, not the run.
      let worker = 0;
      for (let k = 1; k < run.jobs; k++) if (inFlight[k] < inFlight[worker]) worker = k;
      inFlight[worker]++;
      const last = chunk.first + chunk.lines - 1;
      sent.set(seq, { worker, bytes: chunk.bytes, lines: last > chunk.first ? `lines ${chunk.first}-${last}` : `line ${chunk.first}` });
      workers[worker].postMessage({ seq, chunk } satisfies ChunkJob, chunk.buffer.byteLength ? [chunk.buffer] : []);
      seq++;
      // Chunks not yet written count as in flight: memory stays bounded while the output is slow.
      while (!failure && seq - written >= IN_FLIGHT_PER_WORKER * run.jobs) await sleep();
    }
    while (!failure && written < seq) await sleep();
    if (failure) throw failure;
    const mainCpu1 = mainCpu0 === undefined ? undefined : threadCpuMs();
    run.stats?.({
      jobs: run.jobs, tokens: run.summary.tokens, workerBusyMs, workerCpuMs, workerStartCpuMs,
      mainCpuMs: mainCpu1 === undefined ? undefined : mainCpu1 - mainCpu0!, mainThreadCpuMs: mainCpu1, writeMs, wallMs: performance.now() - started,
    });
  } finally {
    // A write under way finishes before the caller closes (or removes) the output.
    await writing.catch(() => {});
    stopping = true;
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
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
