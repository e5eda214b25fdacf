/**
 * A worker thread of `tagmask mask --jobs N` (src/jobs.ts). It opens the same MaskerPool as the main thread,
 * masks each chunk of lines it is sent, in the order sent, the way one thread does (src/io/mask-lines.ts, the
 * general path for the other lines), and sends back the chunk's output bytes, log lines and counts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { MaskerPool } from './masker.ts';
import { ByteOut, MaskLines } from './io/mask-lines.ts';
import { chunkLines } from './io/chunks.ts';
import type { InputRecord } from './io/records.ts';
import { handleRecord, memorySink, type RecordContext } from './run.ts';
import { newSummary } from './summary.ts';
import { tokenizerFromTable } from './tokenizer/load.ts';
import { errorMessage } from './io/lines.ts';
import { threadCpuMs, type ChunkDone, type ChunkJob, type WorkerSetup } from './jobs.ts';

async function serve(port: NonNullable<typeof parentPort>, setup: WorkerSetup): Promise<void> {
  const cpu = () => (setup.stats ? threadCpuMs() : undefined);
  const since = (cpu0: number | undefined) => { const cpu1 = cpu(); return cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0; };
  const start = performance.now();
  let pool: MaskerPool;
  try {
    pool = await MaskerPool.open(setup.grammar, tokenizerFromTable(setup.tokenizer, setup.table), setup.options);
  } catch (error) {
    port.postMessage({ seq: -1, error: errorMessage(error) } satisfies ChunkDone);
    return;
  }
  const out = new ByteOut();
  const summary = newSummary();
  const logs: string[] = [];
  const context: RecordContext = { pool, sink: memorySink(out), summary, options: setup.output, mode: 'mask', log: (line) => logs.push(line), where: setup.where, plainMask: true };
  const lines = new MaskLines(pool, out, summary);
  const other = (item: InputRecord) => handleRecord(context, item);
  const drain = () => {};
  // Output buffers come back from the main thread once written; reused for later chunks (fresh memory is slow).
  const free: ArrayBuffer[] = [];
  port.on('message', (message: ChunkJob | { recycle: ArrayBuffer }) => {
    if ('recycle' in message) { free.push(message.recycle); return; }
    const { seq, chunk } = message;
    const t0 = performance.now();
    const cpu0 = cpu();
    try {
      const chunkSummary = newSummary();
      context.summary = chunkSummary;
      lines.summary = chunkSummary;
      logs.length = 0;
      lines.run(chunkLines(chunk), other, drain);
      // The chunk's bytes (the ByteOut is reused) into a buffer that is handed over, not copied again.
      const written = out.take();
      const k = free.findIndex((buffer) => buffer.byteLength >= written.length);
      // Those too small for this chunk's output are let go: at most the buffers in flight are kept.
      if (k < 0) free.length = 0;
      const buffer = k >= 0 ? free.splice(k, 1)[0] : new ArrayBuffer(Math.max(written.length, chunk.end));
      const done = new Uint8Array(buffer, 0, written.length);
      done.set(written);
      const input = chunk.buffer;
      port.postMessage({ seq, out: done, input, logs: [...logs], summary: chunkSummary, busyMs: performance.now() - t0, cpuMs: since(cpu0) } satisfies ChunkDone, input.byteLength ? [buffer, input] : [buffer]);
    } catch (error) {
      port.postMessage({ seq, error: errorMessage(error) } satisfies ChunkDone);
    }
  });
  port.postMessage({ seq: -1, busyMs: performance.now() - start, cpuMs: cpu() } satisfies ChunkDone);
}

if (parentPort && (workerData as { tagmaskMaskWorker?: WorkerSetup } | undefined)?.tagmaskMaskWorker) {
  await serve(parentPort, (workerData as { tagmaskMaskWorker: WorkerSetup }).tagmaskMaskWorker);
}
