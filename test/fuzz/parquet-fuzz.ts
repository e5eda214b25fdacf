/**
 * Parquet fuzzing: files from real writers (hyparquet-writer here; pyarrow and Polars where Python has them,
 * every codec and both page versions; the hand-built hostile files of parquet-craft.ts), read as they are and
 * mutated (bytes overwritten, the file cut short, a run of bytes zeroed), through tagmask's Parquet reader.
 *
 * Properties: the reader never crashes; what it throws is a ParquetFileError (the file as a whole cannot be
 * read: a usage error naming it); every row it yields has a number greater than the last and either a value or
 * a non-empty located error; an unmutated file reads back exactly what its writer was given.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { ParquetFileError, readParquetRows } from '../../src/io/parquet.ts';
import { craftParquet } from './parquet-craft.ts';

export interface ParquetSeed { name: string; bytes: Uint8Array; rows?: Array<Record<string, unknown>> }

const random = (seed: number) => () => { seed = (seed + 0x6d2b79f5) | 0; let t = Math.imul(seed ^ (seed >>> 15), 1 | seed); t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };

/** Rollout-like rows written by hyparquet-writer (its own schema inference), with nulls, empty lists and strings. */
function writerSeed(seed: number): ParquetSeed {
  const next = random(seed);
  const count = 1 + Math.floor(next() * 40);
  const rows = Array.from({ length: count }, (_, i) => ({
    id: next() < 0.1 ? null : `r${seed}-${i}`,
    tokens: next() < 0.1 ? [] : Array.from({ length: Math.floor(next() * 50) + 1 }, () => Math.floor(next() * 200_000)),
    prompt_length: next() < 0.5 ? null : Math.floor(next() * 20),
  }));
  const bytes = parquetWriteBuffer({
    columnData: [
      { name: 'id', data: rows.map((row) => row.id), type: 'STRING' },
      { name: 'tokens', data: rows.map((row) => row.tokens) },
      { name: 'prompt_length', data: rows.map((row) => row.prompt_length), type: 'INT32' },
    ] as never,
    rowGroupSize: 1 + Math.floor(next() * 16),
  });
  return { name: `hyparquet-writer ${seed}`, bytes: new Uint8Array(bytes), rows: rows.map((row) => Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null))) };
}

/** Files pyarrow and Polars write (every codec, both page versions, dictionaries on and off), if Python has them. */
function peerSeeds(): ParquetSeed[] {
  const dir = mkdtempSync(join(tmpdir(), 'tagmask-parquet-seeds-'));
  const made = spawnSync('python3', ['-c', `
import sys, random, pyarrow as pa, pyarrow.parquet as pq, polars as pl
random.seed(7)
rows = [{'id': f'r{i}' if i % 5 else None, 'tokens': [random.randrange(200000) for _ in range(random.randrange(0, 60))] if i % 7 else None,
         'mask': [bool(random.randrange(2)) for _ in range(5)], 'big': 2**63 - 1 - i, 'opts': {'max_obs_tokens': i} if i % 3 else None,
         'nested': [[i], [i, i]]} for i in range(120)]
t = pa.Table.from_pylist(rows)
for codec in ['snappy', 'zstd', 'gzip', 'brotli', 'lz4', 'none']:
    pq.write_table(t, f'{sys.argv[1]}/pa-{codec}.parquet', compression=codec, row_group_size=37, data_page_size=300)
pq.write_table(t, f'{sys.argv[1]}/pa-v2.parquet', data_page_version='2.0', use_dictionary=False, row_group_size=50)
pl.from_arrow(t).write_parquet(f'{sys.argv[1]}/polars.parquet', row_group_size=40)
`, dir], { encoding: 'utf8' });
  if (made.status !== 0) return [];
  return readdirSync(dir).sort().map((name) => ({ name, bytes: new Uint8Array(readFileSync(join(dir, name))) }));
}

/** Every seed: writer files, peer files where Python has them, and the hand-built hostile ones. */
export function parquetSeeds(): ParquetSeed[] {
  return [
    ...Array.from({ length: 6 }, (_, i) => writerSeed(i + 1)),
    ...peerSeeds(),
    { name: 'crafted bomb', bytes: craftParquet([{ rows: [{ ids: [1, 2] }] }, { rows: [{ repeat: 60_000_000, id: 5 }] }, { rows: [{ ids: [] }] }]) },
    { name: 'crafted num_rows lies', bytes: craftParquet([{ rows: [{ ids: [1] }, { ids: [2] }], declaredRows: 1 }, { rows: [{ ids: [3] }], declaredRows: -5 }]) },
  ];
}

/** A mutation: bytes overwritten at positions given as fractions of the length, and maybe a cut or a zeroed run. */
export const parquetMutation = fc.record({
  seed: fc.nat(),
  writes: fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
  cut: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { freq: 6 }),
  zero: fc.option(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 64 })), { freq: 6 }),
});

export function mutate(bytes: Uint8Array, mutation: { writes: Array<[number, number]>; cut: number | null; zero: [number, number] | null }): Uint8Array {
  const out = new Uint8Array(bytes);
  for (const [at, byte] of mutation.writes) out[Math.min(out.length - 1, Math.floor(at * out.length))] = byte;
  if (mutation.zero) { const start = Math.floor(mutation.zero[0] * out.length); out.fill(0, start, start + mutation.zero[1]); }
  return mutation.cut === null ? out : out.subarray(0, Math.floor(mutation.cut * out.length));
}

const dir = mkdtempSync(join(tmpdir(), 'tagmask-parquet-fuzz-'));
let files = 0;

/** Read a file's bytes through tagmask's Parquet reader and check the properties; `expected`: rows an unmutated writer file must give. */
export async function checkParquetBytes(bytes: Uint8Array, expected?: Array<Record<string, unknown>>): Promise<void> {
  const path = join(dir, `${++files % 64}.parquet`);
  writeFileSync(path, bytes);
  const rows: Array<Record<string, unknown>> = [];
  let last = 0;
  try {
    for await (const row of readParquetRows(path)) {
      if (!(row.number > last)) throw new Error(`row numbers go back: ${row.number} after ${last}`);
      last = row.number;
      if ((row.value === undefined) === (row.error === undefined)) throw new Error(`row ${row.number} has ${row.value ? 'both a value and an error' : 'neither a value nor an error'}`);
      if (row.error !== undefined && !row.error.trim()) throw new Error(`row ${row.number}: an empty error`);
      if (row.value) rows.push(row.value);
      if (rows.length > 1_000_000) throw new Error('more than a million rows from a small file');
    }
  } catch (error) {
    if (error instanceof ParquetFileError) return;
    throw error;
  }
  if (expected) {
    const text = JSON.stringify(rows);
    if (text !== JSON.stringify(expected)) throw new Error(`read back ${text.slice(0, 200)} where the writer was given ${JSON.stringify(expected).slice(0, 200)}`);
  }
  // Read again with typed ids (the batched mask path's reading): the same rows, errors and values, where a row's
  // tokens come as a Uint32Array only if every value is a token id.
  const again: string[] = [];
  for await (const row of readParquetRows(path, { typedIds: true })) {
    const tokens = row.value?.tokens;
    if (tokens instanceof Uint32Array) row.value!.tokens = Array.from(tokens);
    // batchEnd only says where the typed ids' buffer is reused.
    delete row.batchEnd;
    again.push(JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)));
  }
  const once: string[] = [];
  for await (const row of readParquetRows(path)) once.push(JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)));
  if (again.join('\n') !== once.join('\n')) throw new Error(`typed ids read differently: ${again.find((row, i) => row !== once[i])?.slice(0, 200)}`);
}
