/**
 * The one place that decides what format a file is in, from its name: every command reads and writes through
 * this, so `mask`, `check`, `show`, `merge` and `detect` can never disagree about a file (before, `merge -o
 * x.parquet` wrote JSONL into it, `merge x.jsonl.gz` read gzip bytes as lines, and `.JSONL.GZ` was not gzip
 * while `.PARQUET` was Parquet).
 *
 * Names are matched without regard to case: `.parquet` is Parquet, `.gz` is gzip-compressed JSONL, anything
 * else (and `-`, stdin or stdout) is JSONL.
 */
export type FileFormat = 'jsonl' | 'jsonl.gz' | 'parquet';

export function fileFormat(path: string | undefined): FileFormat {
  if (path === undefined || path === '-') return 'jsonl';
  if (/\.parquet$/i.test(path)) return 'parquet';
  if (/\.gz$/i.test(path)) return 'jsonl.gz';
  return 'jsonl';
}
