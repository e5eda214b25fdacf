/**
 * Parquet in and out, streamed: rows are read one row group at a time (or, where the file has an offset
 * index, a slice of pages at a time), and written in row groups of bounded size, so memory does not grow with
 * the file. Reading is hyparquet's, writing hyparquet-writer's (pure JS, no native code); token ids and masks
 * are list columns (`list<int>`), as pyarrow writes Python lists of ints, so a Hugging Face dataset of
 * rollouts reads as it is.
 */
import { JsonlWriter } from './jsonl.ts';
import type { ParquetWriter } from 'hyparquet-writer';

// hyparquet and hyparquet-writer are imported when a Parquet file is met, not at start-up: together they cost
// ~50 ms of every CLI start (measured with --cpu-prof on `tagmask mask`), which a JSONL run never needs.
type WriterLibrary = typeof import('hyparquet-writer');

/** Parquet's INT64 comes back as BigInt: token ids and lengths are plain numbers here. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) {
    if (value.length && typeof value[0] === 'bigint') return value.map(Number);
    return value.some((item) => typeof item === 'bigint' || (typeof item === 'object' && item !== null)) ? value.map(plain) : value;
  }
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = plain(item);
    return out;
  }
  return value;
}

/**
 * One column of one row group, kept compact: a list-of-numbers column as one Float64Array of values and row
 * offsets (8 bytes a value instead of a BigInt object each), anything else as plain values.
 */
type CompactColumn =
  | { kind: 'lists'; values: Float64Array; offsets: Uint32Array; present: Uint8Array; booleans: boolean }
  | { kind: 'plain'; values: unknown[] };

function compact(cells: unknown[]): CompactColumn {
  // One pass to size and type-check: lists of numbers, bigints or booleans only (nulls allowed).
  let total = 0;
  let lists = 0;
  for (const cell of cells) {
    if (cell === null || cell === undefined) continue;
    if (!Array.isArray(cell)) return plainColumn(cells);
    const first = cell[0];
    if (cell.length && typeof first !== 'number' && typeof first !== 'bigint' && typeof first !== 'boolean') return plainColumn(cells);
    total += cell.length;
    lists++;
  }
  if (!lists || !total) return plainColumn(cells);
  const values = new Float64Array(total);
  const offsets = new Uint32Array(cells.length + 1);
  const present = new Uint8Array(cells.length);
  let at = 0;
  let booleans = false;
  for (let row = 0; row < cells.length; row++) {
    offsets[row] = at;
    const cell = cells[row];
    if (!Array.isArray(cell)) continue;
    present[row] = 1;
    for (let i = 0; i < cell.length; i++) {
      const item = cell[i];
      if (typeof item === 'number') values[at++] = item;
      else if (typeof item === 'bigint') values[at++] = Number(item);
      else if (typeof item === 'boolean') { booleans = true; values[at++] = item ? 1 : 0; }
      // A list mixing other values is not a list of ids: keep the column as it is.
      else return plainColumn(cells);
    }
  }
  offsets[cells.length] = at;
  return { kind: 'lists', values, offsets, present, booleans };
}

const plainColumn = (cells: unknown[]): CompactColumn => ({ kind: 'plain', values: cells.map((cell) => (cell === null || cell === undefined ? undefined : plain(cell))) });

function cellOf(column: CompactColumn, row: number): unknown {
  if (column.kind === 'plain') return column.values[row];
  if (!column.present[row]) return undefined;
  const slice = column.values.subarray(column.offsets[row], column.offsets[row + 1]);
  return column.booleans ? Array.from(slice, (value) => value === 1) : Array.from(slice);
}

/**
 * Rows of a Parquet file as objects (a field per column; a null cell is a field the row does not have),
 * numbered from 1, in order. Memory is bounded by one row group: hyparquet decodes a nested column chunk
 * whole, so a group is read column by column and each column is packed (compact) before the next is read.
 */
export async function* readParquetRows(path: string): AsyncGenerator<{ number: number; value: Record<string, unknown> }> {
  const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } = await import('hyparquet');
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  const names = parquetSchema(metadata).children.map((child) => child.element.name);
  let groupStart = 0;
  let number = 0;
  for (const group of metadata.row_groups) {
    const groupRows = Number(group.num_rows);
    const rowEnd = groupStart + groupRows;
    const columns: Array<[string, CompactColumn]> = [];
    for (const name of names) {
      const rows = await parquetReadObjects({ file, metadata, rowStart: groupStart, rowEnd, columns: [name] });
      columns.push([name, compact(rows.map((row) => row[name]))]);
    }
    for (let row = 0; row < groupRows; row++) {
      const value: Record<string, unknown> = {};
      for (const [name, column] of columns) {
        const cell = cellOf(column, row);
        if (cell !== null && cell !== undefined) value[name] = cell;
      }
      yield { number: ++number, value };
    }
    groupStart = rowEnd;
  }
}

type ColumnKind = 'ids' | 'ints' | 'floats' | 'bools' | 'string' | 'int' | 'float' | 'bool' | 'json';

/** Token ids and masks fit 32 unsigned bits: written as uint32, read back as plain numbers (no BigInt). */
const UINT32_MAX = 0xffffffff;

function kindOf(value: unknown): ColumnKind {
  if (Array.isArray(value)) {
    if (value.every((item) => typeof item === 'boolean')) return value.length ? 'bools' : 'ints';
    if (value.every((item) => typeof item === 'number' && Number.isInteger(item))) return 'ints';
    if (value.every((item) => typeof item === 'number')) return 'floats';
    return 'json';
  }
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return 'json';
}

/** Whether a value can go in a column of that kind (an int list in a float list column, …). */
function fits(kind: ColumnKind, value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (kind === 'ids') return Array.isArray(value) && value.every((item) => typeof item === 'number' && Number.isInteger(item) && item >= 0 && item <= UINT32_MAX);
  const own = kindOf(value);
  if (own === kind) return true;
  if (kind === 'floats' && own === 'ints') return true;
  if (kind === 'float' && own === 'int') return true;
  if (kind === 'ints' && Array.isArray(value) && value.length === 0) return true;
  return kind === 'json';
}

// Parquet schema elements: a nullable column per field; lists in the three-level LIST layout pyarrow writes.
function schemaFor(name: string, kind: ColumnKind): Array<Record<string, unknown>> {
  const list = (element: Record<string, unknown>) => [
    { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', repetition_type: 'REQUIRED', ...element },
  ];
  switch (kind) {
    case 'ids': return list({ type: 'INT32', converted_type: 'UINT_32' });
    case 'ints': return list({ type: 'INT64' });
    case 'floats': return list({ type: 'DOUBLE' });
    case 'bools': return list({ type: 'BOOLEAN' });
    case 'string': return [{ name, repetition_type: 'OPTIONAL', type: 'BYTE_ARRAY', converted_type: 'UTF8' }];
    case 'int': return [{ name, repetition_type: 'OPTIONAL', type: 'INT64' }];
    case 'float': return [{ name, repetition_type: 'OPTIONAL', type: 'DOUBLE' }];
    case 'bool': return [{ name, repetition_type: 'OPTIONAL', type: 'BOOLEAN' }];
    case 'json': return [{ name, repetition_type: 'OPTIONAL', type: 'BYTE_ARRAY', converted_type: 'JSON' }];
  }
}

function columnValue(kind: ColumnKind, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (kind) {
    case 'ints': return (value as number[]).map((item) => BigInt(item));
    case 'int': return BigInt(value as number);
    case 'json': return JSON.stringify(value);
    default: return value;
  }
}

/** Rows written per row group: bounded memory, and groups a reader can take one at a time. */
const GROUP_ROWS = 8192;
/** …or fewer, when rows are long: a group is flushed once it holds this many list values. */
const GROUP_VALUES = 1 << 20;
/** hyparquet-writer output is handed to the file in chunks of about this size (its own file writer uses 1 MB). */
const CHUNK_BYTES = 1 << 20;

/**
 * Parquet rows out, through the same output file as JSONL (a temporary file renamed into place on close, so complete
 * or absent; FIFOs and devices written through; removed on a signal).
 * Columns and their types come from the first row group's rows: list of integers → `list<int64>`, list of
 * booleans → `list<bool>`, other numbers → `double`, strings → `string`, anything else → a JSON string.
 */
export class ParquetRowWriter {
  private rows: Array<Record<string, unknown>> = [];
  private values = 0;
  private columns?: Array<{ name: string; kind: ColumnKind }>;
  private writer?: ParquetWriter;
  /** The output file, opened as JSONL output is (temporary file renamed into place, FIFOs and devices written through, signals cleaned up). */
  private readonly output: JsonlWriter;
  private closed = false;

  /** A writer with its library loaded (see WriterLibrary). */
  static async open(path: string): Promise<ParquetRowWriter> {
    return new ParquetRowWriter(path, await import('hyparquet-writer'));
  }

  private constructor(path: string, private readonly library: WriterLibrary) {
    this.output = new JsonlWriter(path);
  }

  /** hyparquet-writer's byte writer, its full chunks handed to our output instead of its own appends to a file name. */
  private byteWriter(): InstanceType<WriterLibrary['ByteWriter']> {
    const writer = new this.library.ByteWriter();
    const output = this.output;
    const ensure = writer.ensure.bind(writer);
    const flush = () => {
      output.writeBytes(new Uint8Array(writer.buffer, 0, writer.index));
      writer.index = 0;
    };
    writer.ensure = (size: number) => {
      if (writer.index > CHUNK_BYTES) flush();
      ensure(size);
    };
    writer.finish = flush;
    return writer;
  }

  write(row: Record<string, unknown>): void {
    this.rows.push(row);
    for (const value of Object.values(row)) if (Array.isArray(value)) this.values += value.length;
    if (this.rows.length >= GROUP_ROWS || this.values >= GROUP_VALUES) this.flush();
  }

  private flush(): void {
    if (!this.rows.length) return;
    if (!this.columns) {
      const kinds = new Map<string, ColumnKind>();
      for (const row of this.rows) {
        for (const [name, value] of Object.entries(row)) {
          if (value === null || value === undefined) continue;
          const known = kinds.get(name);
          const kind = kindOf(value);
          if (known === undefined) kinds.set(name, kind);
          else if (!fits(known, value)) kinds.set(name, known === 'ints' && kind === 'floats' ? 'floats' : 'json');
        }
      }
      // Integer lists that fit 32 unsigned bits (ids, masks) are written as uint32: smaller, and read without BigInt.
      for (const [name, kind] of kinds) if (kind === 'ints' && this.rows.every((row) => fits('ids', row[name]))) kinds.set(name, 'ids');
      this.columns = [...kinds].map(([name, kind]) => ({ name, kind }));
      const schema = [{ name: 'root', num_children: this.columns.length }, ...this.columns.flatMap(({ name, kind }) => schemaFor(name, kind))];
      this.writer = new this.library.ParquetWriter({ writer: this.byteWriter(), schema: schema as never, codec: 'SNAPPY', createdBy: 'tagmask (hyparquet-writer)' });
    }
    const columnData = this.columns.map(({ name, kind }) => ({
      name,
      data: this.rows.map((row, i) => {
        const value = row[name];
        if (!fits(kind, value)) throw new Error(`row ${i}: field "${name}" holds ${JSON.stringify(value).slice(0, 40)}, not the ${kind} its column was given from the first rows`);
        return columnValue(kind, value);
      }),
    }));
    this.writer!.write({ columnData, rowGroupSize: this.rows.length } as never);
    this.rows = [];
    this.values = 0;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      if (!this.columns && !this.rows.length) this.rows.push({});
      this.flush();
      this.writer!.finish();
    } catch (error) {
      this.output.abort();
      throw error;
    }
    this.output.close();
  }

  abort(): void {
    if (this.closed) return;
    this.closed = true;
    this.output.abort();
  }
}
