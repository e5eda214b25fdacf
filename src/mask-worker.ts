/**
 * A worker thread of `tagmask mask --jobs N` (src/jobs.ts). It opens the same MaskerPool as the main thread,
 * masks each chunk of lines it is sent, in the order sent, the way one thread does (src/io/mask-lines.ts, the
 * general path for the other lines), and sends back the chunk's output bytes, log lines and counts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { MaskerPool } from './masker.ts';
import { ByteOut, MaskLines } from './io/mask-lines.ts';
import type { InputRecord } from './io/records.ts';
import { handleRecord, memorySink, type RecordContext } from './run.ts';
import { newSummary } from './summary.ts';
import { tokenizerFromTable } from './tokenizer/load.ts';
import { errorMessage } from './io/lines.ts';
import type { Chunk, ChunkDone, WorkerSetup } from './jobs.ts';

async function serve(port: NonNullable<typeof parentPort>, setup: WorkerSetup): Promise<void> {
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
  // Output buffers come back from the main thread once written; reused for later chunks.
  const free: ArrayBuffer[] = [];
  port.on('message', (message: Chunk | { recycle: ArrayBuffer }) => {
    if ('recycle' in message) { free.push(message.recycle); return; }
    const chunk = message;
    const t0 = performance.now();
    try {
      const items: InputRecord[] = [];
      const bytes = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
      for (let k = 0; k < chunk.numbers.length; k++) {
        const error = chunk.errors?.[k];
        items.push(error !== undefined ? { number: chunk.numbers[k], error } : { number: chunk.numbers[k], bytes: bytes.subarray(chunk.offsets[k], chunk.offsets[k + 1]) });
      }
      const chunkSummary = newSummary();
      context.summary = chunkSummary;
      lines.summary = chunkSummary;
      logs.length = 0;
      lines.run(items, other, drain);
      // A copy of the chunk's bytes (the ByteOut is reused) into a buffer that is handed over, not copied again.
      const written = out.take();
      const k = free.findIndex((buffer) => buffer.byteLength >= written.length);
      const buffer = k >= 0 ? free.splice(k, 1)[0] : new ArrayBuffer(Math.max(written.length, 1 << 23));
      const done = new Uint8Array(buffer, 0, written.length);
      done.set(written);
      const input = chunk.bytes.buffer;
      port.postMessage({ seq: chunk.seq, out: done, input, logs: [...logs], summary: chunkSummary, busyMs: performance.now() - t0 } satisfies ChunkDone, [buffer, input]);
    } catch (error) {
      port.postMessage({ seq: chunk.seq, error: errorMessage(error) } satisfies ChunkDone);
    }
  });
  port.postMessage({ seq: -1 } satisfies ChunkDone);
}

if (parentPort && (workerData as { tagmaskMaskWorker?: WorkerSetup } | undefined)?.tagmaskMaskWorker) {
  await serve(parentPort, (workerData as { tagmaskMaskWorker: WorkerSetup }).tagmaskMaskWorker);
}
