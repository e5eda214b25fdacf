/**
 * The one rollout reader: records of any input tagmask reads (JSONL plain or gzip, Parquet; a file or stdin),
 * each read into its shape (src/io/shapes.ts). Every command that reads rollouts (mask, check, show, detect,
 * `--grammar auto`, the suites) reads them here, so they all accept the same files and lines.
 */
import { errorMessage, idOf } from './lines.ts';
import { readJsonlBatches, readJsonlGz } from './jsonl.ts';
import { isObject, MAX_TOKEN_ID, mayHoldBigInteger, parseJsonExact } from './json.ts';
import { readParquetRows } from './parquet.ts';
import { fileFormat } from './format.ts';
import { detectShape, flatRollout, readShaped, ShapeError, type ShapedLine, type ShapeName, type ShapeSpec } from './shapes.ts';

/** One input record: a line's bytes (JSONL, plain or gzip) or a parsed row (Parquet). */
export interface InputRecord {
  number: number;
  bytes?: Buffer;
  value?: Record<string, unknown>;
  /** Why the record could not be read at all (a Parquet row past a limit, a row group whose num_rows lies): it fails alone. */
  error?: string;
}

const RECORD_BATCH = 256;

/**
 * Records of any input tagmask reads, a batch at a time (each batch's line bytes valid until the next is asked for).
 * `typedIds`: a Parquet row's `tokens` of ids comes as a Uint32Array (see ParquetReadOptions; `generalRecord` undoes it).
 * `readChunk`: JSONL bytes read at a time (default src/io/jsonl.ts READ_CHUNK).
 */
export async function* readRecordBatches(input: string, typedIds = false, readChunk?: number): AsyncGenerator<InputRecord[]> {
  const format = fileFormat(input);
  if (format === 'jsonl') { yield* readJsonlBatches(input, undefined, readChunk); return; }
  let batch: InputRecord[] = [];
  for await (const record of format === 'parquet' ? readParquetRows(input, { typedIds }) : readJsonlGz(input)) {
    batch.push(record);
    // A batch never spans two of the Parquet reader's batches: the typed ids of one are overwritten by the next.
    if (batch.length >= RECORD_BATCH || ('batchEnd' in record && record.batchEnd)) { yield batch; batch = []; }
  }
  if (batch.length) yield batch;
}

/** The record as every reader but the batched mask path takes it: a Parquet row's typed `tokens` as the array it stands for. */
export function generalRecord(record: InputRecord): InputRecord {
  const tokens = record.value?.tokens;
  if (tokens instanceof Uint32Array) record.value!.tokens = Array.from(tokens);
  return record;
}

export const recordText = (record: InputRecord) => (record.bytes ? record.bytes.toString('utf8') : JSON.stringify(record.value ?? null));

/** A record read: a flat line from its bytes, or a parsed value with the shape that read it (which writes it back). */
export type RecordRead = { line: ShapedLine; value?: undefined } | { line: ShapedLine & { spec: ShapeSpec }; value: Record<string, unknown> };

/**
 * A record in its shape. Plain flat JSONL lines keep the byte reader (the ids are never JSON.parse'd; the
 * tokens are then a view into a buffer the next record reuses). `needMask`: the record must bring a mask.
 */
export function readRecord(record: InputRecord, format: ShapeName | undefined, needMask: boolean, exact = false): RecordRead {
  if (record.error !== undefined) throw new ShapeError(record.error);
  // `exact` (--out-format writes the line back): a line that may hold an integer past 2^53 is parsed keeping it exact.
  const text = exact && record.bytes ? record.bytes.toString('utf8') : undefined;
  const big = text !== undefined && mayHoldBigInteger(text);
  if (record.bytes && (format === undefined || format === 'flat') && !big) {
    const spliced = spliceTokens(record.bytes);
    // The spliced line holds `"tokens": []`: its keys still say which shape it is.
    if (spliced && detectShape(spliced.value).name === 'flat') return { line: { shape: 'flat', rollouts: [flatRollout(spliced.value, spliced.ids, needMask)] } };
  }
  let value = record.value;
  if (!value) {
    try {
      value = (big ? parseJsonExact(text!) : JSON.parse(text ?? record.bytes!.toString('utf8'))) as Record<string, unknown>;
    } catch (error) {
      throw new ShapeError(`not valid JSON (${errorMessage(error)})`);
    }
  }
  return { line: readShaped(value, format, needMask), value };
}

const TOKENS_KEY = Buffer.from('"tokens"');
const UNICODE_ESCAPE = Buffer.from('\\u');

/** The id of a record that could not be read, where it can still be found; else null. */
export const recordId = (record: InputRecord): unknown => (record.value ? record.value.id ?? null : idOf(recordText(record)));

/** One record of an input read in its shape, or why it could not be read. */
export type ReadRecord =
  | { number: number; line: ShapedLine; value?: Record<string, unknown>; error?: undefined }
  | { number: number; error: string; id: unknown };

/**
 * Every record of `input`, in order, read in its shape (detected from its keys, or `format`). One bad record
 * is yielded as its error and the others go on. A record's tokens are valid until the next one is asked for.
 */
export async function* readRollouts(input: string, format?: ShapeName, needMask = false): AsyncGenerator<ReadRecord> {
  for await (const batch of readRecordBatches(input)) {
    for (const record of batch) {
      let read: ReadRecord;
      try {
        read = { number: record.number, ...readRecord(record, format, needMask) };
      } catch (error) {
        read = { number: record.number, error: errorMessage(error), id: recordId(record) };
      }
      yield read;
    }
  }
}

/** A grown id buffer up to this size (16 MB) is kept between lines and chunks; a larger one only while lines need it. */
const ID_BUFFER_KEPT = 1 << 22;

/**
 * Token ids read from lines, back to back in one reused Uint32Array: the CLI reads a chunk's lines into one
 * and masks them in one `maskBatch` call. `used` ids are taken; the rest is room.
 */
export class IdArena {
  ids = new Uint32Array(1 << 16);
  used = 0;

  /** Make room for `more` ids past `used`, keeping those taken. */
  reserve(more: number): void {
    const need = this.used + more;
    if (need <= this.ids.length) return;
    const bigger = new Uint32Array(Math.max(need, this.ids.length * 2));
    bigger.set(this.ids.subarray(0, this.used));
    this.ids = bigger;
  }

  /**
   * Start over. A buffer grown for a huge line (44 M ids: 176 MB) is let go, instead of being held for the
   * rest of the run, once `next` (what the coming lines may need) is far smaller.
   */
  reset(next = 0, kept = ID_BUFFER_KEPT): void {
    this.used = 0;
    if (this.ids.length > kept && next < this.ids.length >> 3) this.ids = new Uint32Array(Math.max(next, 1 << 16));
  }
}

const lineIds = new IdArena();

/**
 * The line with its top-level `"tokens"` array read from the bytes (a view into a reused buffer) and the rest
 * parsed with that array left empty; undefined for anything unusual (the caller then parses the whole line).
 */
export function spliceTokens(bytes: Buffer): { value: Record<string, unknown>; ids: Uint32Array } | undefined {
  lineIds.reset(bytes.length >> 1);
  const value = readTokens(bytes, lineIds);
  return value && { value, ids: lineIds.ids.subarray(0, lineIds.used) };
}

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/**
 * Read the line's top-level `"tokens"` array straight from its bytes into `arena` (appended at `used`, which
 * moves past them) and parse the rest of the line with that array left empty. Undefined for anything unusual
 * (the caller then parses the whole line); `arena.used` is then where it was.
 */
export function readTokens(bytes: Buffer, arena: IdArena): Record<string, unknown> | undefined {
  const key = bytes.indexOf(TOKENS_KEY);
  // The raw key must be the only one: a second `"tokens"` (nested or duplicated), or any `\u` escape (which
  // could spell another `"tokens"` key, `"\u0074okens"`), leaves the line to JSON.parse.
  if (key < 0 || bytes.indexOf(TOKENS_KEY, key + TOKENS_KEY.length) >= 0 || bytes.indexOf(UNICODE_ESCAPE) >= 0) return undefined;
  let at = key + TOKENS_KEY.length;
  const end = bytes.length;
  while (at < end && isSpace(bytes[at])) at++;
  if (bytes[at++] !== 0x3a) return undefined;
  while (at < end && isSpace(bytes[at])) at++;
  if (bytes[at] !== 0x5b) return undefined;
  const open = at++;
  // A `]` must follow: every loop below stops at it (it is neither a digit nor a space), so none runs past
  // the end, where a Buffer reads undefined (and `undefined - 0x30 >>> 0` is 0, a digit).
  if (bytes.indexOf(0x5d, at) < 0) return undefined;
  // At most one id per two bytes (`1,`) from here on.
  arena.reserve(((end - at) >> 1) + 1);
  const ids = arena.ids;
  const first = arena.used;
  let count = first;
  let close = -1;
  // Digits and commas (spaces allowed around them); a value is a plain non-negative integer up to
  // MAX_TOKEN_ID. The loop is written for the common shape `[1,22,333]`: the comma is tested first, a
  // number's first digit apart (JSON has no leading zeros: `007` is JSON.parse's to reject), and the digit
  // count never (an 11-digit number is past MAX_TOKEN_ID anyway).
  let c = bytes[at];
  while (isSpace(c)) c = bytes[++at];
  if (c === 0x5d) close = at;
  else for (;;) {
    let digit = c - 0x30;
    if (digit >>> 0 > 9) return undefined;
    let value = digit;
    c = bytes[++at];
    digit = c - 0x30;
    if (value === 0) {
      if (digit >>> 0 <= 9) return undefined;
    } else {
      while (digit >>> 0 <= 9) { value = value * 10 + digit; c = bytes[++at]; digit = c - 0x30; }
      if (value > MAX_TOKEN_ID) return undefined;
    }
    ids[count++] = value;
    if (c === 0x2c) {
      c = bytes[++at];
      if (isSpace(c)) do c = bytes[++at]; while (isSpace(c));
      continue;
    }
    while (isSpace(c)) c = bytes[++at];
    if (c === 0x2c) {
      c = bytes[++at];
      while (isSpace(c)) c = bytes[++at];
      continue;
    }
    if (c === 0x5d) { close = at; break; }
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8', 0, open + 1) + bytes.toString('utf8', close));
  } catch {
    return undefined;
  }
  // The array read must be the line's own top-level "tokens": the spliced line then holds `[]` there.
  if (!isObject(value) || !Array.isArray(value.tokens) || value.tokens.length !== 0) return undefined;
  arena.used = count;
  return value;
}
