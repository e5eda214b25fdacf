/**
 * Parquet rows in, streamed with bounded memory.
 *
 * The columns rollouts are made of (token ids, masks, lengths: numbers, flat or in one list level) are decoded
 * here page by page, straight from hyparquet's page decoders into typed arrays, and handed out a batch of rows
 * at a time: memory is one page per column plus a batch of rows, whatever the row group's size, and no BigInt
 * or per-row array is made until a row is handed out (hyparquet's own row assembly made a BigInt per INT64 id and
 * spent ~40 % of a read in garbage collection). Every other column (strings, structs, nested lists, dates…) is
 * decoded a page at a time too, by hyparquet's page reader, and assembled (hyparquet's Dremel assembly) a batch
 * of rows at a time: no column is ever decoded a whole row group at once (a million-row group of a nested list
 * took 2.4 GB that way).
 *
 * Limits, each a located error and never a crash: a page larger than PAGE_BYTES or with more than PAGE_VALUES
 * values (ASSEMBLED_PAGE_VALUES for assembled columns), a row holding more than ROW_VALUES values in one column
 * (that row fails, the others go on; in an assembled column, a row spanning pages past it fails its group), a
 * column chunk over CHUNK_BYTES, and a row group whose `num_rows` disagrees with the rows its columns hold (its
 * rows fail, with the reason; the groups after it go on). Every codec pyarrow and Polars write is read:
 * SNAPPY, GZIP, BROTLI, ZSTD (Polars' default), LZ4 and LZ4_RAW.
 */
import { open, stat } from 'node:fs/promises';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { InputError } from './jsonl.ts';
import type { ColumnChunk, CompressionCodec, DecodedArray, FileMetaData, PageHeader, ParquetType, SchemaElement, SchemaTree } from 'hyparquet';

/** Most values one row may hold in one column: 2^24 ids is ~100 MB of JSONL, far beyond any rollout. */
export const ROW_VALUES = 1 << 24;
/** Most values one page may declare (its levels are decoded whole). */
export const PAGE_VALUES = 1 << 24;
/**
 * Most values one page of a column hyparquet assembles (strings, structs, nested lists) may declare: those become
 * JS values and arrays (tens of bytes each, not a typed array's 8), so the bound is lower. Real writers stay far
 * below it (pyarrow's pages are 1 MB or 20,000 rows; tagmask's own row groups hold at most 2^20 values).
 */
export const ASSEMBLED_PAGE_VALUES = 1 << 21;
/** Most bytes one page may decompress to. */
export const PAGE_BYTES = 1 << 28;
/** Most bytes one column chunk may take in the file (it is read whole). */
export const CHUNK_BYTES = 2 ** 31 - 1;
/** Rows handed out at a time. */
const BATCH_ROWS = 1024;
/** Pages up to this size (compressed and uncompressed together) share one snappy decompressor's memory. */
const SNAPPY_KEPT_BYTES = 1 << 25;

/** One row as read: a field per column (a null cell is a field the row does not have), or why it could not be read. */
export interface ParquetRow {
  number: number;
  value?: Record<string, unknown>;
  error?: string;
  /**
   * With `typedIds`, the last row of a batch whose ids share one buffer: the batch's typed `tokens` views are valid
   * until the row after this one is asked for (the buffer is then reused).
   */
  batchEnd?: true;
}

type Library = {
  parquetMetadataAsync: typeof import('hyparquet/src/metadata.js').parquetMetadataAsync;
  parquetSchema: typeof import('hyparquet/src/metadata.js').parquetSchema;
  snappyUncompress: typeof import('hyparquet/src/snappy.js').snappyUncompress;
  parquetHeader: typeof import('hyparquet/src/column.js').parquetHeader;
  readDataPage: typeof import('hyparquet/src/datapage.js').readDataPage;
  readDataPageV2: typeof import('hyparquet/src/datapage.js').readDataPageV2;
  decompressPage: typeof import('hyparquet/src/datapage.js').decompressPage;
  readPlain: typeof import('hyparquet/src/plain.js').readPlain;
  getMaxDefinitionLevel: typeof import('hyparquet/src/schema.js').getMaxDefinitionLevel;
  getMaxRepetitionLevel: typeof import('hyparquet/src/schema.js').getMaxRepetitionLevel;
  readPage: typeof import('hyparquet/src/column.js').readPage;
  convert: typeof import('hyparquet/src/convert.js').convert;
  parsers: typeof import('hyparquet/src/convert.js').DEFAULT_PARSERS;
  assembleNested: typeof import('hyparquet/src/assemble.js').assembleNested;
  compressors: Record<string, (input: Uint8Array, outputLength: number) => Uint8Array>;
};

let extraCodecsLoaded: typeof import('hyparquet-compressors') | undefined;

/**
 * hyparquet-compressors (ZSTD, LZ4), loaded by readParquetRows for a file whose column chunks use them: its modules
 * cost ~90 ms of CPU to load, a tenth of reading 14 M tokens of SNAPPY Parquet that never needs them.
 */
async function loadExtraCodecs(metadata: FileMetaData): Promise<void> {
  if (extraCodecsLoaded) return;
  const needed = metadata.row_groups.some((group) => group.columns.some((chunk) => EXTRA_CODECS.has(chunk.meta_data?.codec ?? '')));
  if (needed) extraCodecsLoaded = await import('hyparquet-compressors');
}

const EXTRA_CODECS = new Set(['ZSTD', 'LZ4', 'LZ4_RAW']);

function extraCodecs(codec: string): typeof import('hyparquet-compressors') {
  if (!extraCodecsLoaded) throw new ParquetLimit(`a ${codec} page in a column chunk whose metadata names another codec`);
  return extraCodecsLoaded;
}

/** What hyparquet's page readers take about a column (its ColumnDecoder, not exported by name). */
type ColumnDecoder = Parameters<Library['readDataPage']>[2];

let library: Promise<Library> | undefined;

/** hyparquet and the decompressors, loaded when a Parquet file is met (they cost every CLI start ~50 ms otherwise). */
function load(): Promise<Library> {
  library ??= (async () => {
    // hyparquet's modules one by one: its index also loads its whole-file reader, query and scan (~40 ms of CPU).
    const [metadata, snappyJs, column, datapage, plain, schema, convert, assemble, snappy] = await Promise.all([
      import('hyparquet/src/metadata.js'), import('hyparquet/src/snappy.js'), import('hyparquet/src/column.js'), import('hyparquet/src/datapage.js'), import('hyparquet/src/plain.js'),
      import('hyparquet/src/schema.js'), import('hyparquet/src/convert.js'), import('hyparquet/src/assemble.js'),
      import('hysnappy'),
    ]);
    const bounded = (codec: string, decompress: (input: Uint8Array, length: number) => Uint8Array) => (input: Uint8Array, length: number) => {
      if (!(length >= 0 && length <= PAGE_BYTES)) throw new ParquetLimit(`a ${codec} page declares ${length} bytes uncompressed (at most ${PAGE_BYTES} are read)`);
      // An empty page (a dictionary of no values): LZ4 codes it as one zero byte, which hyparquet-compressors' LZ4 refuses.
      if (length === 0) return new Uint8Array(0);
      return decompress(input, length);
    };
    // SNAPPY through one instance of hysnappy's WebAssembly snappy, kept for the run: hyparquet-compressors'
    // decompressSnappy (hysnappy's snappyUncompress) instantiates the module and grows fresh memory for every page,
    // which cost 4-7x the decompression itself (pyarrow's 1 MB pages, measured on a 14 M-token file). A page past
    // SNAPPY_KEPT_BYTES gets an instance of its own, so the kept one's memory stays small.
    // The stream's own length must be the page's: the module writes what the stream says (and checks the stream
    // against that) wherever it is told, so a shorter one would leave the kept memory's last page in the output.
    const kept = snappy.snappyUncompressor();
    const decompressSnappy = (input: Uint8Array, length: number) => {
      const declared = snappyLength(input);
      if (declared !== length) throw new ParquetLimit(`a SNAPPY page says ${length} bytes uncompressed but its data holds ${declared ?? 'no length'}`);
      return (input.length + length <= SNAPPY_KEPT_BYTES ? kept : snappy.snappyUncompressor())(input, length);
    };
    // gzip and brotli through node:zlib (native, and bounded by the page's declared size); ZSTD and LZ4 from
    // hyparquet-compressors (fzstd, its LZ4), loaded for a file whose columns use them (extraCodecs).
    const compressors = {
      SNAPPY: bounded('SNAPPY', decompressSnappy),
      GZIP: bounded('GZIP', (input, length) => gunzipSync(input, { maxOutputLength: Math.max(length, 1) })),
      BROTLI: bounded('BROTLI', (input, length) => brotliDecompressSync(input, { maxOutputLength: Math.max(length, 1) })),
      // fzstd is given no output buffer: handed one, it compares the buffer with 1 (==), which turns all of it into a string.
      ZSTD: bounded('ZSTD', (input, length) => {
        const declared = zstdContentSize(input);
        if (declared !== undefined && declared > length) throw new ParquetLimit(`a ZSTD page says ${length} bytes uncompressed but its frame holds ${declared}`);
        return extraCodecs('ZSTD').decompressZstd(input);
      }),
      // LZ4 (the deprecated codec): Hadoop's framing, or raw blocks, as Arrow's reader tries them.
      LZ4: bounded('LZ4', (input, length) => extraCodecs('LZ4').decompressLz4(input, length)),
      LZ4_RAW: bounded('LZ4_RAW', (input, length) => extraCodecs('LZ4_RAW').decompressLz4Raw(input, length)),
    };
    return { parquetMetadataAsync: metadata.parquetMetadataAsync, parquetSchema: metadata.parquetSchema, snappyUncompress: snappyJs.snappyUncompress, parquetHeader: column.parquetHeader, readDataPage: datapage.readDataPage, readDataPageV2: datapage.readDataPageV2, decompressPage: datapage.decompressPage, readPlain: plain.readPlain, getMaxDefinitionLevel: schema.getMaxDefinitionLevel, getMaxRepetitionLevel: schema.getMaxRepetitionLevel, readPage: column.readPage, convert: convert.convert, parsers: convert.DEFAULT_PARSERS, assembleNested: assemble.assembleNested, compressors };
  })();
  return library;
}

/** A limit was reached: the rows it touches fail with this message, the others go on. */
class ParquetLimit extends Error {}

/** INT64 values as numbers where exact, else as BigInt (an id near 2^63 comes back as it was). */
export function exactInteger(value: bigint): number | bigint {
  return value >= -9007199254740991n && value <= 9007199254740991n ? Number(value) : value;
}

/** hyparquet's values for tagmask: BigInts as numbers where exact; Dates stay Dates (JSON writes them as ISO text). */
export function plainValue(value: unknown): unknown {
  if (typeof value === 'bigint') return exactInteger(value);
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => { const plain = plainValue(item); if (plain !== item) changed = true; return plain; });
    return changed ? out : value;
  }
  if (value instanceof Date) return value;
  if (ArrayBuffer.isView(value)) return value;
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = plainValue(item);
    return out;
  }
  return value;
}

const INTEGER_TYPES = new Set([undefined, 'INT_8', 'INT_16', 'INT_32', 'INT_64', 'UINT_8', 'UINT_16', 'UINT_32', 'UINT_64']);

/** Whether a leaf holds plain numbers or booleans (no decimal, date or time meaning to convert). */
function isNumeric(element: SchemaElement): element is SchemaElement & { type: 'INT32' | 'INT64' | 'BOOLEAN' | 'FLOAT' | 'DOUBLE' } {
  const { type, converted_type: converted, logical_type: logical } = element;
  if (type !== 'INT32' && type !== 'INT64' && type !== 'BOOLEAN' && type !== 'FLOAT' && type !== 'DOUBLE') return false;
  if (logical && logical.type !== 'INTEGER') return false;
  return INTEGER_TYPES.has(converted);
}

/**
 * A top-level column this reader decodes itself: a numeric leaf, flat or under exactly one repeated level
 * (the three-level LIST pyarrow, Polars and DuckDB write, or a legacy repeated field).
 */
interface FastColumn { name: string; path: SchemaTree[]; leaf: SchemaElement & { type: ParquetType }; repeated: boolean; maxDefinition: number; listDefinition: number }

function fastColumn(library: Library, child: SchemaTree, root: SchemaTree): FastColumn | undefined {
  const path: SchemaTree[] = [root];
  let node = child;
  for (;;) {
    path.push(node);
    if (!node.children.length) break;
    if (node.children.length !== 1) return undefined;
    node = node.children[0];
  }
  const leaf = node.element;
  if (!isNumeric(leaf)) return undefined;
  const repetition = library.getMaxRepetitionLevel(path);
  if (repetition > 1) return undefined;
  // Groups between the column and its leaf are only list wrappers: a struct of one field is not flattened here.
  for (let i = 1; i < path.length - 1; i++) {
    const element = path[i].element;
    const wrapper = element.repetition_type === 'REPEATED' || element.converted_type === 'LIST' || element.logical_type?.type === 'LIST';
    if (!wrapper) return undefined;
  }
  let listDefinition = 0;
  if (repetition) {
    for (let i = 1; i < path.length; i++) {
      if (path[i].element.repetition_type !== 'REQUIRED') listDefinition++;
      if (path[i].element.repetition_type === 'REPEATED') break;
    }
  }
  return { name: child.element.name, path, leaf, repeated: repetition === 1, maxDefinition: library.getMaxDefinitionLevel(path), listDefinition };
}

/**
 * Rows of one fast column, decoded page by page: `values` (numbers, or BigInts past 2^53) and per row its
 * [start, end) in them, or a null cell, or a row over ROW_VALUES.
 */
class ColumnCursor {
  private readonly view: DataView;
  private readonly reader: { view: DataView; offset: number };
  private dictionary?: ArrayLike<unknown>;
  private readonly decoder: ColumnDecoder;
  /** Values of the rows decoded and not yet taken. */
  values = new Float64Array(1024);
  /** BigInts of values past 2^53 (by index into `values`), where there are any. */
  wide?: Map<number, bigint>;
  used = 0;
  /** Per decoded row: start in `values` (end is the next row's start), -1 for a null cell, -2 for a row over the limit. */
  starts: number[] = [];
  ends: number[] = [];
  /** The row being assembled (its start), when the column repeats and the row may go on in the next page. */
  private open = -1;
  private openCount = 0;
  private openNull = false;
  done = false;
  readonly booleans: boolean;
  /** A page's levels, indices and values, decoded into the same memory page after page (fresh memory costs more than decoding). */
  private readonly scratch = new Scratch();

  constructor(private readonly library: Library, readonly column: FastColumn, bytes: Uint8Array, codec: CompressionCodec) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.reader = { view: this.view, offset: 0 };
    this.booleans = column.leaf.type === 'BOOLEAN';
    this.decoder = { pathInSchema: column.path.slice(1).map((node) => node.element.name), type: column.leaf.type, element: column.leaf, schemaPath: column.path, codec, compressors: library.compressors, parsers: library.parsers };
  }

  /** Complete rows decoded and not yet taken. */
  get ready(): number { return this.starts.length; }

  /** Decode pages until `rows` complete rows are ready or the chunk ends. */
  fill(rows: number): void {
    while (this.starts.length < rows && !this.done) {
      if (this.reader.offset >= this.view.byteLength - 1) { this.finish(); break; }
      this.page();
    }
  }

  private finish(): void {
    this.done = true;
    if (this.open >= 0 || this.openNull) this.closeRow();
  }

  private page(): void {
    const library = this.library;
    const header = library.parquetHeader(this.reader);
    const size = header.compressed_page_size;
    if (!(size >= 0) || this.reader.offset + size > this.view.byteLength) throw new ParquetLimit(`column ${this.column.name}: a page runs past the end of its column chunk`);
    if (!(header.uncompressed_page_size >= 0 && header.uncompressed_page_size <= PAGE_BYTES)) throw new ParquetLimit(`column ${this.column.name}: a page declares ${header.uncompressed_page_size} bytes uncompressed (at most ${PAGE_BYTES} are read)`);
    const bytes = new Uint8Array(this.view.buffer, this.view.byteOffset + this.reader.offset, size);
    this.reader.offset += size;
    const decoder = this.decoder;
    if (header.type === 'DICTIONARY_PAGE') {
      const count = header.dictionary_page_header?.num_values ?? 0;
      if (!(count >= 0 && count <= PAGE_VALUES)) throw new ParquetLimit(`column ${this.column.name}: a dictionary of ${count} values (at most ${PAGE_VALUES})`);
      const page = library.decompressPage(bytes, header.uncompressed_page_size, this.decoder.codec, library.compressors);
      this.dictionaryNumbers = undefined;
      this.dictionary = library.readPlain({ view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: 0 }, this.column.leaf.type, count, undefined) as ArrayLike<unknown>;
      return;
    }
    const declared = header.data_page_header?.num_values ?? header.data_page_header_v2?.num_values;
    if (declared === undefined) return; // an index page, or one this reader does not know: nothing to decode
    if (!(declared >= 0 && declared <= PAGE_VALUES)) throw new ParquetLimit(`column ${this.column.name}: a page declares ${declared} values (at most ${PAGE_VALUES} are read)`);
    const encoding = header.data_page_header?.encoding ?? header.data_page_header_v2?.encoding ?? 'PLAIN';
    const dictionaryEncoded = encoding === 'RLE_DICTIONARY' || encoding === 'PLAIN_DICTIONARY';
    if (dictionaryEncoded && !this.dictionary) throw new ParquetLimit(`column ${this.column.name}: a dictionary-encoded page without a dictionary`);
    if (this.fastPage(header, bytes, declared, encoding, dictionaryEncoded)) return;
    // Encodings read less often (delta, byte stream split, bit-packed levels): hyparquet decodes the page.
    const { definitionLevels, repetitionLevels, dataPage } = header.type === 'DATA_PAGE_V2'
      ? library.readDataPageV2(bytes, header, decoder)
      : library.readDataPage(library.decompressPage(bytes, header.uncompressed_page_size, this.decoder.codec, library.compressors), header.data_page_header!, decoder);
    const dictionary = dictionaryEncoded ? this.dictionary : undefined;
    const values = dictionary ? Array.from(dataPage as ArrayLike<number>, (index) => dictionary[index]) : dataPage as ArrayLike<unknown>;
    this.take(declared, definitionLevels as ArrayLike<number>, repetitionLevels as ArrayLike<number>, values, 0);
  }

  /** Levels, dictionary indices and plain values decoded here into typed arrays: the common pages, without hyparquet's per-value arrays. */
  private fastPage(header: PageHeader, bytes: Uint8Array, count: number, encoding: string, dictionaryEncoded: boolean): boolean {
    const { repeated, maxDefinition } = this.column;
    const v2 = header.type === 'DATA_PAGE_V2' ? header.data_page_header_v2! : undefined;
    const v1 = header.data_page_header;
    if (!v2 && (v1!.definition_level_encoding !== 'RLE' || (repeated && v1!.repetition_level_encoding !== 'RLE'))) return false;
    if (!dictionaryEncoded && encoding !== 'PLAIN' && !(encoding === 'RLE' && this.booleans)) return false;
    const library = this.library;
    let page: Uint8Array;
    let at = 0;
    const repetition = repeated ? this.scratch.levels(0, count) : EMPTY;
    const definition = maxDefinition ? this.scratch.levels(1, count) : EMPTY;
    if (v2) {
      const repetitionBytes = v2.repetition_levels_byte_length;
      const definitionBytes = v2.definition_levels_byte_length;
      if (repeated) readHybrid(bytes, 0, repetitionBytes, bitWidth(1), count, repetition);
      if (maxDefinition) readHybrid(bytes, repetitionBytes, repetitionBytes + definitionBytes, bitWidth(maxDefinition), count, definition);
      const rest = bytes.subarray(repetitionBytes + definitionBytes);
      const size = header.uncompressed_page_size - repetitionBytes - definitionBytes;
      page = v2.is_compressed !== false && size ? this.decompressData(rest, size) : rest;
    } else {
      page = this.decompressData(bytes, header.uncompressed_page_size);
      const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
      if (repeated) { const length = view.getUint32(at, true); at += 4; readHybrid(page, at, at + length, bitWidth(1), count, repetition); at += length; }
      if (maxDefinition) { const length = view.getUint32(at, true); at += 4; readHybrid(page, at, at + length, bitWidth(maxDefinition), count, definition); at += length; }
    }
    let present = count;
    if (maxDefinition) { present = 0; for (let i = 0; i < count; i++) if (definition[i] === maxDefinition) present++; }
    let values: ArrayLike<unknown>;
    if (dictionaryEncoded) {
      const width = page[at++];
      const indices = this.scratch.indices(present);
      if (width) readHybrid(page, at, page.length, width, present, indices);
      else indices.fill(0);
      const dictionary = this.numericDictionary();
      // The common page: every entry a value, none past 2^53: looked up straight into the rows' values.
      if (repeated && present === count && !this.dictionaryWide && this.takeDense(count, repetition, indices, dictionary)) return true;
      const out = this.scratch.numbers(present);
      for (let i = 0; i < present; i++) out[i] = dictionary[indices[i]];
      if (this.dictionaryWide) {
        const mixed: unknown[] = Array.from(out);
        for (let i = 0; i < present; i++) { const big = this.dictionaryWide.get(indices[i]); if (big !== undefined) mixed[i] = big; }
        values = mixed;
      } else values = out;
    } else if (encoding === 'RLE') {
      const bits = new Uint8Array(present);
      const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
      // RLE booleans carry their byte length first, in both page versions.
      const length = view.getUint32(at, true);
      at += 4;
      readHybrid(page, at, at + length, 1, present, bits);
      values = bits;
    } else if (this.column.leaf.type === 'INT64') {
      values = this.plainInt64(page, at, present);
    } else {
      values = library.readPlain({ view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: at }, this.column.leaf.type!, present, undefined) as ArrayLike<unknown>;
    }
    if (!(repeated && present === count && this.takeDense(count, repetition, values))) this.take(count, definition, repetition, values, maxDefinition ? 0 : -1);
    return true;
  }

  /**
   * `take` for a page of a list column whose every level entry is a present value (no null or empty list, no null
   * element: the common page of ids or masks): the values copied in one go (dictionary indices looked up on the way), rows closed where the repetition levels
   * hold a 0 (found by indexOf), instead of a pass over the levels entry by entry. False, with nothing taken, where
   * a row would pass ROW_VALUES or the values are not plain numbers: `take` then reads the page as always.
   */
  private takeDense(count: number, repetition: Uint8Array, data: ArrayLike<unknown>, dictionary?: Float64Array): boolean {
    const unsigned = !dictionary && this.column.leaf.converted_type === 'UINT_32';
    if (dictionary ? !(data instanceof Uint32Array) : !(data instanceof Float64Array || data instanceof Float32Array || data instanceof Int32Array) || (unsigned && !(data instanceof Int32Array))) return false;
    if (data.length !== count) return false;
    // A page that goes on with a row must have one open (not a null one), as `take` would read it.
    if (count && repetition[0] !== 0 && (this.open < 0 || this.openNull)) return false;
    let zero = repetition.indexOf(0);
    let length = this.openCount + (zero < 0 ? count : zero);
    while (zero >= 0) {
      if (length > ROW_VALUES) return false;
      const next = repetition.indexOf(0, zero + 1);
      length = (next < 0 ? count : next) - zero;
      zero = next;
    }
    if (length > ROW_VALUES) return false;
    this.ensure(count);
    const values = this.values;
    const used = this.used;
    if (dictionary) for (let i = 0; i < count; i++) values[used + i] = dictionary[(data as Uint32Array)[i]];
    else if (unsigned) for (let i = 0; i < count; i++) values[used + i] = (data as Int32Array)[i] >>> 0;
    else values.set(data as Float64Array, used);
    let at = 0;
    for (zero = repetition.indexOf(0); zero >= 0; zero = repetition.indexOf(0, zero + 1)) {
      if (this.open >= 0 || this.openNull) {
        this.used = used + zero;
        this.openCount += zero - at;
        this.closeRow();
      }
      this.open = used + zero;
      at = zero;
    }
    this.openCount += count - at;
    this.used = used + count;
    return true;
  }

  /**
   * A data page's bytes, decompressed. SNAPPY into scratch memory reused page after page, by hyparquet's own
   * decoder (which checks the stream makes exactly `size` bytes): this page is decoded before the next is read,
   * and nothing of it is kept (dictionary pages, kept across pages, are decompressed into memory of their own).
   * Fresh memory per page and the WebAssembly decoder's copies in and out cost twice this.
   */
  private decompressData(bytes: Uint8Array, size: number): Uint8Array {
    const { codec } = this.decoder;
    if (codec !== 'SNAPPY' || !(size > 0)) return this.library.decompressPage(bytes, size, codec, this.library.compressors);
    const declared = snappyLength(bytes);
    if (declared !== size) throw new ParquetLimit(`a SNAPPY page says ${size} bytes uncompressed but its data holds ${declared ?? 'no length'}`);
    const out = this.scratch.page(size);
    this.library.snappyUncompress(bytes, out);
    return out;
  }

  /** PLAIN INT64 values as numbers, read as two 32-bit halves: a BigInt only for a value past 2^53. */
  private plainInt64(page: Uint8Array, at: number, count: number): ArrayLike<unknown> {
    if (at + count * 8 > page.length) throw new ParquetLimit(`column ${this.column.name}: a page holds fewer values than it declares`);
    const view = new DataView(page.buffer, page.byteOffset + at, count * 8);
    const unsigned = this.column.leaf.converted_type === 'UINT_64';
    const out = new Float64Array(count);
    let mixed: unknown[] | undefined;
    for (let i = 0; i < count; i++) {
      const low = view.getUint32(i * 8, true);
      const high = view.getInt32(i * 8 + 4, true);
      if (high >= -0x200000 && high < 0x200000 && !(unsigned && high < 0)) out[i] = high * 4294967296 + low;
      else (mixed ??= [])[i] = exactInteger(unsigned ? view.getBigUint64(i * 8, true) : view.getBigInt64(i * 8, true));
    }
    if (!mixed) return out;
    const values: unknown[] = Array.from(out);
    mixed.forEach((value, i) => { values[i] = value; });
    return values;
  }

  private dictionaryNumbers?: Float64Array;
  private dictionaryWide?: Map<number, bigint>;

  /** The dictionary as numbers (BigInts past 2^53 kept aside), made once per dictionary page. */
  private numericDictionary(): Float64Array {
    if (this.dictionaryNumbers) return this.dictionaryNumbers;
    const dictionary = this.dictionary!;
    const out = new Float64Array(dictionary.length);
    this.dictionaryWide = undefined;
    for (let i = 0; i < dictionary.length; i++) {
      const value = this.number(dictionary[i]);
      if (typeof value === 'bigint') { (this.dictionaryWide ??= new Map()).set(i, value); out[i] = NaN; } else out[i] = value;
    }
    this.dictionaryNumbers = out;
    return out;
  }

  /** One stored value as a number, or a BigInt past 2^53 (unsigned types read unsigned). */
  private number(raw: unknown): number | bigint {
    const converted = this.column.leaf.converted_type;
    if (typeof raw === 'number') return converted === 'UINT_32' && raw < 0 ? raw + 2 ** 32 : raw;
    if (typeof raw === 'bigint') return exactInteger(converted === 'UINT_64' && raw < 0n ? raw + (1n << 64n) : raw);
    if (typeof raw === 'boolean') return raw ? 1 : 0;
    return NaN;
  }

  private ensure(extra: number): void {
    if (this.used + extra <= this.values.length) return;
    let size = this.values.length * 2;
    while (size < this.used + extra) size *= 2;
    const bigger = new Float64Array(size);
    bigger.set(this.values.subarray(0, this.used));
    this.values = bigger;
  }

  private push(raw: unknown): void {
    if (this.openCount++ >= ROW_VALUES) return;
    const value = typeof raw === 'number' && this.column.leaf.converted_type !== 'UINT_32' ? raw : this.number(raw);
    if (typeof value === 'bigint') { (this.wide ??= new Map()).set(this.used, value); this.values[this.used++] = NaN; } else this.values[this.used++] = value;
  }

  private closeRow(): void {
    if (this.openNull) { this.starts.push(-1); this.ends.push(-1); }
    else if (this.openCount > ROW_VALUES) { this.used = this.open; this.starts.push(-2); this.ends.push(this.openCount); }
    else { this.starts.push(this.open); this.ends.push(this.used); }
    this.open = -1;
    this.openCount = 0;
    this.openNull = false;
  }

  /**
   * `count` level pairs of one page and their present values: rows closed where a new one starts (repetition
   * 0), nulls where the definition level says so. `allPresent` (-1): no definition levels, every value is there.
   */
  private take(count: number, definition: ArrayLike<number>, repetition: ArrayLike<number>, data: ArrayLike<unknown>, allPresent: number): void {
    const { repeated, maxDefinition, listDefinition } = this.column;
    const everyValue = allPresent === -1 || definition.length === 0;
    let next = 0;
    this.ensure(Math.min(count, ROW_VALUES));
    // Plain numbers (a typed array of values that need no conversion) are copied without a call per value.
    const direct = data instanceof Float64Array || data instanceof Float32Array || (data instanceof Int32Array && this.column.leaf.converted_type !== 'UINT_32') || data instanceof Uint8Array;
    if (!repeated) {
      for (let i = 0; i < count; i++) {
        this.open = this.used;
        if (everyValue || definition[i] === maxDefinition) {
          if (direct) { this.openCount++; this.values[this.used++] = data[next++] as number; } else this.push(data[next++]);
        } else this.openNull = true;
        this.closeRow();
      }
      return;
    }
    if (direct && data instanceof Float64Array) { this.takeList(count, definition, repetition, data, everyValue); return; }
    const values = this.values;
    for (let i = 0; i < count; i++) {
      const def = everyValue ? maxDefinition : definition[i];
      if (repetition[i] === 0) {
        if (this.open >= 0 || this.openNull) this.closeRow();
        this.open = this.used;
        // Below the list's own level: the list is null (an empty list is one level up from its elements).
        if (def < listDefinition - 1) this.openNull = true;
      }
      if (def >= listDefinition) {
        if (def !== maxDefinition) this.push(null); // a null element: NaN, which no id or mask check lets through
        else if (direct && this.openCount < ROW_VALUES) { this.openCount++; values[this.used++] = data[next++] as number; }
        else this.push(data[next++]);
      }
    }
  }

  /**
   * `take` for a list column whose values are plain numbers: the common page (ids, masks), one loop with the row's
   * state in locals (through `this` per value it cost ~4x as much).
   */
  private takeList(count: number, definition: ArrayLike<number>, repetition: ArrayLike<number>, data: Float64Array, everyValue: boolean): void {
    const { maxDefinition, listDefinition } = this.column;
    const values = this.values;
    let used = this.used;
    let next = 0;
    let openCount = this.openCount;
    for (let i = 0; i < count; i++) {
      const def = everyValue ? maxDefinition : definition[i];
      if (repetition[i] === 0) {
        if (this.open >= 0 || this.openNull) { this.used = used; this.openCount = openCount; this.closeRow(); used = this.used; openCount = 0; }
        this.open = used;
        // Below the list's own level: the list is null (an empty list is one level up from its elements).
        if (def < listDefinition - 1) this.openNull = true;
      }
      if (def < listDefinition) continue;
      if (def === maxDefinition && openCount < ROW_VALUES) { openCount++; values[used++] = data[next++]; continue; }
      this.used = used;
      this.openCount = openCount;
      this.push(def === maxDefinition ? data[next++] : null); // a null element: NaN, which no id or mask check lets through
      used = this.used;
      openCount = this.openCount;
    }
    this.used = used;
    this.openCount = openCount;
  }

  /** With `typedIds`: the taken rows' ids, and per row its range there (-1 where the row is left to `cell`). */
  private ids?: Uint32Array;
  private idStarts?: Int32Array;
  private idEnds?: Int32Array;

  /**
   * Read the first `rows` rows' values as token ids into `buffer` (its views go out with the rows, valid until the
   * next batch: ParquetRow.batchEnd), for `cell` to hand out. A row that is not a list of ids (a null cell, a row over the
   * limit, a negative, fractional or null element, a value past MAX_TOKEN_ID or 2^53) is left to `cell`'s usual
   * array, so that what it says about the row stays the same.
   */
  typedIds(rows: number, buffer: { ids: Uint32Array }): void {
    const { values, starts, ends } = this;
    let total = 0;
    for (let row = 0; row < rows; row++) if (starts[row] >= 0) total += ends[row] - starts[row];
    // One buffer for the whole read, reused batch after batch: a fresh one per batch cost more in first touches of
    // its memory than reading the ids into it (this VM faults fresh pages in slowly).
    if (buffer.ids.length < total) buffer.ids = new Uint32Array(Math.max(total, buffer.ids.length * 1.5));
    const ids = buffer.ids;
    const idStarts = new Int32Array(rows);
    const idEnds = new Int32Array(rows);
    let at = 0;
    for (let row = 0; row < rows; row++) {
      const start = starts[row];
      idStarts[row] = -1;
      if (start < 0) continue;
      const end = ends[row];
      const from = at;
      let bad = false;
      // `>>> 0` keeps exactly the integers 0..2^32-1 (MAX_TOKEN_ID): anything else comes out different.
      for (let i = start; i < end; i++) { const value = values[i]; const id = value >>> 0; ids[at++] = id; if (id !== value) bad = true; }
      if (bad) { at = from; continue; }
      idStarts[row] = from;
      idEnds[row] = at;
    }
    this.ids = ids;
    this.idStarts = idStarts;
    this.idEnds = idEnds;
  }

  /** The cell of taken row `row` (0-based among those ready). */
  cell(row: number): unknown {
    if (this.ids && this.idStarts![row] >= 0) return this.ids.subarray(this.idStarts![row], this.idEnds![row]);
    const start = this.starts[row];
    if (start === -1) return undefined;
    if (start === -2) throw new ParquetLimit(`column ${this.column.name} holds ${this.ends[row]} values in this row (at most ${ROW_VALUES} are read)`);
    const end = this.ends[row];
    const wide = this.wide;
    if (!this.column.repeated) return wide?.get(start) ?? (this.booleans ? this.values[start] === 1 : this.values[start]);
    const out = new Array(end - start);
    // A null element (NaN here) of a boolean list stays null: read as false it would pass as a mask's 0.
    if (this.booleans) for (let i = start; i < end; i++) { const value = this.values[i]; out[i - start] = value === value ? value === 1 : null; }
    else for (let i = start; i < end; i++) out[i - start] = this.values[i];
    if (wide) for (let i = start; i < end; i++) { const big = wide.get(i); if (big !== undefined) out[i - start] = big; }
    return out;
  }

  /** Drop the first `rows` rows (handed out): their values go, the rest move to the front. */
  drop(rows: number): void {
    this.ids = this.idStarts = this.idEnds = undefined;
    if (!rows) return;
    const keepFrom = rows < this.starts.length ? this.starts.slice(rows).find((start) => start >= 0) ?? (this.open >= 0 ? this.open : this.used) : (this.open >= 0 ? this.open : this.used);
    const shift = keepFrom;
    this.values.copyWithin(0, shift, this.used);
    this.used -= shift;
    if (this.wide) {
      const moved = new Map<number, bigint>();
      for (const [at, big] of this.wide) if (at >= shift) moved.set(at - shift, big);
      this.wide = moved.size ? moved : undefined;
    }
    this.starts = this.starts.slice(rows).map((start) => (start >= 0 ? start - shift : start));
    this.ends = this.ends.slice(rows).map((end, i) => (this.starts[i] >= 0 ? end - shift : end));
    if (this.open >= 0) this.open -= shift;
    // Give back memory a huge row took (a few pages' worth is kept: allocating it again for every batch cost more than decoding).
    if (this.values.length > 1 << 21 && this.used < this.values.length / 4) this.values = this.values.slice(0, Math.max(1024, this.used * 2));
  }
}

/**
 * Rows of one leaf column chunk that hyparquet decodes and assembles (strings, dates, a struct's fields, nested
 * lists): read a page at a time with hyparquet's page reader, which appends the page's rows (Dremel-assembled up
 * to the top-level column) to `rows`, continuing the last row where the page goes on with it. The last row is
 * held back until the next page (or the chunk's end) shows it complete.
 */
class AssembledCursor {
  private readonly reader: { view: DataView; offset: number };
  private dictionary?: DecodedArray;
  private rows: unknown[] = [];
  /** Values of pages that only went on with the held-back row: a row spanning pages is bounded like any other. */
  private openValues = 0;
  private done = false;

  constructor(private readonly library: Library, readonly name: string, readonly path: string, private readonly decoder: ColumnDecoder, bytes: Uint8Array, private readonly repeated: boolean) {
    this.reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 };
  }

  /** Complete rows decoded and not yet taken. */
  get ready(): number { return this.done ? this.rows.length : Math.max(0, this.rows.length - 1); }

  /** Decode pages until `rows` complete rows are ready or the chunk ends. */
  fill(rows: number): void {
    while (this.ready < rows && !this.done) {
      if (this.reader.offset >= this.reader.view.byteLength - 1) { this.done = true; break; }
      this.page();
    }
  }

  /** The first `count` rows, handed over and dropped here. */
  take(count: number): unknown[] { return this.rows.splice(0, count); }

  private page(): void {
    const { library, reader } = this;
    const header = library.parquetHeader(reader);
    const size = header.compressed_page_size;
    if (!(size >= 0) || reader.offset + size > reader.view.byteLength) throw new ParquetLimit(`column ${this.path}: a page runs past the end of its column chunk`);
    if (!(header.uncompressed_page_size >= 0 && header.uncompressed_page_size <= PAGE_BYTES)) throw new ParquetLimit(`column ${this.path}: a page declares ${header.uncompressed_page_size} bytes uncompressed (at most ${PAGE_BYTES} are read)`);
    const decoder = this.decoder;
    if (header.type === 'DICTIONARY_PAGE') {
      const count = header.dictionary_page_header?.num_values ?? 0;
      if (!(count >= 0 && count <= ASSEMBLED_PAGE_VALUES)) throw new ParquetLimit(`column ${this.path}: a dictionary of ${count} values (at most ${ASSEMBLED_PAGE_VALUES})`);
      const { data } = library.readPage(reader, header, decoder, undefined, undefined, 0);
      this.dictionary = data && library.convert(data, decoder);
      return;
    }
    const declared = header.data_page_header?.num_values ?? header.data_page_header_v2?.num_values;
    // An index page, or one this reader does not know: nothing to decode.
    if (declared === undefined) { reader.offset += size; return; }
    if (!(declared >= 0 && declared <= ASSEMBLED_PAGE_VALUES)) throw new ParquetLimit(`column ${this.path}: a page declares ${declared} values (at most ${ASSEMBLED_PAGE_VALUES} are read in a column of strings, structs or nested lists)`);
    const before = this.rows.length;
    const { data } = library.readPage(reader, header, decoder, this.dictionary, this.rows, 0);
    // A flat column without levels comes back as the page's own values, not appended.
    if (data && data !== this.rows) for (let i = 0; i < data.length; i++) this.rows.push(data[i]);
    if (!this.repeated) return;
    if (this.rows.length === before) {
      this.openValues += declared;
      if (this.openValues > ROW_VALUES) throw new ParquetLimit(`column ${this.path} holds more than ${ROW_VALUES} values in one row`);
    } else this.openValues = declared;
  }
}

const describeRows = (first: number, count: number) => (count === 1 ? `row ${first}` : `rows ${first}–${first + count - 1}`);

/** How rows are handed out. */
export interface ParquetReadOptions {
  /**
   * A `tokens` list column of integers comes as a Uint32Array per row (a view into its batch's ids) instead of
   * an array, where every value is a token id (else as an array, as without this): for the batched mask path
   * (src/io/mask-lines.ts), which copies them into its own id buffer without an array per row.
   */
  typedIds?: boolean;
}

/**
 * Rows of a Parquet file as objects (a field per column; a null cell is a field the row does not have),
 * numbered from 1, in order; a row that cannot be read comes as `{ number, error }` and the rest go on.
 */
export async function* readParquetRows(path: string, options: ParquetReadOptions = {}): AsyncGenerator<ParquetRow> {
  const library = await load();
  const { file, metadata } = await openParquet(library, path);
  await loadExtraCodecs(metadata);
  const root = library.parquetSchema(metadata);
  const fast = new Map<string, FastColumn>();
  for (const child of root.children) {
    const column = fastColumn(library, child, root);
    if (column) fast.set(child.element.name, column);
  }
  const idBuffer = { ids: new Uint32Array(0) };
  let number = 0;
  let last = 0;
  for (const [index, group] of metadata.row_groups.entries()) {
    const where = `row group ${index + 1} of ${metadata.row_groups.length}`;
    const declared = Number(group.num_rows);
    // Rows the group's flat columns say they hold: what numbering goes on by if num_rows is wrong.
    const stored = storedRows(group.columns, root) ?? declared;
    try {
      if (!Number.isSafeInteger(declared) || declared < 0) throw new ParquetLimit(`num_rows is ${group.num_rows}`);
      if (stored !== declared) throw new ParquetLimit(`num_rows says ${declared} but its columns hold ${stored} rows`);
      for await (const row of readGroup(library, file, group, number, root, fast, options, idBuffer)) { last = row.number; yield row; }
    } catch (error) {
      if (!(error instanceof GroupError) && !(error instanceof ParquetLimit) && !(error instanceof Error)) throw error;
      const at = error instanceof GroupError ? error.rowsDone : 0;
      const count = Math.max(stored - at, 1);
      last = number + at + 1;
      // It ends whatever batch of typed ids was handed out (options.typedIds: the next group's reuses their buffer).
      yield { number: last, error: `${where} (${describeRows(last, count)}) cannot be read: ${error instanceof GroupError ? error.reason : (error as Error).message}`, ...(options.typedIds ? { batchEnd: true as const } : {}) };
    }
    // Numbering goes on after every row said or handed out, so that no two rows share a number.
    number = Math.max(number + (Number.isSafeInteger(stored) && stored > 0 ? stored : 0), last);
  }
}

/** The top-level columns of a Parquet file, each as its schema elements (the column first, then its subtree), in order. */
export async function parquetColumns(path: string): Promise<Array<{ name: string; schema: SchemaElement[] }>> {
  const { metadata } = await openParquet(await load(), path);
  const out: Array<{ name: string; schema: SchemaElement[] }> = [];
  const elements = metadata.schema;
  for (let index = 1; index < elements.length;) {
    let pending = 1;
    let end = index;
    while (pending > 0 && end < elements.length) { pending += (elements[end].num_children ?? 0) - 1; end++; }
    out.push({ name: elements[index].name, schema: elements.slice(index, end) });
    index = end;
  }
  return out;
}

/** A file's bytes as hyparquet reads them: its length, and a range at a time. */
interface FileBytes { byteLength: number; slice(start: number, end?: number): Promise<ArrayBuffer> }

/**
 * A file read a range at a time, each range in one read into one buffer (hyparquet's asyncBufferFromFile streams
 * 64 KB chunks and concatenates them: a 14 MB column chunk cost ~160 ms that way).
 */
async function fileBytes(path: string): Promise<FileBytes> {
  const { size } = await stat(path);
  return {
    byteLength: size,
    async slice(start, end = size) {
      const bytes = new Uint8Array(Math.max(0, end - start));
      const handle = await open(path, 'r');
      try {
        for (let at = 0; at < bytes.length;) {
          const { bytesRead } = await handle.read(bytes, at, bytes.length - at, start + at);
          if (bytesRead === 0) throw new Error(`${path} ended at ${start + at} bytes, before ${end}`);
          at += bytesRead;
        }
      } finally {
        await handle.close();
      }
      return bytes.buffer;
    },
  };
}

/** The file and its footer; a file that cannot be opened, or is not Parquet, is a ParquetFileError naming it. */
async function openParquet(library: Library, path: string) {
  let file;
  try {
    file = await fileBytes(path);
  } catch (error) {
    throw new ParquetFileError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return { file, metadata: await library.parquetMetadataAsync(file) };
  } catch (error) {
    throw new ParquetFileError(`${path}: not a Parquet file tagmask can read (${(error as Error).message})`);
  }
}

/** The Parquet file itself cannot be read (not Parquet, a broken footer): a set-up error for the whole run. */
export class ParquetFileError extends InputError {}

/** A row group failed after `rowsDone` of its rows were handed out. */
class GroupError extends Error {
  constructor(readonly rowsDone: number, readonly reason: string) { super(reason); }
}

/** The row count a group's flat (unrepeated) column chunks agree on, if any is flat. */
function storedRows(columns: ColumnChunk[], root: SchemaTree): number | undefined {
  for (const chunk of columns) {
    const path = chunk.meta_data?.path_in_schema;
    if (!path) continue;
    let node: SchemaTree | undefined = root;
    let repeated = false;
    for (const part of path) {
      node = node?.children.find((child) => child.element.name === part);
      if (node?.element.repetition_type === 'REPEATED') repeated = true;
    }
    if (node && !repeated) return Number(chunk.meta_data!.num_values);
  }
  return undefined;
}

async function* readGroup(library: Library, file: FileBytes, group: FileMetaData['row_groups'][number], number: number, root: SchemaTree, fast: Map<string, FastColumn>, options: ParquetReadOptions, idBuffer: { ids: Uint32Array }): AsyncGenerator<ParquetRow> {
  const names = root.children.map((child) => child.element.name);
  const rows = Number(group.num_rows);
  let done = 0;
  try {
    // Fast columns: their chunk's bytes, decoded page by page as rows are handed out.
    const cursors: ColumnCursor[] = [];
    for (const column of fast.values()) {
      const chunk = group.columns.find((item) => item.meta_data?.path_in_schema.join('.') === column.path.slice(1).map((node) => node.element.name).join('.'));
      const meta = chunk?.meta_data;
      if (!meta) throw new ParquetLimit(`column ${column.name} has no column chunk`);
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
      const length = Number(meta.total_compressed_size);
      if (!(length >= 0 && length <= CHUNK_BYTES) || !(start >= 0) || start + length > file.byteLength) throw new ParquetLimit(`column ${column.name}: its column chunk (${length} bytes at ${start}) is not inside the file`);
      cursors.push(new ColumnCursor(library, column, new Uint8Array(await file.slice(start, start + length)), meta.codec));
    }
    const typedIds = options.typedIds ? cursors.find(({ column }) => column.name === 'tokens' && column.repeated && (column.leaf.type === 'INT32' || column.leaf.type === 'INT64')) : undefined;
    // Other columns: a cursor per leaf column chunk, assembled into the top-level column a batch of rows at a time.
    const assembled: Array<{ name: string; tree: SchemaTree; cursors: AssembledCursor[] }> = [];
    for (const tree of root.children) {
      const name = tree.element.name;
      if (fast.has(name)) continue;
      const leaves: AssembledCursor[] = [];
      for (const chunk of group.columns) {
        const meta = chunk.meta_data;
        if (!meta || meta.path_in_schema[0] !== name) continue;
        const path = meta.path_in_schema.join('.');
        const size = Number(meta.total_uncompressed_size);
        if (!(size >= 0 && size <= CHUNK_BYTES)) throw new ParquetLimit(`column ${path} declares ${meta.total_uncompressed_size} bytes uncompressed`);
        // hyparquet's rule: a dictionary offset of 0 means none (Polars writes it so).
        const start = Number(meta.dictionary_page_offset || meta.data_page_offset);
        const length = Number(meta.total_compressed_size);
        if (!(length >= 0 && length <= CHUNK_BYTES) || !(start >= 0) || start + length > file.byteLength) throw new ParquetLimit(`column ${path}: its column chunk (${length} bytes at ${start}) is not inside the file`);
        const schemaPath = treePath(root, meta.path_in_schema);
        if (!schemaPath) throw new ParquetLimit(`column chunk ${path} is not in the schema`);
        const element = schemaPath[schemaPath.length - 1].element;
        const decoder = { pathInSchema: meta.path_in_schema, element, schemaPath, type: meta.type, codec: meta.codec, compressors: library.compressors, utf8: true, parsers: library.parsers };
        leaves.push(new AssembledCursor(library, name, path, decoder, new Uint8Array(await file.slice(start, start + length)), library.getMaxRepetitionLevel(schemaPath) > 0));
      }
      if (!leaves.length) throw new ParquetLimit(`column ${name} has no column chunk`);
      assembled.push({ name, tree, cursors: leaves });
    }
    const others = new Map<string, ArrayLike<unknown>>();
    while (done < rows) {
      const want = Math.min(BATCH_ROWS, rows - done);
      for (const cursor of cursors) cursor.fill(want);
      for (const { cursors: leaves } of assembled) for (const leaf of leaves) leaf.fill(want);
      const all: Array<{ name: string; ready: number }> = [...cursors.map((cursor) => ({ name: cursor.column.name, ready: cursor.ready })), ...assembled.flatMap(({ cursors: leaves }) => leaves.map((leaf) => ({ name: leaf.path, ready: leaf.ready })))];
      const ready = all.length ? Math.min(...all.map((item) => item.ready)) : want;
      if (ready === 0) {
        const short = all.find((item) => item.ready === 0)!;
        throw new ParquetLimit(`num_rows says ${rows} but column ${short.name} ends after ${done} rows`);
      }
      const take = Math.min(ready, want);
      if (typedIds) typedIds.typedIds(take, idBuffer);
      for (const { name, tree, cursors: leaves } of assembled) {
        if (!tree.children.length) { others.set(name, leaves[0].take(take)); continue; }
        const parts = new Map<string, DecodedArray>(leaves.map((leaf) => [leaf.path, leaf.take(take)]));
        library.assembleNested(parts, tree, library.parsers);
        const values = parts.get(name);
        if (!values || values.length !== take) throw new ParquetLimit(`column ${name}: its parts hold different numbers of rows`);
        others.set(name, values);
      }
      for (let row = 0; row < take; row++) {
        const rowNumber = number + done + row + 1;
        try {
          const value: Record<string, unknown> = {};
          let c = 0;
          for (const name of names) {
            let cell: unknown;
            if (fast.has(name)) cell = cursors[c++].cell(row);
            else cell = others.get(name)![row];
            if (cell === null || cell === undefined) continue;
            value[name] = fast.has(name) ? cell : plainValue(cell);
          }
          yield typedIds && row === take - 1 ? { number: rowNumber, value, batchEnd: true } : { number: rowNumber, value };
        } catch (error) {
          if (!(error instanceof ParquetLimit)) throw error;
          yield typedIds && row === take - 1 ? { number: rowNumber, error: error.message, batchEnd: true } : { number: rowNumber, error: error.message };
        }
      }
      for (const cursor of cursors) cursor.drop(take);
      done += take;
    }
    for (const cursor of cursors) {
      cursor.fill(1);
      if (cursor.ready) throw new ParquetLimit(`num_rows says ${rows} but column ${cursor.column.name} holds more rows`);
    }
    for (const { cursors: leaves } of assembled) {
      for (const leaf of leaves) {
        leaf.fill(1);
        if (leaf.ready) throw new ParquetLimit(`num_rows says ${rows} but column ${leaf.path} holds more rows`);
      }
    }
  } catch (error) {
    if (error instanceof ParquetLimit) throw new GroupError(done, error.message);
    throw new GroupError(done, `${(error as Error).message}`);
  }
}

/** The schema nodes from the root to a column chunk's leaf, or undefined where the schema has no such path. */
function treePath(root: SchemaTree, names: string[]): SchemaTree[] | undefined {
  const path = [root];
  let node = root;
  for (const name of names) {
    const child = node.children.find((item) => item.element.name === name);
    if (!child) return undefined;
    path.push(child);
    node = child;
  }
  return path;
}

const EMPTY = new Uint8Array(0);

/** The largest page whose decompressed bytes are kept for the next page (real writers' pages are ~1 MB). */
const SCRATCH_KEPT_BYTES = 1 << 24;

/** Growable arrays reused from page to page; each view is valid until the same kind is asked for again. */
class Scratch {
  private level = [new Uint8Array(1024), new Uint8Array(1024)];
  private index = new Uint32Array(1024);
  private number = new Float64Array(1024);
  private bytes = new Uint8Array(1024);

  levels(which: 0 | 1, count: number): Uint8Array {
    if (this.level[which].length < count) this.level[which] = new Uint8Array(count * 1.25);
    return this.level[which].subarray(0, count);
  }

  indices(count: number): Uint32Array {
    if (this.index.length < count) this.index = new Uint32Array(count * 1.25);
    return this.index.subarray(0, count);
  }

  /** A decompressed page's bytes; one past SCRATCH_KEPT_BYTES gets memory of its own, which is not kept. */
  page(size: number): Uint8Array {
    if (size > SCRATCH_KEPT_BYTES) return new Uint8Array(size);
    if (this.bytes.length < size) this.bytes = new Uint8Array(Math.min(size * 1.25, SCRATCH_KEPT_BYTES));
    return this.bytes.subarray(0, size);
  }

  numbers(count: number): Float64Array {
    if (this.number.length < count) this.number = new Float64Array(count * 1.25);
    return this.number.subarray(0, count);
  }
}
const bitWidth = (value: number) => 32 - Math.clz32(value);

/**
 * Parquet's RLE / bit-packed hybrid (levels, dictionary indices, RLE booleans) into `out`, from
 * bytes[start, end): runs of one value, or groups of 8 values of `width` bits packed LSB first.
 */
function readHybrid(bytes: Uint8Array, start: number, end: number, width: number, count: number, out: Uint8Array | Uint32Array): void {
  let at = start;
  let i = 0;
  const mask = width >= 32 ? 0xffffffff : (1 << width) - 1;
  const valueBytes = (width + 7) >> 3;
  while (i < count && at < end) {
    let header = 0;
    let shift = 0;
    for (;;) {
      const byte = bytes[at++];
      header += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80 || at >= end) break;
      shift += 7;
    }
    if (header % 2 === 1) {
      let left = Math.floor(header / 2) * 8;
      let buffer = 0;
      let bits = 0;
      if (width <= 24) {
        while (left-- > 0) {
          while (bits < width) { buffer |= (bytes[at++] ?? 0) << bits; bits += 8; }
          if (i < count) out[i++] = buffer & mask;
          buffer >>>= width;
          bits -= width;
        }
      } else {
        let wide = 0;
        while (left-- > 0) {
          while (bits < width) { wide += (bytes[at++] ?? 0) * 2 ** bits; bits += 8; }
          if (i < count) out[i++] = wide % 2 ** width;
          wide = Math.floor(wide / 2 ** width);
          bits -= width;
        }
      }
    } else {
      const run = Math.floor(header / 2);
      let value = 0;
      for (let b = 0; b < valueBytes; b++) value += (bytes[at++] ?? 0) * 2 ** (8 * b);
      const stop = Math.min(count, i + run);
      out.fill(value, i, stop);
      i = stop;
    }
  }
  if (i < count) throw new ParquetLimit(`a page's levels or indices end after ${i} of ${count} values`);
}

/** The uncompressed length a snappy stream starts with (a little-endian base-128 varint of up to 32 bits). */
function snappyLength(bytes: Uint8Array): number | undefined {
  let length = 0;
  for (let i = 0; i < 5 && i < bytes.length; i++) {
    length += (bytes[i] & 0x7f) * 2 ** (7 * i);
    if (bytes[i] < 0x80) return length;
  }
  return undefined;
}

/** The content size a Zstandard frame header declares (RFC 8878 §3.1.1.1), when it declares one. */
function zstdContentSize(bytes: Uint8Array): number | undefined {
  if (bytes.length < 6 || bytes[0] !== 0x28 || bytes[1] !== 0xb5 || bytes[2] !== 0x2f || bytes[3] !== 0xfd) return undefined;
  const flags = bytes[4];
  const singleSegment = (flags >> 5) & 1;
  const sizeFlag = flags >> 6;
  const dictionaryBytes = [0, 1, 2, 4][flags & 3];
  const sizeBytes = sizeFlag ? 1 << sizeFlag : singleSegment;
  if (!sizeBytes) return undefined;
  const at = 5 + (singleSegment ? 0 : 1) + dictionaryBytes;
  let size = 0;
  for (let i = 0; i < sizeBytes; i++) size += (bytes[at + i] ?? 0) * 2 ** (8 * i);
  return sizeBytes === 2 ? size + 256 : size;
}
