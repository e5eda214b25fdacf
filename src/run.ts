/**
 * Files through the library, line by line: `mask`/`check` (rollouts in, masks or verdicts out) and
 * `merge` (trajectories in, datums out). A bad line yields an output line with "error" and a message
 * naming the line; the others go on. What is said to people goes through `log`, worded by src/report.
 */
import type { MaskResult } from './masker.ts';
import type { Frame } from './conformance.ts';
import { inputIsStream, JsonlWriter, OutputClosed, OutputError } from './io/jsonl.ts';
import { generalRecord, readRecord, readRecordBatches, recordId, recordText, type InputRecord } from './io/records.ts';
import { ByteOut, MaskLines, scannedNeedsResult, writeSpans, type MaskedRow, type TextOut } from './io/mask-lines.ts';
import { maskInParallel, threadCpuMs } from './jobs.ts';
import { errorLine, idJson, idOf, idText, errorMessage, writable, writeMaskLine } from './io/lines.ts';
import { FlagBytes, JsonBytes, parquetColumns, ParquetRowWriter, ParquetValueError, type DeclaredColumn } from './io/parquet.ts';
import { jsonText } from './io/json.ts';
import { fileFormat } from './io/format.ts';
import { maskPrepared, prepareRollout, type Prepared } from './io/prepare.ts';
import { auditPattern, auditPrepared, optionHints } from './io/audit.ts';
import { actionRuns, spansWithChars, tokenCharOffsets, weighted, type OutputOptions } from './io/mask-forms.ts';
import { givenInStream, writeBackShaped } from './io/shapes.ts';
import { datumJsonLine, datumRow, parseTrajectoryLine } from './io/trajectory.ts';
import { auditExtension, trajectoryToData } from './merge.ts';
import { formatDisagreement, formatFrame, formatHints, formatPattern, formatSplit } from './report/text.ts';
import type { ByteTable } from './tokenizer/table.ts';
import type { MaskerPool } from './masker.ts';
import { hintFlag, newSummary, record, type Mode, type Progress, type RunSummary } from './summary.ts';
import type { HtmlReport } from './report/html.ts';

// Where they are declared (summary.ts, io/mask-forms.ts), so that jobs.ts needs nothing from this module.
export type { OutputOptions, Progress };

/** Where results go: JSON lines (plain or gzip) or Parquet rows. */
export interface Sink {
  /** JSON lines go out here, a piece at a time (absent for Parquet). */
  json?: TextOut;
  /** Whole output lines as bytes (the batched mask path's), after what `json` holds. */
  bytes?(data: Uint8Array): void;
  /** The same, written while this thread goes on (`--jobs`); resolves once written. */
  bytesAsync?(data: Uint8Array): Promise<void>;
  /** An output object: its id as read (Parquet keeps its type) and as JSON (`idJson`), then the other fields. */
  write(id: unknown, idText: string, rest: Record<string, unknown>): void;
  /**
   * Rows for the batched mask path (Parquet): what takes each rollout `maskBatch` masked, the same row as
   * `write` gets from the general path for it. Counts into `summary`.
   */
  maskedRows?(summary: RunSummary): MaskedRow;
  /** A sink that takes each masked rollout itself (`show`'s text) instead of output fields; mask mode only. */
  rollout?(prepared: Prepared, result: MaskResult): void;
  error(id: unknown, line: number, message: string): void;
  /** An input line written back as it is (`--out-format`): its own fields, no id added. */
  raw(value: Record<string, unknown>): void;
  /** What is written so far goes out now (a stream's reader waits for it); a no-op for Parquet and temporary files. */
  flush(): void;
  close(): void;
  abort(): void;
}

/** The columns a command writes (after `id`), declared before the first row so that Parquet output holds every one. */
const LINE_ERROR: DeclaredColumn[] = [{ name: 'line', kind: 'int' }, { name: 'error', kind: 'string' }];
const MASK_COLUMNS = (options: OutputOptions): DeclaredColumn[] => [
  options.maskFormat === 'runs' ? { name: 'runs', kind: 'json' } : options.observationWeight !== undefined ? { name: 'weights', kind: 'floats' } : { name: 'mask', kind: 'flags' },
  { name: 'tokens', kind: 'ids' }, { name: 'spans', kind: 'json' }, { name: 'diagnostics', kind: 'json' },
];
const CHECK_COLUMNS: DeclaredColumn[] = [
  { name: 'agree', kind: 'bool' }, { name: 'tokens', kind: 'int' }, { name: 'shape', kind: 'string' }, { name: 'frame', kind: 'string' },
  { name: 'field', kind: 'string' }, { name: 'pattern', kind: 'json' }, { name: 'disagreements', kind: 'json' }, { name: 'diagnostics', kind: 'json' },
  { name: 'hints', kind: 'json' },
];
const MERGE_COLUMNS: DeclaredColumn[] = [
  { name: 'datum', kind: 'int' }, { name: 'tokens', kind: 'ids' }, { name: 'target_tokens', kind: 'ids' },
  { name: 'logprobs', kind: 'float32s' }, { name: 'advantages', kind: 'float32s' }, { name: 'mask', kind: 'float32s' },
];

/**
 * Open the output. Parquet output declares its columns before the first row: the command's own (`own`), or
 * with `'input'` (`--out-format`) the Parquet input's columns as they are; `id` takes the Parquet input's type.
 */
async function openSink(output: string | undefined, input: string, own: DeclaredColumn[] | 'input'): Promise<Sink> {
  if (fileFormat(output) === 'parquet') {
    const inputColumns = input !== '-' && fileFormat(input) === 'parquet' ? await parquetColumns(input) : undefined;
    let declared: DeclaredColumn[];
    if (own === 'input') declared = inputColumns ?? [];
    else {
      const id = inputColumns?.find((column) => column.name === 'id');
      declared = [id ?? { name: 'id', infer: true }, ...own];
    }
    for (const column of LINE_ERROR) if (!declared.some((item) => item.name === column.name)) declared.push(column);
    const rows = await ParquetRowWriter.open(output!, declared);
    return {
      write: (id, _idText, rest) => rows.write({ id, ...rest }),
      maskedRows: (summary) => maskedRows(rows, summary),
      error: (id, line, message) => {
        // An error row always goes out: with its id where the id fits the id column, else without.
        try { rows.write({ id: writable(id) ?? null, line, error: message }); } catch (error) {
          if (!(error instanceof ParquetValueError)) throw error;
          rows.write({ line, error: message });
        }
      },
      raw: (value) => rows.write(value),
      flush: () => {},
      close: () => rows.close(),
      abort: () => rows.abort(),
    };
  }
  const writer = new JsonlWriter(output);
  return {
    json: writer,
    bytes: (data) => writer.writeBytes(data),
    bytesAsync: (data) => writer.writeBytesAsync(data),
    write: (_id, idText, rest) => writer.write(`{"id":${idText},${JSON.stringify(rest).slice(1)}\n`),
    error: (id, line, message) => writer.write(errorLine(id, line, message)),
    raw: (value) => writer.write(`${jsonText(value)}\n`),
    flush: () => writer.flushThrough(),
    close: () => writer.close(),
    abort: () => writer.abort(),
  };
}

/** An empty list of diagnostics, as the json column holds it. */
const NO_DIAGNOSTICS = new JsonBytes(new TextEncoder().encode('[]'));

/**
 * The batched mask path's rows, for the output columns MASK_COLUMNS declares in the default mask form: the mask
 * lent from the batch's buffer, the spans' JSON written straight from the scan (what jsonText gives for
 * `mask()`'s spans), no per-rollout objects; a rollout with a diagnostic or tag attributes through `result()`,
 * as the general path writes it.
 */
function maskedRows(rows: ParquetRowWriter, summary: RunSummary): MaskedRow {
  const spans = new ByteOut(1 << 12);
  return (id, scanned, heads) => {
    const n = scanned.tokens.length;
    if (scannedNeedsResult(scanned)) {
      const result = scanned.result();
      rows.write({ id, mask: result.mask, spans: result.spans, diagnostics: result.diagnostics });
      record(summary, result);
      return;
    }
    spans.used = 0;
    spans.write('[');
    const actionTokens = writeSpans(spans, heads, scanned);
    spans.write(']');
    rows.write({ id, mask: new FlagBytes(scanned.mask.subarray(scanned.from, scanned.from + n)), spans: new JsonBytes(spans.buffer.subarray(0, spans.used)), diagnostics: NO_DIAGNOSTICS });
    summary.rollouts++;
    summary.tokens += n;
    summary.actionTokens += actionTokens;
  };
}

/** A sink into memory: a chunk's JSON lines, as bytes (what a worker of `--jobs` sends back). */
export function memorySink(out: ByteOut): Sink {
  return {
    json: out,
    bytes: (data) => out.bytes(data),
    write: (_id, idText, rest) => out.write(`{"id":${idText},${JSON.stringify(rest).slice(1)}\n`),
    error: (id, line, message) => out.write(errorLine(id, line, message)),
    raw: (value) => out.write(`${jsonText(value)}\n`),
    flush: () => {},
    close: () => {},
    abort: () => {},
  };
}

/** tagmask's output for one masked rollout, in the mask form asked for. */
function maskFields(table: ByteTable, prepared: Prepared, result: MaskResult, options: OutputOptions, typed = false): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (options.maskFormat === 'runs') out.runs = actionRuns(result.mask);
  else if (options.observationWeight !== undefined) out.weights = weighted(result.mask, options.observationWeight);
  // Parquet takes the mask as bytes (a copy: the masker may reuse its buffer); JSON needs an array.
  else out.mask = typed ? result.mask.slice() : Array.from(result.mask);
  // Text and messages rollouts were tokenized here: their ids go out with the mask.
  if (prepared.source !== undefined) out.tokens = Array.from(prepared.rollout.tokens);
  const offsets = options.charSpans && prepared.source !== undefined ? tokenCharOffsets(table, prepared.rollout.tokens, prepared.source) : undefined;
  out.spans = options.charSpans ? spansWithChars(result.spans, offsets) : result.spans;
  out.diagnostics = result.diagnostics;
  return out;
}

/** A mask as `--out-format` writes it into the framework's field: 0/1, or weights with `--observation-weight`. */
const outMask = (mask: Uint8Array, options: OutputOptions): ArrayLike<number> => (options.observationWeight !== undefined ? weighted(mask, options.observationWeight) : mask);

/** What `runRollouts` reads, writes and tells: named, since most callers leave most of them out. */
export interface RunOptions extends OutputOptions {
  /** A file (JSONL, .jsonl.gz or Parquet) or `-` for stdin. */
  input: string;
  /** A file (JSONL, .jsonl.gz or Parquet; written whole or not at all), or stdout when left out. */
  output?: string;
  /** `mask` (masks out) or `check` (verdicts on the masks the rollouts bring); `mask` when left out. */
  mode?: Mode;
  /** Messages for people (a failed line, a disagreement), one line each, without the newline. */
  log?: (line: string) => void;
  /** Every rollout also goes onto this page. */
  html?: HtmlReport;
  progress?: Progress;
  /**
   * Worker threads masking plain JSONL lines into JSONL masks (`--jobs N`); 1 (the default) masks on this
   * thread. The output is the same bytes either way. Other runs (check, Parquet, gzip, other mask forms, a
   * pool not opened with `MaskerPool.open`) run on this thread.
   */
  jobs?: number;
  /** Where results go instead of `output` (`show` prints each rollout as text through its own). */
  sink?: Sink;
  /** Only the rollouts whose id (as text) is this: the others are read but not masked, written or counted. */
  only?: string;
}

const silent = (): void => {};

/** What handling one record needs: the run's pool, sink, summary and settings. */
export interface RecordContext {
  pool: MaskerPool;
  sink: Sink;
  summary: RunSummary;
  options: OutputOptions;
  mode: Mode;
  log: (line: string) => void;
  html?: HtmlReport;
  /** The input as messages name it (`<stdin>` for `-`). */
  where: string;
  /** Mask lines go out through `writeMaskLine` (the default form, JSONL). */
  plainMask: boolean;
  /** See RunOptions.only. */
  only?: string;
}

/** One record the general way: read in its shape, prepared, masked or checked, written (or its error). */
export function handleRecord(context: RecordContext, item: InputRecord): void {
  const { pool, sink, summary, options, mode, log, html, where, plainMask, only } = context;
  const table = pool.tokenizer.table;
  const source = `${where}:${item.number}`;
  let rolloutId: unknown;
  try {
    const { line, value } = readRecord(item, options.format, mode === 'check', mode === 'mask' && options.outFormat);
    // Every rollout of the record is masked before anything is written: a failure writes nothing half-done.
    const done: Array<{ prepared: Prepared; result: MaskResult; id: string }> = [];
    for (const rollout of line.rollouts) {
      if (only !== undefined && idText(rollout.id) !== only) continue;
      rolloutId = rollout.id;
      // The id goes back out as JSON; one that cannot be written (nested too deeply) fails its line here.
      const id = idJson(rollout.id);
      const prepared = prepareRollout(pool, rollout);
      done.push({ prepared, result: maskPrepared(pool, prepared), id });
    }
    if (mode === 'mask' && options.outFormat) {
      const back = value ? writeBackShaped(line, value, done.map(({ result }) => outMask(result.mask, options)))
        : { ...JSON.parse(recordText(item)), mask: Array.from(outMask(done[0].result.mask, options)) };
      sink.raw(back as Record<string, unknown>);
    }
    for (const { prepared, result, id } of done) {
      const { rollout } = prepared;
      if (mode === 'mask') {
        if (sink.rollout) sink.rollout(prepared, result);
        else if (!options.outFormat) {
          // Text and messages rollouts were tokenized here: their ids go out with the mask.
          if (plainMask) writeMaskLine(sink.json!, id, result, prepared.source !== undefined ? prepared.rollout.tokens : undefined);
          else sink.write(rollout.id, id, maskFields(table, prepared, result, options, sink.json === undefined));
        }
        html?.add(table, { id: rollout.id, tokens: rollout.tokens, result, source });
      } else {
        const given = rollout.given!;
        const frame: Frame = given.shift ? 'targets' : 'tokens';
        const disagreements = auditPrepared(pool, prepared, result)!;
        const pattern = auditPattern(pool, prepared, result, disagreements);
        // Only a disagreeing rollout is masked again, under the grammar's other option values.
        const hints = disagreements.length ? optionHints(pool, prepared) : [];
        sink.write(rollout.id, id, { agree: disagreements.length === 0, tokens: rollout.tokens.length, shape: line.shape, frame, field: given.field, pattern, disagreements, diagnostics: result.diagnostics, hints });
        const stream = givenInStream(rollout)!.mask;
        html?.add(table, { id: rollout.id, tokens: rollout.tokens, result, audit: { mask: stream, frame, disagreements, pattern, hints }, source });
        if (disagreements.length) summary.disagreeing++;
        if (frame === 'targets') summary.targetFrame++;
        for (const run of disagreements) summary.directions.set(run.direction, (summary.directions.get(run.direction) ?? 0) + 1);
        for (const code of new Set(disagreements.flatMap((run) => run.parts.map((part) => part.code)))) summary.parts?.set(code, (summary.parts.get(code) ?? 0) + 1);
        if (disagreements.length && frame === 'targets') log(`${source}: ${formatFrame(rollout.id, given.values.length, rollout.tokens.length)}`);
        if (pattern) {
          const patterns = (summary.patterns ??= new Map());
          patterns.set(pattern.code, (patterns.get(pattern.code) ?? 0) + 1);
          log(`${source}: ${formatPattern(rollout.id, pattern)}`);
        }
        for (const run of disagreements) log(`${source}: ${formatDisagreement(rollout.id, run)}${line.shape === 'flat' ? '' : ` (${line.shape} ${run.field})`}`);
        if (hints.length) log(`${source}: ${formatHints(rollout.id, hints)}`);
        for (const hint of hints) summary.hints?.set(hintFlag(hint), (summary.hints.get(hintFlag(hint)) ?? 0) + 1);
      }
      // Counted only once its line is out: a rollout that failed is never counted as masked.
      record(summary, result);
    }
  } catch (error) {
    // A failed write ends the run (the caller removes the temporary output); anything else is this record's failure.
    if (error instanceof OutputError || error instanceof OutputClosed) throw error;
    summary.failed++;
    const message = errorMessage(error);
    log(`${source}: ${message}`);
    const id = rolloutId ?? recordId(item);
    sink.error(id, item.number, message);
    // A record that could not be read names no id: with `only`, it is not on the page.
    if (only === undefined) html?.add(table, { id: writable(id), tokens: [], error: message, source });
  }
}

/**
 * Stream rollouts from `input` (JSONL, .jsonl.gz or Parquet; any shape of src/io/shapes.ts) through the masker
 * into `output` (JSONL, .jsonl.gz or Parquet); every rollout also goes into `html` when given.
 */
export async function runRollouts(pool: MaskerPool, options: RunOptions): Promise<RunSummary> {
  const { input, output, mode = 'mask', log = silent, html, progress } = options;
  const sink = options.sink ?? await openSink(output, input, mode === 'check' ? CHECK_COLUMNS : options.outFormat ? 'input' : MASK_COLUMNS(options));
  const summary = newSummary();
  const where = input === '-' ? '<stdin>' : input;
  // The run-by-run JSONL mask writer is the fast path; other forms build the object.
  // From a pipe, each read's results go out before the next read waits for more input.
  const streaming = inputIsStream(input);
  const plainMask = mode === 'mask' && sink.json !== undefined && !options.outFormat && !options.maskFormat && options.observationWeight === undefined && !options.charSpans;
  try {
    let bytes = 0;
    const context: RecordContext = { pool, sink, summary, options, mode, log, html, where, plainMask, only: options.only };
    // Plain flat JSONL lines (or Parquet rows, their ids read typed) to plain JSONL masks: a chunk at a time
    // straight from the bytes or the column's ids (io/mask-lines.ts); any line that path does not take comes back
    // here, as the general path reads it.
    const format = fileFormat(input);
    // Parquet masks in the default form take the same path, each rollout a row (sink.maskedRows).
    const rowMasks = mode === 'mask' && sink.maskedRows !== undefined && !options.outFormat && !options.maskFormat && options.observationWeight === undefined && !options.charSpans;
    const fast = (plainMask || rowMasks) && !html && options.only === undefined && (format === 'jsonl' || format === 'parquet') && (options.format === undefined || options.format === 'flat')
      ? new MaskLines(pool, new ByteOut(), summary, rowMasks ? sink.maskedRows!(summary) : undefined) : undefined;
    const each = fast ? (item: InputRecord) => handleRecord(context, generalRecord(item)) : (item: InputRecord) => handleRecord(context, item);
    const drain = () => { if (fast!.out.used) sink.bytes!(fast!.out.take()); };
    const jobs = options.jobs ?? 1;
    if (fast && plainMask && format === 'jsonl' && jobs > 1 && pool.source) {
      const output: OutputOptions = { format: options.format };
      await maskInParallel({
        jobs,
        setup: { ...pool.source, table: pool.tokenizer.table, options: pool.options, output, where, stats: !!process.env.TAGMASK_JOBS_STATS },
        input,
        write: (data) => (sink.bytesAsync ? sink.bytesAsync(data) : sink.bytes!(data)),
        log,
        summary,
        progress,
        written: () => { if (streaming) sink.flush(); },
        // For the bench (bench/jobs.ts): where a parallel run's time went, one line on stderr.
        stats: process.env.TAGMASK_JOBS_STATS ? (stats) => process.stderr.write(`TAGMASK_JOBS_STATS ${JSON.stringify(stats)}\n`) : undefined,
      });
    } else for await (const batch of readRecordBatches(input, fast !== undefined)) {
      for (const item of batch) bytes += item.bytes ? item.bytes.length + 1 : 0;
      if (fast) {
        fast.run(batch, each, drain);
        drain();
      } else for (const item of batch) each(item);
      progress?.update(bytes, summary.rollouts + summary.failed, summary.tokens);
      if (streaming) sink.flush();
    }
    // For the bench (bench/jobs.ts): one thread's own CPU, to set against a parallel run's threads.
    if (fast && jobs === 1 && process.env.TAGMASK_JOBS_STATS) process.stderr.write(`TAGMASK_JOBS_STATS ${JSON.stringify({ jobs: 1, tokens: summary.tokens, mainThreadCpuMs: threadCpuMs() })}\n`);
    progress?.done();
    sink.close();
  } catch (error) {
    progress?.done();
    sink.abort();
    throw error;
  }
  return summary;
}

/** Merge every trajectory of `input` (JSONL, .jsonl.gz or Parquet) into `output` (the same three); returns how many lines failed. `table` decodes the split report. */
export async function runMerge(input: string, output: string | undefined, table: ByteTable | undefined, log: (line: string) => void): Promise<number> {
  const sink = await openSink(output, input, MERGE_COLUMNS);
  const source = input === '-' ? '<stdin>' : input;
  let failed = 0;
  try {
    for await (const batch of readRecordBatches(input)) {
      for (const record of batch) {
        const where = `${source}:${record.number}`;
        let id: unknown = null;
        try {
          if (record.error !== undefined) throw new Error(record.error);
          let value: unknown = record.value;
          if (value === undefined) {
            try {
              value = JSON.parse(record.bytes!.toString('utf8'));
            } catch (error) {
              throw new Error(`not valid JSON (${errorMessage(error)})`);
            }
          }
          const parsed = parseTrajectoryLine(value, where);
          id = parsed.id;
          const { trajectory, advantage } = parsed;
          const idText = idJson(id);
          const data = trajectoryToData(trajectory, advantage);
          if (data.length === 0) {
            throw new Error(trajectory.transitions.length === 0
              ? 'no transitions: nothing to merge'
              : `no datum: all ${trajectory.transitions.length} transitions are empty (no observation and no action tokens)`);
          }
          // Every datum of this trajectory is made before any is written: a failure writes nothing half-done.
          if (sink.json) {
            const lines = data.map((datum, index) => datumJsonLine(idText, index, datum));
            for (const text of lines) sink.json.write(text);
          } else {
            const rows = data.map((datum, index) => datumRow(index, datum));
            for (const row of rows) sink.write(id, idText, row);
          }
          trajectory.transitions.forEach((transition, k) => {
            if (transition.ob.length === 0 && transition.ac.tokens.length === 0) log(`${where}: trajectory ${idText} transitions[${k}] is empty (no observation, no action tokens): it adds nothing`);
          });
          const audit = auditExtension(trajectory);
          for (const split of audit.splits) log(`${where}: ${formatSplit(idText, split, audit.cost, data.length, table)}`);
        } catch (error) {
          if (error instanceof OutputError || error instanceof OutputClosed) throw error;
          failed++;
          const message = errorMessage(error);
          log(message.startsWith(where) ? message : `${where}: ${message}`);
          sink.error(id ?? (record.value ? record.value.id ?? null : idOf(recordText(record))), record.number, message);
        }
      }
    }
    sink.close();
  } catch (error) {
    sink.abort();
    throw error;
  }
  return failed;
}
