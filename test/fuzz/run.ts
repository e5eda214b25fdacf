/**
 * `npm run fuzz [-- --runs N] [-- --seed S]`: the properties of test/fuzz/harness.ts at length (10^6 mutated
 * sample rollouts by default, with maskBatch, random-grammar, mutated-Parquet and framework-shape runs in proportion). Prints the seed, the
 * counts, and any counterexample shrunk by fast-check, with the seed and path that replay it; exits 1 then.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { caseText, checkShapedFile, checkShapedText, goodModes, lineIn, shapeCase, shapeSubject, SHAPE_KINDS, type Mode } from './shapes-fuzz.ts';
import { jsonText } from '../../src/io/json.ts';
import { caseOf, checkBatch, checkParquetBytes, checkRandomGrammar, checkRollout, mutateParquet, parquetMutation, parquetSeeds, randomGrammar, randomStream, realise, sampleSubjects } from './harness.ts';

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name}: expected a non-negative integer`);
  return value;
}

const runs = argument('runs', 1_000_000);
const seed = argument('seed', Date.now() % 2 ** 31);
console.log(`tagmask fuzz: seed ${seed}, ${runs} sample rollouts, ${Math.ceil(runs / 10)} batches, ${Math.ceil(runs / 100)} random grammars`);
const subjects = await sampleSubjects();
console.log(`${subjects.length} sample suites: ${subjects.map((subject) => subject.name).join(', ')}`);

let failed = false;
function run<T>(label: string, property: fc.IProperty<T>, numRuns: number): void {
  const started = Date.now();
  const result = fc.check(property, { numRuns, seed });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (result.failed) {
    failed = true;
    const error = result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance);
    console.log(`✖ ${label}: ${result.numRuns} runs, ${seconds} s\n${fc.defaultReportMessage(result)}\nError: ${error}`);
  } else {
    console.log(`✔ ${label}: ${result.numRuns} runs, ${seconds} s`);
  }
}

run('mutated sample rollouts (tiling, mask = span roles, 0/1, determinism)', fc.property(caseOf, (item) => {
  const { masker, twin, tokens, promptLength } = realise(subjects, item);
  checkRollout(masker, twin, tokens, promptLength);
}), runs);

run('maskBatch = mask()', fc.property(fc.nat(), fc.nat(), fc.array(caseOf, { minLength: 1, maxLength: 5 }), (subjectIndex, optionIndex, items) => {
  const rollouts = items.map((item) => realise(subjects, { ...item, subject: subjectIndex, options: optionIndex }));
  checkBatch(rollouts[0].masker, rollouts.map(({ tokens, promptLength }) => ({ tokens, promptLength })));
}), Math.ceil(runs / 10));

run('random grammars', fc.property(randomGrammar, fc.array(randomStream, { minLength: 1, maxLength: 12 }), fc.nat(), (value, streams, optionIndex) => {
  checkRandomGrammar(value, streams, optionIndex);
}), Math.ceil(runs / 100));

// Parquet files from real writers, mutated, through the Parquet reader: no crash, located errors (one run in 100).
const seeds = parquetSeeds();
console.log(`${seeds.length} Parquet seeds: ${seeds.map((seed) => seed.name).join(', ')}`);
{
  const started = Date.now();
  for (const seed of seeds) await checkParquetBytes(seed.bytes, seed.rows);
  const result = await fc.check(fc.asyncProperty(fc.nat(), parquetMutation, async (index, mutation) => {
    await checkParquetBytes(mutateParquet(seeds[index % seeds.length].bytes, mutation));
  }), { numRuns: Math.ceil(runs / 100), seed });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (result.failed) {
    failed = true;
    console.log(`✖ mutated Parquet files: ${result.numRuns} runs, ${seconds} s\n${fc.defaultReportMessage(result)}`);
  } else console.log(`✔ mutated Parquet files (no crash, located errors; unmutated files read back as written): ${result.numRuns} runs, ${seconds} s`);
}

// Framework shapes and chat messages, mutated (one run in 20 through the library; files of 200 lines through
// the CLI's mask, check and --out-format, one per 50,000 runs).
const shapes = await shapeSubject();
run('mutated framework-shape and messages lines (worded errors, no JavaScript fault; masks tile)', fc.property(shapeCase, fc.constantFrom<Mode>('mask', 'check', 'out'), (item, mode) => {
  checkShapedText(shapes, caseText(shapes, item), mode);
}), Math.ceil(runs / 20));
{
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'tagmask-fuzz-shapes-'));
  const conversation = [{ role: 'user', content: 'capital of france?' }, { role: 'assistant', content: '<think>search</think>\n<answer> Paris </answer>' }];
  const good = SHAPE_KINDS.map((kind, i) => jsonText(lineIn(kind, shapes.bases[i % shapes.bases.length], shapes.bases[(i + 1) % shapes.bases.length], shapes, conversation)));
  const files = Math.max(1, Math.ceil(runs / 50_000));
  try {
    for (let k = 0; k < files; k++) {
      const texts = [...good, ...fc.sample(shapeCase, { numRuns: 200, seed: seed + k }).map((item) => caseText(shapes, item))];
      checkShapedFile(shapes, dir, texts, texts.map((_, i) => (i < good.length ? goodModes(SHAPE_KINDS[i]) : undefined)));
    }
    console.log(`✔ files of mutated shape lines through the CLI (mask, check, --out-format): ${files} files, ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    failed = true;
    console.log(`✖ files of mutated shape lines through the CLI (seed ${seed}): ${(error as Error).message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = failed ? 1 : 0;
