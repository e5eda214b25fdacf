/**
 * Which Parquet library: tagmask's own reader and writer (hyparquet + hyparquet-writer, what ships) against
 * @dsnp/parquetjs, the most used pure-JS alternative, on the same rows: file size, write and read time,
 * peak RSS (each step in a child process of its own), whether what was written reads back exactly, and
 * whether each reads the files DuckDB's C++ writer made (test/fixtures/parquet, pyarrow's list layout).
 *
 *   npm run bench:parquet                    # 100,000 rollouts (~47 M token ids)
 *   npm run bench:parquet -- --rows 1000000  # the 10^6
 *
 * @dsnp/parquetjs is not a dependency of tagmask: it is installed from the registry into the work folder
 * (`--work-dir`, default /tmp/tagmask-bench) on first use. Its 1.9.3 on the registry has no dist/ (cannot
 * be imported), so 1.8.9 is the version compared.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readParquetRows, ParquetRowWriter } from '../src/io/parquet.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PARQUETJS = '@dsnp/parquetjs@1.8.9';
const option = (name: string, fallback: string) => { const at = process.argv.indexOf(`--${name}`); return at >= 0 ? process.argv[at + 1] : fallback; };
const workDir = option('work-dir', '/tmp/tagmask-bench');
const libraryDir = join(workDir, 'parquet-libraries');

interface Sample { id: string; tokens: number[]; mask: number[] }
const samples: Sample[] = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));

/** Row i of the table every library writes: the samples tiled, ids made unique. */
const rowOf = (i: number) => { const sample = samples[i % samples.length]; return { id: `${sample.id}#${i}`, tokens: sample.tokens, mask: sample.mask }; };

/** What a reader must give back, summed so that any lost, reordered or altered value shows. */
function checksum(rows: Iterable<{ id: string; tokens: ArrayLike<number>; mask: ArrayLike<number> }>) {
  let count = 0;
  let sum = 0;
  for (const row of rows) {
    count++;
    let weight = 1;
    for (let k = 0; k < row.tokens.length; k++) sum = (sum + Number(row.tokens[k]) * weight++) % 1_000_000_007;
    for (let k = 0; k < row.mask.length; k++) sum = (sum + Number(row.mask[k]) * weight++) % 1_000_000_007;
    sum = (sum + row.id.length) % 1_000_000_007;
  }
  return `${count}/${sum}`;
}

function parquetjs() {
  const require = createRequire(join(libraryDir, 'package.json'));
  return require('@dsnp/parquetjs') as { ParquetSchema: new (schema: unknown) => unknown; ParquetWriter: { openFile(schema: unknown, path: string, options?: unknown): Promise<{ appendRow(row: unknown): Promise<void>; close(): Promise<void> }> }; ParquetReader: { openFile(path: string): Promise<{ getCursor(): { next(): Promise<unknown> }; close(): Promise<void> }> } };
}

/** A list cell as either library gives it back: plain arrays, pyarrow's three-level `{list: [{element}]}`, BigInts. */
const listOf = (cell: unknown): number[] => {
  if (cell === null || cell === undefined) return [];
  const items = Array.isArray(cell) ? cell : ((cell as { list?: Array<{ element: unknown }> }).list ?? []).map((item) => item.element);
  return items.map(Number);
};

async function* readWith(library: string, path: string): AsyncGenerator<{ id: string; tokens: number[]; mask: number[] }> {
  if (library === 'hyparquet') {
    for await (const { value } of readParquetRows(path)) yield { id: String(value!.id), tokens: listOf(value!.tokens), mask: listOf(value!.mask) };
    return;
  }
  const reader = await parquetjs().ParquetReader.openFile(path);
  const cursor = reader.getCursor();
  for (let row = await cursor.next() as Record<string, unknown> | null; row; row = await cursor.next() as Record<string, unknown> | null) {
    yield { id: String(row.id), tokens: listOf(row.tokens), mask: listOf(row.mask) };
  }
  await reader.close();
}

async function child(step: string, library: string, path: string, rows: number): Promise<void> {
  const started = performance.now();
  let result = '';
  if (step === 'write' && library === 'hyparquet') {
    const writer = await ParquetRowWriter.open(path);
    for (let i = 0; i < rows; i++) writer.write(rowOf(i));
    writer.close();
    await new Promise((resolve) => setTimeout(resolve, 0));
  } else if (step === 'write') {
    const { ParquetSchema, ParquetWriter } = parquetjs();
    const schema = new ParquetSchema({ id: { type: 'UTF8' }, tokens: { type: 'INT32', repeated: true, compression: 'SNAPPY' }, mask: { type: 'INT32', repeated: true, compression: 'SNAPPY' } });
    const writer = await ParquetWriter.openFile(schema, path, { rowGroupSize: 10_000, useDataPageV2: false });
    for (let i = 0; i < rows; i++) await writer.appendRow(rowOf(i));
    await writer.close();
  } else {
    const read: Array<{ id: string; tokens: number[]; mask: number[] }> = [];
    let count = 0;
    let sum = '';
    // Sum as rows stream by (never hold them all): a running checksum over batches.
    const batch: typeof read = [];
    const sums: string[] = [];
    for await (const row of readWith(library, path)) {
      batch.push(row);
      count++;
      if (batch.length === 10_000) { sums.push(checksum(batch)); batch.length = 0; }
    }
    sums.push(checksum(batch));
    sum = sums.join(',');
    result = `${count} rows, checksum ${hash(sum)}`;
  }
  console.log(JSON.stringify({ ms: Math.round(performance.now() - started), result }));
}

const hash = (text: string) => { let h = 0; for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0; return (h >>> 0).toString(16); };

/** The checksum a reader must give for `rows` rows, computed from the rows themselves. */
function expectedSum(rows: number): string {
  const sums: string[] = [];
  for (let start = 0; start < rows; start += 10_000) sums.push(checksum(Array.from({ length: Math.min(10_000, rows - start) }, (_, k) => rowOf(start + k))));
  if (rows % 10_000 === 0) sums.push(checksum([]));
  return `${rows} rows, checksum ${hash(sums.join(','))}`;
}

function run(step: string, library: string, path: string, rows: number) {
  const proc = spawnSync('/usr/bin/time', ['-f', 'RSS=%M', process.execPath, '--import', 'tsx', '--conditions=development', fileURLToPath(import.meta.url), '--child', step, library, path, String(rows), '--work-dir', workDir], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (proc.status !== 0) return { ms: NaN, result: `failed: ${proc.stderr.split('\n').filter(Boolean).slice(-3).join(' | ').slice(0, 200)}`, rssMb: NaN };
  const line = JSON.parse(proc.stdout.trim().split('\n').at(-1)!);
  return { ...line, rssMb: Number(/RSS=(\d+)/.exec(proc.stderr)?.[1]) / 1024 };
}

async function main() {
  if (process.argv.includes('--child')) {
    const at = process.argv.indexOf('--child');
    await child(process.argv[at + 1], process.argv[at + 2], process.argv[at + 3], Number(process.argv[at + 4]));
    return;
  }
  const rows = Number(option('rows', '100000'));
  mkdirSync(libraryDir, { recursive: true });
  if (!existsSync(join(libraryDir, 'node_modules/@dsnp/parquetjs/dist'))) {
    console.log(`installing ${PARQUETJS} into ${libraryDir} (not a dependency of tagmask)`);
    const install = spawnSync('npm', ['install', '--prefix', libraryDir, '--no-audit', '--no-fund', '--no-save', PARQUETJS], { encoding: 'utf8' });
    if (install.status !== 0) throw new Error(`npm install ${PARQUETJS} failed: ${install.stderr}`);
  }
  const tokens = Array.from({ length: rows }, (_, i) => samples[i % samples.length].tokens.length).reduce((a, b) => a + b, 0);
  console.log(`${rows} rollouts, ${(tokens / 1e6).toFixed(1)} M token ids and as many mask values; each step a child process of its own`);
  const want = expectedSum(rows);
  const fixtures = ['search-r1-qwen3.flat.parquet', 'search-r1-qwen3.verl.parquet'].map((name) => join(ROOT, 'test/fixtures/parquet', name));
  const table: string[][] = [['library', 'file MB', 'write s', 'write RSS MB', 'read s', 'read RSS MB', 'reads back exactly', 'reads the DuckDB files']];
  for (const library of ['hyparquet', 'parquetjs']) {
    const path = join(workDir, `libraries-${library}.parquet`);
    rmSync(path, { force: true });
    const write = run('write', library, path, rows);
    const size = existsSync(path) ? statSync(path).size / 1e6 : NaN;
    const read = run('read', library, path, rows);
    // The flat fixture holds the sample rows themselves: tokens must come back as written in rollouts.jsonl.
    const fixtureChecks = fixtures.map((fixture) => { const r = run('read', library, fixture, 0); return r.result.startsWith('failed') ? r.result : 'ok'; });
    const flat = [];
    for await (const row of readWith(library, fixtures[0])) flat.push(row);
    const flatOk = flat.length === samples.length && flat.every((row) => { const sample = samples.find((s) => s.id === row.id); return sample && JSON.stringify(sample.tokens) === JSON.stringify(row.tokens); });
    table.push([library, size.toFixed(1), (write.ms / 1e3).toFixed(1), write.rssMb.toFixed(0), (read.ms / 1e3).toFixed(1), read.rssMb.toFixed(0),
      read.result === want ? 'yes' : `no (${read.result})`, flatOk && fixtureChecks.every((check) => check === 'ok') ? 'yes' : `no (${fixtureChecks.join('; ')}; flat rows ${flatOk ? 'ok' : 'differ'})`]);
    rmSync(path, { force: true });
  }
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '));
}

await main();
