/**
 * Parquet rows out, through the same output file as JSONL (a temporary file renamed into place on close, so
 * complete or absent; FIFOs and devices written through; removed on a signal).
 *
 * Why columns are declared up front, and what happens to those that cannot be: a Parquet file has one schema,
 * written in its footer, and every row group holds every column. Before, the schema was guessed from the
 * first row group, so a field first seen later (a diagnostic, an error row's `line` and `error`, text
 * rollouts' `tokens`) ended the run or was lost. Now the command declares every column it can emit before
 * the first row (`mask`: id, mask, tokens, spans, diagnostics, line, error; `check` and `merge` theirs), and
 * a Parquet input lends its own schema: `--out-format` writes its columns back with their own types (structs
 * stay structs, lists of lists stay lists, int64 stays int64) and `id` keeps the input's type. Only what
 * cannot be known before the rows come (the `id` of a JSONL input, the fields `--out-format` writes back from
 * JSONL) is inferred, from all the rows: those columns' values are spilled, a row group at a time, to an
 * unlinked temporary file, and their column chunks are written after the last row group, once every value has
 * been seen (a row group's column chunks need not be next to each other: readers find each by its offset).
 * Memory stays bounded by one row group either way.
 */
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import type { SchemaElement, SchemaTree } from 'hyparquet';
import { JsonlWriter } from './jsonl.ts';
import { jsonText } from './json.ts';

type Library = {
  writePageHeader: typeof import('hyparquet-writer/src/datapage.js').writePageHeader;
  snappyCompress: (input: Uint8Array) => Uint8Array;
  ParquetWriter: typeof import('hyparquet-writer').ParquetWriter;
  ByteWriter: typeof import('hyparquet-writer').ByteWriter;
  writeColumn: typeof import('hyparquet-writer/src/column.js').writeColumn;
  encodeNestedValues: typeof import('hyparquet-writer/src/dremel.js').encodeNestedValues;
  getSchemaPath: typeof import('hyparquet/src/schema.js').getSchemaPath;
};

/**
 * hyparquet-writer's own types for what this file hands it, taken from its functions' signatures (its package
 * exports no types module). They are written against its own copy of hyparquet (1.31.5, beside our 1.33.0).
 */
type WriterColumnInput = Parameters<Library['writeColumn']>[0];
type WriterPageData = WriterColumnInput['pageData'];
type WriterSchemaElement = WriterColumnInput['column']['element'];
type WriterSchemaTree = Parameters<Library['encodeNestedValues']>[0][number];
type DecodedArray = WriterPageData['values'];
type ColumnChunk = ReturnType<Library['writeColumn']>['chunk'];
type ByteSink = InstanceType<Library['ByteWriter']> & { offset: number };

/** Page data as this file builds it: the writer's, but with levels a byte each (Uint8Array) where they are long. */
type PageData = Omit<WriterPageData, 'definitionLevels' | 'repetitionLevels'> & { definitionLevels: Uint8Array | number[]; repetitionLevels: Uint8Array | number[] };

/**
 * The boundary between our types and the writer's: what we pass is what it accepts at run time, though its
 * types (hyparquet-writer 0.17.0) say otherwise in two places.
 * - Schema elements: our hyparquet 1.33.0's LogicalType adds `FILE`, which the writer's 1.31.5 types lack. The
 *   writer only compares `logical_type.type` with the types it knows (src/metadata.js `logicalType`, which has no
 *   case for FILE and so writes none; src/column.js, src/unconvert.js, src/dremel.js), so a FILE element is
 *   written as one without a logical type; the elements are passed unchanged.
 * - Levels: its PageData types them `number[]`; we pass Uint8Arrays. It only reads their `length`, indexes them
 *   and `slice`s them (src/column.js `writeColumn`, `getPageBoundaries`; src/datapage.js `writeDataPageV2`;
 *   src/encoding.js `writeRleBitPackedHybrid`), all of which a Uint8Array does alike.
 */
function forWriter(path: SchemaTree[]): WriterSchemaTree[];
function forWriter(path: SchemaElement[]): WriterSchemaElement[];
function forWriter(element: SchemaElement): WriterSchemaElement;
function forWriter(data: PageData): WriterPageData;
function forWriter(value: SchemaTree[] | SchemaElement[] | SchemaElement | PageData): WriterSchemaTree[] | WriterSchemaElement[] | WriterSchemaElement | WriterPageData {
  return value as WriterSchemaTree[] | WriterSchemaElement[] | WriterSchemaElement | WriterPageData;
}

let library: Promise<Library> | undefined;
const load = () => (library ??= (async () => {
  const [writer, column, dremel, schema, datapage, snappy] = await Promise.all([import('hyparquet-writer'), import('hyparquet-writer/src/column.js'), import('hyparquet-writer/src/dremel.js'), import('hyparquet/src/schema.js'), import('hyparquet-writer/src/datapage.js'), import('hysnappy')]);
  // SNAPPY through one instance of hysnappy's WebAssembly snappy kept for the run: hyparquet-writer's own
  // snappyCompress (JS) cost 6-30x as much on mask and id pages (a third of writing 14 M tokens); a page past
  // SNAPPY_KEPT_BYTES gets an instance of its own, so the kept one's memory stays small. Any valid snappy is
  // the same page to a reader (test/cli/hostile-parquet.test.ts reads tagmask's files back with pyarrow).
  const kept = snappy.snappyCompressor();
  const snappyCompress = (input: Uint8Array) => (input.length <= SNAPPY_KEPT_BYTES ? kept : snappy.snappyCompressor())(input);
  return { writePageHeader: datapage.writePageHeader, snappyCompress, ParquetWriter: writer.ParquetWriter, ByteWriter: writer.ByteWriter, writeColumn: column.writeColumn, encodeNestedValues: dremel.encodeNestedValues, getSchemaPath: schema.getSchemaPath };
})());

/** Pages up to this size share one snappy compressor's memory. */
const SNAPPY_KEPT_BYTES = 1 << 24;

/**
 * The column kinds tagmask writes: lists of token ids (uint32), of 0/1 flags (uint8), of int64, of doubles, of
 * float32 (tinker's tensors), of booleans; scalars; and JSON text for anything else (spans, diagnostics).
 */
export type ColumnKind = 'ids' | 'flags' | 'ints' | 'floats' | 'float32s' | 'bools' | 'string' | 'int' | 'float' | 'bool' | 'json';

/**
 * A column declared before the first row: a kind, the schema elements of a Parquet input's column (its subtree,
 * column first), or a place for a column whose kind is inferred from every row (a JSONL input's `id`).
 */
export type DeclaredColumn = { name: string; kind: ColumnKind } | { name: string; schema: SchemaElement[] } | { name: string; infer: true };

const UINT32_MAX = 0xffffffff;

function schemaFor(name: string, kind: ColumnKind): SchemaElement[] {
  const list = (element: Partial<SchemaElement>): SchemaElement[] => [
    { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', repetition_type: 'REQUIRED', ...element } as SchemaElement,
  ];
  switch (kind) {
    case 'ids': return list({ type: 'INT32', converted_type: 'UINT_32' });
    case 'flags': return list({ type: 'INT32', converted_type: 'UINT_8' });
    case 'ints': return list({ type: 'INT64' });
    case 'floats': return list({ type: 'DOUBLE' });
    case 'float32s': return list({ type: 'FLOAT' });
    case 'bools': return list({ type: 'BOOLEAN' });
    case 'string': return [{ name, repetition_type: 'OPTIONAL', type: 'BYTE_ARRAY', converted_type: 'UTF8' }];
    case 'int': return [{ name, repetition_type: 'OPTIONAL', type: 'INT64' }];
    case 'float': return [{ name, repetition_type: 'OPTIONAL', type: 'DOUBLE' }];
    case 'bool': return [{ name, repetition_type: 'OPTIONAL', type: 'BOOLEAN' }];
    case 'json': return [{ name, repetition_type: 'OPTIONAL', type: 'BYTE_ARRAY', converted_type: 'JSON' }];
  }
}

const isIntegral = (value: unknown) => (typeof value === 'number' && Number.isInteger(value)) || typeof value === 'bigint';
const isList = (value: unknown): value is ArrayLike<unknown> => Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView));

/** The narrowest kind a value fits. */
function kindOf(value: unknown): ColumnKind {
  if (isList(value)) {
    if (value instanceof Uint8Array) return 'flags';
    if (value instanceof Float32Array) return 'float32s';
    if (value instanceof Float64Array) return 'floats';
    let kind: ColumnKind = 'flags';
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (typeof item === 'boolean') { if (i === 0) kind = 'bools'; else if (kind !== 'bools') return 'json'; continue; }
      if (kind === 'bools') return 'json';
      if (isIntegral(item)) {
        const n = item as number | bigint;
        if (kind === 'flags' && n !== 0 && n !== 1) kind = 'ids';
        if (kind === 'ids' && (n < 0 || n > UINT32_MAX)) kind = 'ints';
        if (kind === 'ints' && typeof n === 'bigint' && (n < -(2n ** 63n) || n >= 2n ** 63n)) return 'json';
      } else if (typeof item === 'number') kind = 'floats';
      else return 'json';
    }
    return kind;
  }
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return value >= -(2n ** 63n) && value < 2n ** 63n ? 'int' : 'json';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return 'json';
}

const LIST_ORDER: ColumnKind[] = ['flags', 'ids', 'ints', 'floats'];

/** The kind that holds values of both kinds. */
function widen(a: ColumnKind | undefined, b: ColumnKind): ColumnKind {
  if (a === undefined || a === b) return b;
  if (LIST_ORDER.includes(a) && LIST_ORDER.includes(b)) return LIST_ORDER[Math.max(LIST_ORDER.indexOf(a), LIST_ORDER.indexOf(b))];
  if ((a === 'float32s' && b === 'floats') || (a === 'floats' && b === 'float32s')) return 'floats';
  if ((a === 'int' && b === 'float') || (a === 'float' && b === 'int')) return 'float';
  return 'json';
}

/** Whether a value goes into a column of this kind as it is. */
function fits(kind: ColumnKind, value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (kind === 'json') return true;
  const own = kindOf(value);
  if (own === kind) return true;
  if (isList(value) && value.length === 0) return LIST_ORDER.includes(kind) || kind === 'float32s' || kind === 'bools';
  // Any list of numbers goes into a float32 column (tinker's tensors are float32 by construction).
  if (kind === 'float32s' && (LIST_ORDER.includes(own) || own === 'float32s')) return true;
  return widen(kind, own) === kind;
}

/** One column as the writer holds it: its schema path, and whether its values come in a later pass (inferred). */
interface Column {
  name: string;
  kind?: ColumnKind;
  schema?: SchemaElement[];
  /** Declared: written with each row group. Inferred: spilled, written after the last row group. */
  inferred: boolean;
}

/** Rows written per row group: bounded memory, and groups a reader can take one at a time. */
const GROUP_ROWS = 8192;
/** …or fewer, when rows are long: a group is flushed once it holds this many list values. */
const GROUP_VALUES = 1 << 20;
/** hyparquet-writer output is handed to the file in chunks of about this size. */
const CHUNK_BYTES = 1 << 20;

/** A value that does not fit its column: this row fails (the caller writes its error row), the others go on. */
export class ParquetValueError extends Error {}

/**
 * Bytes lent to one `write` call (the batched mask path's, straight from its buffers): copied into the row group's
 * memory, which is reused group after group, so the caller may change them afterwards.
 */
export class LentBytes {
  constructor(readonly bytes: Uint8Array) {}
}

/** A json column's value as its JSON text in UTF-8: written as these bytes, as the same value given as objects would be. */
export class JsonBytes extends LentBytes {}

/** A flags column's list of 0/1 values, one byte each. */
export class FlagBytes extends LentBytes {}

/**
 * The row group's copies of lent bytes: one block, used from its start again once the group is written (the
 * pages are built from copies of the cells, and statistics keep copies of their own). A block that fills up is
 * replaced by one twice as large, so after the first groups one block holds a group.
 */
class GroupBytes {
  private block = new Uint8Array(0);
  private used = 0;

  copy(bytes: Uint8Array): Uint8Array {
    const n = bytes.length;
    if (this.used + n > this.block.length) {
      this.block = new Uint8Array(Math.max(n, 2 * this.block.length, 1 << 20));
      this.used = 0;
    }
    const copy = this.block.subarray(this.used, this.used + n);
    copy.set(bytes);
    this.used += n;
    return copy;
  }

  /** The group is written: its copies are no longer read. A block grown for a giant row is let go. */
  reset(): void {
    this.used = 0;
    if (this.block.length > 4 * GROUP_VALUES) this.block = new Uint8Array(0);
  }
}

/**
 * Parquet rows out. `declared` columns are written with each row group in their declared types; any other
 * field a row holds is inferred over all rows (see the header).
 */
export class ParquetRowWriter {
  private rows: Array<Record<string, unknown>> = [];
  private values = 0;
  private readonly columns: Column[] = [];
  private readonly byName = new Map<string, Column>();
  private writer!: InstanceType<Library['ParquetWriter']>;
  private readonly output: JsonlWriter;
  private closed = false;
  /** Spill of inferred columns' values: an unlinked temporary file, gone however the process ends. */
  private spill?: { fd: number; at: number; groups: Array<Array<{ name: string; at: number; length: number }>> };
  private groups = 0;
  private readonly scratch = new PageScratch();
  private readonly lent = new GroupBytes();
  private readonly repetition = new LevelRuns();
  private readonly definition = new LevelRuns();

  /** A writer with its library loaded (hyparquet-writer is loaded only when a Parquet file is written). */
  static async open(path: string, declared: DeclaredColumn[] = []): Promise<ParquetRowWriter> {
    return new ParquetRowWriter(path, await load(), declared);
  }

  private constructor(path: string, private readonly library: Library, declared: DeclaredColumn[]) {
    for (const column of declared) this.addColumn('infer' in column ? { name: column.name, inferred: true } : { name: column.name, ...('kind' in column ? { kind: column.kind } : { schema: column.schema }), inferred: false });
    this.output = new JsonlWriter(path, { gzip: false });
  }

  private addColumn(column: Column): Column {
    this.columns.push(column);
    this.byName.set(column.name, column);
    return column;
  }

  /** hyparquet-writer's byte writer, its full chunks handed to our output instead of its own appends to a file name. */
  private byteWriter(): InstanceType<Library['ByteWriter']> {
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

  /** Add a row; throws ParquetValueError (nothing added) when a value does not fit its declared column. */
  write(row: Record<string, unknown>): void {
    const converted: Record<string, unknown> = {};
    let values = 0;
    for (const [name, value] of Object.entries(row)) {
      if (value === null || value === undefined) continue;
      let column = this.byName.get(name);
      if (!column) column = this.addColumn({ name, inferred: true });
      if (value instanceof LentBytes) {
        const json = value instanceof JsonBytes;
        if (column.kind !== (json ? 'json' : 'flags')) throw new Error(`field "${name}" given as ${json ? 'JSON text' : 'flag bytes'}, for a ${column.kind ?? 'inferred'} column`);
        const cell = this.lent.copy(value.bytes);
        converted[name] = cell;
        if (!json) values += cell.length;
        continue;
      }
      const cell = column.inferred ? value : checkDeclared(column, value);
      converted[name] = cell;
      if (isList(cell)) values += cell.length;
    }
    this.rows.push(converted);
    this.values += values;
    if (this.rows.length >= GROUP_ROWS || this.values >= GROUP_VALUES) this.flush();
  }

  private start(): void {
    if (this.writer) return;
    // The placeholder schema is replaced before the footer is written, once inferred columns are known.
    this.writer = new this.library.ParquetWriter({ writer: this.byteWriter(), schema: [{ name: 'root', num_children: 0 }], codec: 'SNAPPY', compressors: { SNAPPY: this.library.snappyCompress }, createdBy: 'tagmask (hyparquet-writer)' });
  }

  private flush(): void {
    const rows = this.rows;
    if (!rows.length) return;
    this.start();
    const writer = this.writer as unknown as { writer: { offset: number }; row_groups: Array<Record<string, unknown>>; num_rows: bigint; pendingIndexes: unknown[] };
    const groupStart = writer.writer.offset;
    const chunks: ColumnChunk[] = [];
    const spilled: Array<{ name: string; at: number; length: number }> = [];
    for (const column of this.columns) {
      const cells = rows.map((row) => row[column.name]);
      if (column.inferred) {
        spilled.push({ name: column.name, ...this.spillValues(cells) });
        continue;
      }
      for (const result of this.encode(column, cells)) {
        chunks.push(result.chunk);
        writer.pendingIndexes.push(result);
      }
    }
    (this.spill ??= { fd: -1, at: 0, groups: [] }).groups.push(spilled);
    writer.row_groups.push({ columns: chunks, total_byte_size: 0n, num_rows: BigInt(rows.length), total_compressed_size: BigInt(writer.writer.offset - groupStart) });
    writer.num_rows += BigInt(rows.length);
    this.groups++;
    this.rows = [];
    this.lent.reset();
    this.values = 0;
  }

  /** One group's values of an inferred column, to the spill file. */
  private spillValues(cells: unknown[]): { at: number; length: number } {
    if (!this.spill || this.spill.fd < 0) {
      const path = join(tmpdir(), `tagmask-parquet-${process.pid}-${Math.random().toString(36).slice(2)}.spill`);
      const fd = openSync(path, 'wx+', 0o600);
      unlinkSync(path);
      if (this.spill) this.spill.fd = fd; else this.spill = { fd, at: 0, groups: [] };
    }
    const bytes = serialize(cells);
    for (let written = 0; written < bytes.length;) written += writeSync(this.spill.fd, bytes, written, bytes.length - written, this.spill.at + written);
    const at = this.spill.at;
    this.spill.at += bytes.length;
    return { at, length: bytes.length };
  }

  private readSpill(at: number, length: number): unknown[] {
    const bytes = Buffer.allocUnsafe(length);
    for (let read = 0; read < length;) read += readSync(this.spill!.fd, bytes, read, length - read, at + read);
    return deserialize(bytes) as unknown[];
  }

  /** The schema elements of a column (its subtree, column first). */
  private schemaOf(column: Column): SchemaElement[] {
    return column.schema ?? schemaFor(column.name, column.kind!);
  }

  /** Column chunks of one column for one row group's cells (one per leaf). */
  private encode(column: Column, cells: unknown[]): Array<{ chunk: ColumnChunk }> {
    const elements = this.schemaOf(column);
    const schema: SchemaElement[] = [{ name: 'root', num_children: 1 }, ...elements];
    const root = this.library.getSchemaPath(schema, [])[0];
    const out: Array<{ chunk: ColumnChunk }> = [];
    for (const leafPath of leafPaths([root, root.children[0]])) {
      const path = leafPath.map((node) => node.element);
      const leaf = path[path.length - 1];
      const simpleList = leafPath.length === 4 && path[2].repetition_type === 'REPEATED' && path[3].repetition_type !== 'REPEATED' && !leaf.num_children;
      const flat = leafPath.length === 2;
      if (simpleList && (leaf.type === 'INT32' || leaf.type === 'FLOAT' || leaf.type === 'DOUBLE')) {
        out.push({ chunk: this.listChunk(path, cells) });
        continue;
      }
      // Columns of the kinds tagmask declares (not an input's own schema, whose logical types stay hyparquet-writer's).
      if (flat && column.kind && (leaf.type === 'BYTE_ARRAY' || leaf.type === 'INT64') && leaf.repetition_type === 'OPTIONAL') {
        out.push(this.flatChunk(path, cells));
        continue;
      }
      const pageData = simpleList ? listPageData(cells, path) : flat ? flatPageData(cells, leaf) : this.library.encodeNestedValues(forWriter(leafPath), cells);
      // Values are handed over in their physical form already: no conversion (JSON text, unsigned) on the way.
      const element = { ...forWriter(leaf), converted_type: leaf.converted_type === 'JSON' || leaf.converted_type === 'UTF8' ? undefined : leaf.converted_type };
      const big = simpleList && !(leaf.type === 'BYTE_ARRAY');
      const result = this.library.writeColumn({
        writer: this.writer.writer,
        column: { columnName: path.slice(1).map((node) => node.name).join('.'), element, schemaPath: forWriter(path), codec: 'SNAPPY', compressors: this.writer.compressors, stats: !big, pageSize: 1 << 20, columnIndex: false, offsetIndex: true, encoding: big ? 'PLAIN' : undefined },
        pageData: forWriter(pageData),
      });
      out.push(result);
    }
    return out;
  }

  /**
   * A list-of-numbers column chunk written here, straight from the cells (the leaf INT32, FLOAT or DOUBLE): DATA_PAGE_V2
   * pages of PLAIN values, each page ending at the first row start at or past 2^18 level entries, levels as RLE runs
   * (definition: the list's values, or one entry for a null or empty list; repetition: 0 at each row start, 1 after
   * it), SNAPPY. hyparquet-writer's generic page writer checks and appends each value on its own (~40 % of writing a
   * rollout file). A page's values and levels go through scratch memory reused page after page: building a whole
   * group's values and level arrays anew touched fresh memory every group, which costs more here than the copying.
   */
  private listChunk(path: SchemaElement[], cells: unknown[]): ColumnChunk {
    const writer = this.byteSink();
    const type = path[3].type as 'INT32' | 'FLOAT' | 'DOUBLE';
    const maxDefinitionLevel = maxListDefinition(path);
    // A list that is there but empty: defined down to the list itself (below an optional list), else as null.
    const emptyLevel = path[1].repetition_type === 'OPTIONAL' ? 1 : 0;
    const { scratch, repetition, definition } = this;
    const start = writer.offset;
    const definitionBytes = (32 - Math.clz32(maxDefinitionLevel) + 7) >> 3;
    let total = 0;
    let uncompressed = 0;
    for (let row = 0; row < cells.length;) {
      // The page's rows: each one that starts before PAGE_VALUES entries.
      let entries = 0;
      let count = 0;
      let end = row;
      while (end < cells.length && entries < PAGE_VALUES) {
        const cell = cells[end++];
        const n = isList(cell) ? cell.length : 0;
        entries += n || 1;
        count += n;
      }
      const values = scratch.values(type, count);
      repetition.start(scratch.levels(0, 12 * (end - row) + 16), 1);
      definition.start(scratch.levels(1, 12 * (end - row) + 16), definitionBytes);
      let at = 0;
      for (let r = row; r < end; r++) {
        const cell = cells[r];
        const n = isList(cell) ? cell.length : 0;
        repetition.add(0, 1);
        if (n === 0) {
          definition.add(cell === null || cell === undefined ? 0 : emptyLevel, 1);
          continue;
        }
        values.set(cell as ArrayLike<number>, at);
        at += n;
        if (n > 1) repetition.add(1, n - 1);
        definition.add(maxDefinitionLevel, n);
      }
      const repetitionLevels = repetition.end();
      const definitionLevels = definition.end();
      uncompressed += this.writeV2Page(writer, new Uint8Array(values.buffer, 0, count * values.BYTES_PER_ELEMENT), repetitionLevels, definitionLevels, entries, entries - count, end - row);
      total += entries;
      row = end;
    }
    return {
      file_offset: BigInt(start),
      meta_data: { type, encodings: ['PLAIN', 'RLE'], path_in_schema: path.slice(1).map((element) => element.name), codec: 'SNAPPY', num_values: BigInt(total), total_uncompressed_size: BigInt(uncompressed), total_compressed_size: BigInt(writer.offset - start), data_page_offset: BigInt(start) },
    };
  }

  /**
   * A flat optional column of byte arrays (strings as UTF-8, JSON text) or int64s written here: DATA_PAGE_V2 pages of
   * PLAIN values, a page ending once it holds 1 MiB of values, the definition levels as RLE runs, SNAPPY; statistics
   * as hyparquet-writer gives them (null count; min and max, byte arrays in unsigned byte order, which is code point
   * order for UTF-8). No dictionary: hyparquet-writer's dictionary choice and page writing took each group's values
   * through several passes in code that a run of 20,000 rows never warms up (a third of writing a rollout file, the
   * spans column most of it). The values read back the same.
   */
  private flatChunk(path: SchemaElement[], cells: unknown[]): { chunk: ColumnChunk } {
    const writer = this.byteSink();
    const type = path[1].type as 'BYTE_ARRAY' | 'INT64';
    const { scratch, definition } = this;
    const start = writer.offset;
    let uncompressed = 0;
    let pages = 0;
    let nulls = 0;
    let min: Uint8Array | bigint | undefined;
    let max: Uint8Array | bigint | undefined;
    for (let row = 0; row < cells.length;) {
      let bytes = scratch.bytes(PAGE_BYTES + 16);
      definition.start(scratch.levels(1, 6 * Math.min(cells.length - row, PAGE_BYTES) + 16), 1);
      let at = 0;
      let end = row;
      let pageNulls = 0;
      while (end < cells.length && at < PAGE_BYTES) {
        const cell = cells[end++];
        if (cell === null || cell === undefined) { definition.add(0, 1); pageNulls++; continue; }
        definition.add(1, 1);
        if (type === 'INT64') {
          const value = cell as bigint;
          if (value < INT64_MIN || value > INT64_MAX) throw new RangeError(`parquet INT64 value out of range: ${value}`);
          scratch.view.setBigInt64(at, value, true);
          at += 8;
          if (min === undefined || value < (min as bigint)) min = value;
          if (max === undefined || value > (max as bigint)) max = value;
          continue;
        }
        const from = at + 4;
        if (typeof cell === 'string') {
          if (from + 3 * cell.length > bytes.length) bytes = scratch.bytes(from + 3 * cell.length, at);
          at = from + encoder.encodeInto(cell, bytes.subarray(from)).written;
        } else {
          const value = cell as Uint8Array;
          if (from + value.length > bytes.length) bytes = scratch.bytes(from + value.length, at);
          bytes.set(value, from);
          at = from + value.length;
        }
        scratch.view.setUint32(from - 4, at - from, true);
        const value = bytes.subarray(from, at);
        if (min === undefined || compareBytes(value, min as Uint8Array) < 0) min = value.slice();
        if (max === undefined || compareBytes(value, max as Uint8Array) > 0) max = value.slice();
      }
      uncompressed += this.writeV2Page(writer, bytes.subarray(0, at), EMPTY, definition.end(), end - row, pageNulls, end - row);
      nulls += pageNulls;
      pages++;
      row = end;
    }
    return {
      chunk: {
        file_offset: BigInt(start),
        meta_data: {
          type, encodings: ['PLAIN', 'RLE'], path_in_schema: path.slice(1).map((element) => element.name), codec: 'SNAPPY', num_values: BigInt(cells.length),
          total_uncompressed_size: BigInt(uncompressed), total_compressed_size: BigInt(writer.offset - start), data_page_offset: BigInt(start),
          statistics: { min_value: min, max_value: max, null_count: BigInt(nulls) },
          encoding_stats: [{ page_type: 'DATA_PAGE_V2', encoding: 'PLAIN', count: pages }],
        },
      },
    };
  }

  /** One DATA_PAGE_V2 page of PLAIN values (compressed here) after its levels; returns its uncompressed size. */
  private writeV2Page(writer: ByteSink, plain: Uint8Array, repetition: Uint8Array, definition: Uint8Array, values: number, nulls: number, rows: number): number {
    const compressed = this.library.snappyCompress(plain);
    const size = repetition.length + definition.length;
    this.library.writePageHeader(writer, {
      type: 'DATA_PAGE_V2', uncompressed_page_size: size + plain.length, compressed_page_size: size + compressed.length,
      data_page_header_v2: { num_values: values, num_nulls: nulls, num_rows: rows, encoding: 'PLAIN', definition_levels_byte_length: definition.length, repetition_levels_byte_length: repetition.length, is_compressed: true },
    });
    writer.appendBytes(repetition);
    writer.appendBytes(definition);
    writer.appendBytes(compressed);
    return size + plain.length;
  }

  /** hyparquet-writer's byte writer under this file's ParquetWriter. */
  private byteSink(): ByteSink {
    return (this.writer as unknown as { writer: ByteSink }).writer;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.flush();
      this.start();
      this.finishInferred();
      const schema: SchemaElement[] = [{ name: 'root', num_children: this.columns.length }, ...this.columns.flatMap((column) => this.schemaOf(column))];
      (this.writer as unknown as { schema: SchemaElement[] }).schema = schema;
      this.writer.finish();
    } catch (error) {
      this.output.abort();
      this.closeSpill();
      throw error;
    }
    this.closeSpill();
    this.output.close();
  }

  /** Inferred columns: their kind from every value, then their chunks for every row group, after the last one. */
  private finishInferred(): void {
    const inferred = this.columns.filter((column) => column.inferred);
    if (!inferred.length) return;
    const groups = this.spill?.groups ?? [];
    for (const column of inferred) {
      let kind: ColumnKind | undefined;
      for (const group of groups) {
        const place = group.find((item) => item.name === column.name);
        if (!place) continue;
        for (const value of this.readSpill(place.at, place.length)) if (value !== null && value !== undefined) kind = widen(kind, kindOf(value));
      }
      column.kind = kind ?? 'json';
      column.inferred = false;
    }
    const writer = this.writer as unknown as { writer: { offset: number }; row_groups: Array<{ columns: ColumnChunk[]; num_rows: bigint; total_compressed_size: bigint }>; pendingIndexes: unknown[] };
    writer.row_groups.forEach((rowGroup, g) => {
      const before = writer.writer.offset;
      const rows = Number(rowGroup.num_rows);
      // Chunks in schema order: declared ones as written, inferred ones written now.
      const declared = [...rowGroup.columns];
      const ordered: ColumnChunk[] = [];
      for (const column of this.columns) {
        if (!inferred.includes(column)) {
          const leaves = leafCount(this.schemaOf(column));
          ordered.push(...declared.splice(0, leaves));
          continue;
        }
        const place = groups[g]?.find((item) => item.name === column.name);
        const cells = place ? this.readSpill(place.at, place.length) : new Array(rows).fill(undefined);
        for (const result of this.encode(column, cells.map((value) => checkDeclared(column, value)))) {
          ordered.push(result.chunk);
          writer.pendingIndexes.push(result);
        }
      }
      rowGroup.columns = ordered;
      rowGroup.total_compressed_size += BigInt(writer.writer.offset - before);
    });
  }

  private closeSpill(): void {
    if (this.spill && this.spill.fd >= 0) { try { closeSync(this.spill.fd); } catch { /* closing anyway */ } }
    this.spill = undefined;
  }

  abort(): void {
    if (this.closed) return;
    this.closed = true;
    this.closeSpill();
    this.output.abort();
  }
}

const leafCount = (elements: SchemaElement[]) => elements.filter((element) => !element.num_children).length;

function leafPaths(path: SchemaTree[]): SchemaTree[][] {
  const node = path[path.length - 1];
  if (!node.children.length) return [path];
  return node.children.flatMap((child) => leafPaths([...path, child]));
}

/** A declared column's value in the form its column is written in, or a ParquetValueError naming the field. */
function checkDeclared(column: Column, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (column.kind) {
    if (!fits(column.kind, value)) throw new ParquetValueError(`field "${column.name}" holds ${preview(value)}, which does not fit its ${column.kind} column`);
    return column.kind === 'json' || column.kind === 'string' && typeof value !== 'string' ? jsonText(value) : column.kind === 'int' ? BigInt(value as number) : value;
  }
  // A column of the input's own schema: numbers back to their physical type (int64 as BigInt, 0/1 as booleans).
  const elements = column.schema!;
  let index = 0;
  const walk = (item: unknown, field: string): unknown => {
    const element = elements[index];
    if (item === null || item === undefined) { skip(); return item; }
    if (!element.num_children) {
      index++;
      return physical(element, item, field);
    }
    const isListNode = element.converted_type === 'LIST' || element.logical_type?.type === 'LIST';
    if (isListNode && element.num_children === 1 && elements[index + 1].repetition_type === 'REPEATED') {
      if (!isList(item)) throw new ParquetValueError(`field "${field}" holds ${preview(item)}, not the list its column holds`);
      const start = index;
      const repeated = elements[index + 1];
      const out: unknown[] = [];
      const items = Array.from(item);
      if (!items.length) { skip(); return out; }
      for (const entry of items) {
        index = start + 1;
        if (repeated.num_children) {
          index++; // into the repeated group's single child
          out.push(walk(entry, `${field}[]`));
        } else out.push(walk(entry, `${field}[]`));
      }
      return out;
    }
    if (element.repetition_type === 'REPEATED' && !element.num_children) {
      index++;
      return Array.from(item as ArrayLike<unknown>, (entry) => physical(element, entry, field));
    }
    // A struct (or map): each child field in order.
    if (typeof item !== 'object' || isList(item)) throw new ParquetValueError(`field "${field}" holds ${preview(item)}, not the struct its column holds`);
    const children = element.num_children!;
    index++;
    const out: Record<string, unknown> = { ...(item as Record<string, unknown>) };
    for (let c = 0; c < children; c++) {
      const child = elements[index];
      out[child.name] = walk((item as Record<string, unknown>)[child.name], `${field}.${child.name}`);
    }
    return out;
  };
  const skip = () => {
    // Past this element and its whole subtree.
    let pending = 1;
    while (pending > 0 && index < elements.length) { pending += (elements[index].num_children ?? 0) - 1; index++; }
  };
  return walk(value, column.name);
}

function physical(element: SchemaElement, value: unknown, field: string): unknown {
  if (value === null || value === undefined) return value;
  const wrong = () => new ParquetValueError(`field "${field}" holds ${preview(value)}, which does not fit its ${element.type}${element.converted_type ? ` (${element.converted_type})` : ''} column`);
  switch (element.type) {
    case 'INT64':
      if (element.converted_type?.startsWith('TIMESTAMP') || element.logical_type?.type === 'TIMESTAMP' || element.converted_type === 'DECIMAL') return value;
      if (typeof value === 'bigint') return value;
      if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
      throw wrong();
    case 'INT32':
      if (element.converted_type === 'DATE' || element.converted_type === 'DECIMAL' || element.logical_type?.type === 'DATE') return value;
      if (typeof value === 'number' && Number.isInteger(value)) return value;
      throw wrong();
    case 'BOOLEAN':
      if (typeof value === 'boolean') return value;
      if (value === 0 || value === 1) return value === 1;
      throw wrong();
    case 'FLOAT': case 'DOUBLE':
      if (typeof value === 'number') return value;
      throw wrong();
    default:
      return value;
  }
}

const preview = (value: unknown) => { const text = jsonText(value) ?? String(value); return text.length > 40 ? `${text.slice(0, 40)}…` : text; };

/** Page data for a flat optional column: values aligned with definition levels. */
function flatPageData(cells: unknown[], leaf: SchemaElement): PageData {
  const definitionLevels = new Array<number>(cells.length);
  for (let i = 0; i < cells.length; i++) definitionLevels[i] = cells[i] === null || cells[i] === undefined ? 0 : 1;
  const values = leaf.type === 'BYTE_ARRAY' ? cells.map((cell) => (typeof cell === 'string' ? encoder.encode(cell) : cell)) : cells;
  return { values, definitionLevels, repetitionLevels: [], maxDefinitionLevel: leaf.repetition_type === 'REQUIRED' ? 0 : 1 };
}

const encoder = new TextEncoder();

/** The definition level of a present value in a list of numbers (optional list, repeated, element). */
function maxListDefinition(path: SchemaElement[]): number {
  return (path[1].repetition_type === 'OPTIONAL' ? 1 : 0) + 1 + (path[3].repetition_type === 'OPTIONAL' ? 1 : 0);
}

/**
 * Page data for a list of numbers (three levels: optional list, repeated, element) that listChunk does not write
 * (a null or empty list among the cells, or INT64 or BOOLEAN values), for hyparquet-writer: levels as typed arrays.
 */
function listPageData(cells: unknown[], path: SchemaElement[]) {
  const leaf = path[3];
  const listOptional = path[1].repetition_type === 'OPTIONAL';
  const maxDefinitionLevel = maxListDefinition(path);
  let total = 0;
  for (const cell of cells) {
    const n = isList(cell) ? cell.length : 0;
    total += n === 0 ? 1 : n;
  }
  const definitionLevels = new Uint8Array(total);
  const repetitionLevels = new Uint8Array(total);
  const type = leaf.type;
  const values: DecodedArray = new Array(total);
  const slots: { [i: number]: unknown } = values;
  let at = 0;
  for (const cell of cells) {
    if (!isList(cell) || cell.length === 0) {
      // A null list: level 0 (or 1 below an optional list when the list is there but empty).
      definitionLevels[at] = cell === null || cell === undefined ? 0 : (listOptional ? 1 : 0);
      repetitionLevels[at] = 0;
      slots[at++] = undefined;
      continue;
    }
    const n = cell.length;
    definitionLevels.fill(maxDefinitionLevel, at, at + n);
    repetitionLevels[at] = 0;
    repetitionLevels.fill(1, at + 1, at + n);
    if (type === 'INT64') {
      for (let i = 0; i < n; i++) { const item = cell[i]; slots[at++] = typeof item === 'bigint' ? item : BigInt(item as number); }
    } else if (type === 'BOOLEAN') {
      for (let i = 0; i < n; i++) { const item = cell[i]; slots[at++] = typeof item === 'boolean' ? item : item === 1; }
    } else {
      for (let i = 0; i < n; i++) slots[at++] = cell[i];
    }
  }
  return { values, definitionLevels, repetitionLevels, maxDefinitionLevel };
}

/** Level entries per page of the list columns written here. */
const PAGE_VALUES = 1 << 18;
/** Bytes of values per page of the flat columns written here. */
const PAGE_BYTES = 1 << 20;

/**
 * One run of the RLE / bit-packed hybrid into `out` at `at`: `length` values equal to `value`, the value in
 * `valueBytes` bytes; returns the end.
 */
function rleRun(out: Uint8Array, at: number, length: number, value: number, valueBytes: number): number {
  let header = length * 2;
  while (header >= 0x80) { out[at++] = (header & 0x7f) | 0x80; header = Math.floor(header / 0x80); }
  out[at++] = header;
  for (let b = 0; b < valueBytes; b++) out[at++] = (value >> (8 * b)) & 0xff;
  return at;
}

/** Memory reused page after page for the pages written here (values, levels), grown as needed. */
class PageScratch {
  private buffer = new ArrayBuffer(0);
  /** The values' bytes, and a view to write numbers into them (valid until the next call that grows them). */
  view = new DataView(this.buffer);
  private readonly levelBytes = [new Uint8Array(0), new Uint8Array(0)];

  /** Room for `size` bytes of values, keeping the first `keep`. */
  bytes(size: number, keep = 0): Uint8Array {
    if (this.buffer.byteLength < size) {
      const buffer = new ArrayBuffer(Math.max(size, 2 * this.buffer.byteLength));
      if (keep) new Uint8Array(buffer).set(new Uint8Array(this.buffer, 0, keep));
      this.buffer = buffer;
      this.view = new DataView(buffer);
    }
    return new Uint8Array(this.buffer);
  }

  values(type: 'INT32' | 'FLOAT' | 'DOUBLE', count: number): Int32Array | Float32Array | Float64Array {
    this.bytes(count * (type === 'DOUBLE' ? 8 : 4));
    return type === 'INT32' ? new Int32Array(this.buffer, 0, count) : type === 'FLOAT' ? new Float32Array(this.buffer, 0, count) : new Float64Array(this.buffer, 0, count);
  }

  /** Room for `size` bytes of levels, in one of two buffers (repetition 0, definition 1). */
  levels(which: 0 | 1, size: number): Uint8Array {
    if (this.levelBytes[which].length < size) this.levelBytes[which] = new Uint8Array(Math.max(size, 2 * this.levelBytes[which].length));
    return this.levelBytes[which];
  }
}

/** Levels as RLE runs, equal neighbours merged into one run, into a buffer with room for them. */
class LevelRuns {
  private out: Uint8Array = new Uint8Array(0);
  private used = 0;
  private valueBytes = 1;
  private value = 0;
  private length = 0;

  start(out: Uint8Array, valueBytes: number): void {
    this.out = out;
    this.used = 0;
    this.valueBytes = valueBytes;
    this.length = 0;
  }

  add(value: number, length: number): void {
    if (this.length && value === this.value) { this.length += length; return; }
    if (this.length) this.used = rleRun(this.out, this.used, this.length, this.value, this.valueBytes);
    this.value = value;
    this.length = length;
  }

  /** The runs written (a view into the buffer). */
  end(): Uint8Array {
    if (this.length) this.used = rleRun(this.out, this.used, this.length, this.value, this.valueBytes);
    this.length = 0;
    return this.out.subarray(0, this.used);
  }
}

/** Byte-array order for statistics: unsigned, byte by byte, then the shorter first. */
function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const EMPTY = new Uint8Array(0);
