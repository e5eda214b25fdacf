/**
 * Parquet in and out, streamed with bounded memory: reading in src/io/parquet-read.ts (numeric columns decoded
 * page by page into typed arrays, the rest by hyparquet a row group at a time), writing in
 * src/io/parquet-write.ts (hyparquet-writer's column encoder, columns declared before the first row). Pure JS,
 * no native code; token ids and masks are list columns (`list<int>`), as pyarrow writes Python lists of ints,
 * so a Hugging Face dataset of rollouts reads as it is.
 */
export { readParquetRows, parquetColumns, ParquetFileError, type ParquetRow } from './parquet-read.ts';
export { FlagBytes, JsonBytes, ParquetRowWriter, ParquetValueError, type ColumnKind, type DeclaredColumn } from './parquet-write.ts';
