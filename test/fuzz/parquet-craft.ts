/**
 * Parquet files built by hand, page by page, for the hostile cases no well-behaved writer makes: a row of
 * 60 M ids in a few hundred bytes (run-length levels over a one-entry dictionary), a row group whose
 * `num_rows` disagrees with what its pages hold. Page headers and the footer are serialized with
 * hyparquet-writer's Thrift writer (the Parquet format's own structures: parquet.thrift's PageHeader and
 * FileMetaData); the pages' bytes follow the spec's encodings (RLE / bit-packed hybrid levels, PLAIN values,
 * RLE_DICTIONARY indices), written out here.
 */
import { ByteWriter } from 'hyparquet-writer';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import type { SchemaElement } from 'hyparquet';

/** A run of `count` copies of `value` in the RLE / bit-packed hybrid (`width` bits a value). */
function rleRun(bytes: number[], count: number, value: number, width: number): void {
  let header = count * 2;
  while (header >= 0x80) { bytes.push((header & 0x7f) | 0x80); header = Math.floor(header / 0x80); }
  bytes.push(header);
  for (let b = 0; b < Math.ceil(width / 8); b++) bytes.push((value >> (8 * b)) & 0xff);
}

/** One row of a `list<int32>` column (`tokens`): its ids, or `repeat` copies of one id (run-length, dictionary-encoded). */
export type CraftRow = { ids: number[] } | { repeat: number; id: number };

/** One row group: its rows, and the `num_rows` its footer says (the true count unless told otherwise). */
export interface CraftGroup { rows: CraftRow[]; declaredRows?: number | bigint }

const SCHEMA: SchemaElement[] = [
  { name: 'root', num_children: 1 },
  { name: 'tokens', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'REQUIRED', type: 'INT32' },
];

/** A Parquet file (uncompressed, data page v1) with one `tokens: list<int32>` column and the given row groups. */
export function craftParquet(groups: CraftGroup[]): Uint8Array {
  const writer = new ByteWriter();
  writer.appendUint32(0x31524150);
  const rowGroups = [];
  let total = 0n;
  for (const group of groups) {
    const start = writer.offset;
    let dictionaryOffset: bigint | undefined;
    let values = 0;
    for (const row of group.rows) {
      if ('repeat' in row) {
        // A one-entry dictionary, then a page whose levels and indices are each one run.
        dictionaryOffset ??= BigInt(writer.offset);
        const dictionary = new ByteWriter();
        dictionary.appendInt32(row.id);
        writePageHeader(writer, { type: 'DICTIONARY_PAGE', uncompressed_page_size: dictionary.offset, compressed_page_size: dictionary.offset, dictionary_page_header: { num_values: 1, encoding: 'PLAIN' } } as never);
        writer.appendBytes(dictionary.getBytes());
        const page: number[] = [];
        const repetition: number[] = []; rleRun(repetition, 1, 0, 1); if (row.repeat > 1) rleRun(repetition, row.repeat - 1, 1, 1);
        const definition: number[] = []; rleRun(definition, row.repeat, 2, 2);
        for (const levels of [repetition, definition]) { page.push(levels.length & 0xff, (levels.length >> 8) & 0xff, 0, 0, ...levels); }
        page.push(1); // index bit width
        rleRun(page, row.repeat, 0, 1);
        writePageHeader(writer, { type: 'DATA_PAGE', uncompressed_page_size: page.length, compressed_page_size: page.length, data_page_header: { num_values: row.repeat, encoding: 'RLE_DICTIONARY', definition_level_encoding: 'RLE', repetition_level_encoding: 'RLE' } } as never);
        writer.appendBytes(new Uint8Array(page));
        values += row.repeat;
      } else {
        const n = Math.max(row.ids.length, 1);
        const repetition: number[] = []; rleRun(repetition, 1, 0, 1); if (n > 1) rleRun(repetition, n - 1, 1, 1);
        const definition: number[] = []; rleRun(definition, n, row.ids.length ? 2 : 1, 2);
        const page: number[] = [];
        for (const levels of [repetition, definition]) { page.push(levels.length & 0xff, (levels.length >> 8) & 0xff, 0, 0, ...levels); }
        for (const id of row.ids) page.push(id & 0xff, (id >> 8) & 0xff, (id >> 16) & 0xff, (id >>> 24) & 0xff);
        writePageHeader(writer, { type: 'DATA_PAGE', uncompressed_page_size: page.length, compressed_page_size: page.length, data_page_header: { num_values: n, encoding: 'PLAIN', definition_level_encoding: 'RLE', repetition_level_encoding: 'RLE' } } as never);
        writer.appendBytes(new Uint8Array(page));
        values += n;
      }
    }
    const size = BigInt(writer.offset - start);
    const declared = BigInt(group.declaredRows ?? group.rows.length);
    total += declared;
    rowGroups.push({
      columns: [{ file_offset: BigInt(start), meta_data: { type: 'INT32', encodings: ['PLAIN', 'RLE', 'RLE_DICTIONARY'], path_in_schema: ['tokens', 'list', 'element'], codec: 'UNCOMPRESSED', num_values: BigInt(values), total_uncompressed_size: size, total_compressed_size: size, data_page_offset: BigInt(start), dictionary_page_offset: dictionaryOffset } }],
      total_byte_size: size,
      num_rows: declared,
    });
  }
  writeMetadata(writer as never, { version: 2, created_by: 'tagmask test/fuzz/parquet-craft.ts', schema: SCHEMA, num_rows: total, row_groups: rowGroups } as never);
  writer.appendUint32(0x31524150);
  return new Uint8Array(writer.getBytes());
}
