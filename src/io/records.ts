/**
 * The one rollout reader: records of any input tagmask reads (JSONL plain or gzip, Parquet; a file or stdin),
 * each read into its shape (src/io/shapes.ts). Every command that reads rollouts (mask, check, show, detect,
 * `--grammar auto`, the suites) reads them here, so they all accept the same files and lines.
 */
import { errorMessage, idOf } from './lines.ts';
import { readJsonlBatches, readJsonlGz } from './jsonl.ts';
import { isObject, MAX_TOKEN_ID, mayHoldBigInteger, parseJsonExact } from './json.ts';
import { readParquetRows } from './parquet.ts';
import { idRun, readIdRun } from './id-run.ts';
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
  if (key < 0) return undefined;
  let at = key + TOKENS_KEY.length;
  const end = bytes.length;
  while (at < end && isSpace(bytes[at])) at++;
  if (bytes[at++] !== 0x3a) return undefined;
  while (at < end && isSpace(bytes[at])) at++;
  if (bytes[at] !== 0x5b) return undefined;
  const open = at;
  const before = arena.used;
  const close = readIds(bytes, open + 1, arena);
  if (close < 0) return undefined;
  // The array held only digits, commas and spaces, so what JSON.parse must see is the rest of the line. The raw
  // key must be the only one: a second `"tokens"` (nested or duplicated; none is before the first), or any `\u`
  // escape (which could spell another `"tokens"` key, `"\u0074okens"`), leaves the line to JSON.parse.
  const head = bytes.toString('utf8', 0, open + 1);
  const tail = bytes.toString('utf8', close);
  let value: unknown;
  if (!(tail.includes('"tokens"') || head.includes('\\u') || tail.includes('\\u'))) {
    try {
      value = JSON.parse(head + tail);
    } catch {
      value = undefined;
    }
  }
  // The array read must be the line's own top-level "tokens": the spliced line then holds `[]` there.
  if (!isObject(value) || !Array.isArray(value.tokens) || value.tokens.length !== 0) {
    arena.used = before;
    return undefined;
  }
  return value;
}

/**
 * Read the ids of a JSON array from `bytes[at]` on (just past its `[`) into `arena` (appended at `used`, which
 * moves past them): the index of its `]`, or -1 for anything but plain non-negative integers up to
 * MAX_TOKEN_ID, commas and spaces (`arena.used` is then where it was).
 */
function readIds(bytes: Buffer, at: number, arena: IdArena): number {
  // At most one id per two bytes (`1,`) from here on.
  arena.reserve(((bytes.length - at) >> 1) + 1);
  const ids = arena.ids;
  let count = arena.used;
  // The loop is written for the common shape `[1,22,333]`: the comma is tested first, a number's first digit
  // apart (JSON has no leading zeros: `007` is JSON.parse's to reject), and the digit count never (an 11-digit
  // number is past MAX_TOKEN_ID anyway). Every byte is read `| 0`: past the end a Buffer reads undefined,
  // which becomes 0 there, no digit, comma, space or `]`, so the loop ends on it.
  let c = bytes[at] | 0;
  while (isSpace(c)) c = bytes[++at] | 0;
  if (c === 0x5d) return at;
  // The plain run of ids, eight bytes at a time (id-run.ts); this loop reads what it leaves from the id it
  // stopped at (after a comma it has read, so spaces may come first, and `]` may not).
  readIdRun(bytes, at, ids, count);
  if (idRun.count > count) {
    at = idRun.at;
    count = idRun.count;
    c = bytes[at] | 0;
    while (isSpace(c)) c = bytes[++at] | 0;
  }
  for (;;) {
    let digit = c - 0x30;
    if (digit >>> 0 > 9) return -1;
    let value = digit;
    c = bytes[++at] | 0;
    digit = c - 0x30;
    if (value === 0) {
      if (digit >>> 0 <= 9) return -1;
    } else {
      while (digit >>> 0 <= 9) { value = value * 10 + digit; c = bytes[++at] | 0; digit = c - 0x30; }
      if (value > MAX_TOKEN_ID) return -1;
    }
    ids[count++] = value;
    if (c === 0x2c) {
      c = bytes[++at] | 0;
      if (isSpace(c)) do c = bytes[++at] | 0; while (isSpace(c));
      continue;
    }
    while (isSpace(c)) c = bytes[++at] | 0;
    if (c === 0x2c) {
      c = bytes[++at] | 0;
      while (isSpace(c)) c = bytes[++at] | 0;
      continue;
    }
    if (c === 0x5d) break;
    return -1;
  }
  arena.used = count;
  return at;
}

/** A plain line read by `readPlainLine`: its id as JSON and its prompt_length (-1: none). Reused line to line. */
export interface PlainLine { idText: string; promptLength: number }

const ID_KEY = Buffer.from('{"id":');
const TOKENS_AFTER = Buffer.from('"tokens":');
const PROMPT_LENGTH_AFTER = Buffer.from('"prompt_length":');

function startsWith(bytes: Buffer, at: number, prefix: Buffer): boolean {
  if (at + prefix.length > bytes.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[at + i] !== prefix[i]) return false;
  return true;
}

/** Past spaces (the only whitespace a writer puts between keys, as Python's json.dumps does). */
function spaces(bytes: Buffer, at: number): number {
  while (bytes[at] === 0x20) at++;
  return at;
}

/**
 * The commonest line, read with no JSON.parse and no object: `{"id": ID, "tokens": [...]}` with an optional
 * `"prompt_length": N` last, keys in that order, spaces allowed after `{`, `:` and `,`; ID a string of printable
 * ASCII without escapes or an integer of at most 15 digits, N an integer of at most 9 digits no greater than the
 * token count. Then the ids are in `arena` (appended), `into` holds the id as JSON (the line's own bytes, which
 * is what idJson writes for such an id) and the prompt length, and it returns true; for anything else it
 * returns false with `arena` untouched, and the line is read the general way (readTokens, JSON.parse), which
 * gives the same rollout for every line this takes (test/unit/rollout-reader.test.ts).
 */
export function readPlainLine(bytes: Buffer, arena: IdArena, into: PlainLine): boolean {
  if (!startsWith(bytes, 0, ID_KEY)) return false;
  let at = spaces(bytes, ID_KEY.length);
  const idStart = at;
  let c = bytes[at];
  if (c === 0x22) {
    for (c = bytes[++at]; c !== 0x22; c = bytes[++at]) if (!(c >= 0x20 && c < 0x7f && c !== 0x5c)) return false;
    at++;
  } else if (c >= 0x31 && c <= 0x39) {
    for (c = bytes[++at]; c >= 0x30 && c <= 0x39; c = bytes[++at]) if (at - idStart >= 15) return false;
  } else if (c === 0x30) at++;
  else return false;
  const idEnd = at;
  if (bytes[at] !== 0x2c) return false;
  at = spaces(bytes, at + 1);
  if (!startsWith(bytes, at, TOKENS_AFTER)) return false;
  at = spaces(bytes, at + TOKENS_AFTER.length);
  if (bytes[at++] !== 0x5b) return false;
  const before = arena.used;
  const close = readIds(bytes, at, arena);
  if (close < 0) return false;
  at = close + 1;
  let promptLength = -1;
  if (bytes[at] === 0x2c) {
    at = spaces(bytes, at + 1);
    if (!startsWith(bytes, at, PROMPT_LENGTH_AFTER)) { arena.used = before; return false; }
    at = spaces(bytes, at + PROMPT_LENGTH_AFTER.length);
    const from = at;
    c = bytes[at];
    if (c === 0x30) { promptLength = 0; at++; } else if (c >= 0x31 && c <= 0x39) {
      promptLength = c - 0x30;
      for (c = bytes[++at]; c >= 0x30 && c <= 0x39; c = bytes[++at]) promptLength = promptLength * 10 + c - 0x30;
    }
    if (at === from || at - from > 9 || promptLength > arena.used - before) { arena.used = before; return false; }
  }
  if (at !== bytes.length - 1 || bytes[at] !== 0x7d) { arena.used = before; return false; }
  into.idText = bytes.toString('latin1', idStart, idEnd);
  into.promptLength = promptLength;
  return true;
}
