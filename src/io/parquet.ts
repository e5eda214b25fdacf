/**
 * Parquet in and out, streamed: rows are read one row group at a time (or, where the file has an offset
 * index, a slice of pages at a time), and written in row groups of bounded size, so memory does not grow with
 * the file. Reading is hyparquet's, writing hyparquet-writer's (pure JS, no native code); token ids and masks
 * are list columns (`list<int>`), as pyarrow writes Python lists of ints, so a Hugging Face dataset of
 * rollouts reads as it is.
 */
import { renameSync, rmSync } from 'node:fs';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { ParquetWriter, fileWriter } from 'hyparquet-writer';

export const isParquetPath = (path: string | undefined) => path !== undefined && /\.parquet$/i.test(path);

/** Rows read within one group at a time, where the file's offset index lets pages be read by row. */
const SLICE_ROWS = 4096;

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

/** Rows of a Parquet file as objects (a field per column), numbered from 1, in order. */
export async function* readParquetRows(path: string): AsyncGenerator<{ number: number; value: Record<string, unknown> }> {
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  let groupStart = 0;
  let number = 0;
  for (const group of metadata.row_groups) {
    const groupRows = Number(group.num_rows);
    const paged = group.columns.every((column) => column.offset_index_offset !== undefined);
    // Without an offset index a slice would re-read the whole column chunk: read the group at once.
    const step = paged ? SLICE_ROWS : groupRows;
    for (let start = groupStart; start < groupStart + groupRows; start += step) {
      const rows = await parquetReadObjects({ file, metadata, rowStart: start, rowEnd: Math.min(start + step, groupStart + groupRows), useOffsetIndex: paged });
      for (const row of rows) {
        // A null cell is a field the row does not have (an optional prompt_length, a mask `mask` does not need).
        const value: Record<string, unknown> = {};
        for (const [key, cell] of Object.entries(row)) if (cell !== null && cell !== undefined) value[key] = plain(cell);
        yield { number: ++number, value };
      }
    }
    groupStart += groupRows;
  }
}

type ColumnKind = 'ints' | 'floats' | 'bools' | 'string' | 'int' | 'float' | 'bool' | 'json';

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
const GROUP_VALUES = 1 << 22;

/**
 * Parquet rows out, to a temporary file renamed into place on close (complete or absent, like JsonlWriter).
 * Columns and their types come from the first row group's rows: list of integers → `list<int64>`, list of
 * booleans → `list<bool>`, other numbers → `double`, strings → `string`, anything else → a JSON string.
 */
export class ParquetRowWriter {
  private rows: Array<Record<string, unknown>> = [];
  private values = 0;
  private columns?: Array<{ name: string; kind: ColumnKind }>;
  private writer?: ParquetWriter;
  private readonly temporary: string;
  private closed = false;

  constructor(private readonly path: string) {
    this.temporary = `${path}.tmp-${process.pid}`;
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
      this.columns = [...kinds].map(([name, kind]) => ({ name, kind }));
      const schema = [{ name: 'root', num_children: this.columns.length }, ...this.columns.flatMap(({ name, kind }) => schemaFor(name, kind))];
      this.writer = new ParquetWriter({ writer: fileWriter(this.temporary), schema: schema as never, codec: 'SNAPPY', createdBy: 'tagmask (hyparquet-writer)' });
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
    if (!this.columns && !this.rows.length) this.rows.push({});
    this.flush();
    this.writer!.finish();
    renameSync(this.temporary, this.path);
  }

  abort(): void {
    if (this.closed) return;
    this.closed = true;
    rmSync(this.temporary, { force: true });
  }
}
