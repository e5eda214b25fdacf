/**
 * tagmask benchmark: `npm run bench` (see bench/README.md for how to read it).
 *
 *   npm run bench [-- --quick] [--tokens N] [--rounds N] [--dense-rounds N] [--cli-rounds N]
 *                 [--dense-cli-rounds N] [--corpus realistic|tag-dense] [--only qwen3|llama3]
 *                 [--skip-cli] [--skip-stages] [--out bench/results.json] [--work-dir DIR]
 *
 * Two corpora, both tiled to the same token count: `realistic` (generated Search-R1 training-like
 * rollouts, bench/realistic.ts; the headline numbers) and `tag-dense` (the conformance samples,
 * bench/corpus.ts; fewer rounds with --quick). Speeds are reported as ratios to baselines timed in the same process
 * (or the same run), never asserted. Phases, in this order on purpose:
 *   A. in memory, typed ids only, every corpus and tokenizer: sanity check, then Masker.maskBatch vs the
 *      lookup floor and a naive regex masker (interleaved rounds, medians), then Masker.mask() per rollout
 *      on Uint32Array views;
 *   B. Masker.mask() on number[] ids (the CLI's shape) and maskBatch again, now that V8 has seen both
 *      shapes in the shared scanner (the cost a library user mixing them would pay);
 *   C. the CLI end to end in child processes vs read/parse/write floors (plain node children);
 *   D. the CLI's stages timed in one child process (bench/stages.ts), headline corpus only;
 *   E. the merge against tinker-cookbook's own trajectory_to_data in a Python child (bench/merge.ts; skipped
 *      with a message unless TINKER_COOKBOOK names a checkout of it);
 *   F. `{messages}` input against the same rollouts as ids, CLI end to end (bench/messages.ts);
 *   G. a cold first use (empty byte-table cache) against a warm one, CLI on one rollout (bench/cold.ts);
 *   H. detect on 1,000 rollouts against one mask of them (bench/detect.ts);
 *   I. the Python package per call (a batch of 8) and the CLI reading a pipe against the file (bench/serve.ts);
 *   J. `mask --jobs 2` against one thread on the headline CLI input, costs split by thread (bench/jobs.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

const loadavg = (): string => { try { return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '); } catch { return 'n/a'; } };
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Masker, createMasker, loadGrammar, loadTokenizer, type LoadedTokenizer } from '../src/index.ts';
import { NaiveMasker, floorMask, floorTable } from './baselines.ts';
import { buildCorpus, TARGETS, type Corpus, type CorpusKind } from './corpus.ts';
import { buildRealisticCorpus, type RealisticInfo } from './realistic.ts';
import { checkCliOutput, writeCorpusJsonl } from './jsonl.ts';
import { describeMerge, mergeBench, type MergeOutcome } from './merge.ts';
import { describeMessages, messagesBench, type MessagesResult } from './messages.ts';
import { describeParquet, parquetBench, type ParquetResult } from './parquet.ts';
import { coldBench, describeCold } from './cold.ts';
import { describeDetect, detectBench } from './detect.ts';
import { jobsBench, projection } from './jobs.ts';
import { serveBench } from './serve.ts';
import { fmt, interleave, median, now, table, type Timed } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The lookup floor measured on the machine the targets were set on (docs/measurements.md §4). */
const FEASIBILITY_FLOOR = 568;

// ── arguments ──────────────────────────────────────────────────────────────────────────────────────
const argv = process.argv.slice(2);
const has = (name: string) => argv.includes(name);
const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
const quick = has('--quick');
const config = {
  tokens: Number(value('--tokens', quick ? '4000000' : '20000000')),
  rounds: Number(value('--rounds', quick ? '5' : '7')),
  /** Timed in-memory rounds on the tag-dense corpus (the second row). */
  denseRounds: Number(value('--dense-rounds', quick ? '3' : '7')),
  warmup: 2,
  cliRounds: Number(value('--cli-rounds', quick ? '2' : '3')),
  denseCliRounds: Number(value('--dense-cli-rounds', quick ? '1' : '3')),
  only: value('--only', ''),
  corpus: value('--corpus', ''),
  cli: !has('--skip-cli'),
  stages: !has('--skip-stages'),
  merge: !has('--skip-merge'),
  serve: !has('--skip-serve'),
  messages: !has('--skip-messages'),
  cold: !has('--skip-cold'),
  detect: !has('--skip-detect'),
  jobs: !has('--skip-jobs'),
  jobsRounds: Number(value('--jobs-rounds', quick ? '1' : '3')),
  coldRounds: Number(value('--cold-rounds', quick ? '2' : '3')),
  /** Conversations in the messages-vs-ids files, and paired CLI rounds. */
  conversations: Number(value('--conversations', quick ? '200' : '500')),
  messagesRounds: Number(value('--messages-rounds', quick ? '2' : '3')),
  parquet: !has('--skip-parquet'),
  /** Rollouts of the realistic qwen3 corpus in the Parquet-vs-JSONL files, and paired CLI rounds. */
  parquetRollouts: Number(value('--parquet-rollouts', quick ? '5000' : '20000')),
  parquetRounds: Number(value('--parquet-rounds', quick ? '2' : '3')),
  /** Paired rounds of the merge against tinker-cookbook (the first is cold). */
  mergeRounds: Number(value('--merge-rounds', quick ? '3' : '5')),
  out: resolve(root, value('--out', 'bench/results.json')),
  workDir: value('--work-dir', '/tmp/tagmask-bench'),
};
const targets = TARGETS.filter((t) => !config.only || t.name === config.only);
const kinds = (['realistic', 'tag-dense'] as const).filter((k) => !config.corpus || k === config.corpus);
if (!targets.length || !kinds.length) throw new Error(`nothing to run: --only ${config.only} --corpus ${config.corpus}`);
const log = (line = '') => process.stdout.write(`${line}\n`);

type Target = (typeof TARGETS)[number];
/** One corpus for one tokenizer: a column of the tables. */
interface Run { kind: CorpusKind; target: Target; label: string; corpus: Corpus; loaded: LoadedTokenizer; stats: CorpusStats }
const roundsOf = (kind: CorpusKind) => (kind === 'realistic' ? config.rounds : config.denseRounds);
/** Rounds of the secondary in-memory rows (mask() per rollout, number[] and polymorphic maskBatch). */
const sideRoundsOf = (kind: CorpusKind) => (kind === 'realistic' ? Math.max(5, config.rounds - 2) : Math.max(3, config.denseRounds - 2));
const cliRoundsOf = (kind: CorpusKind) => (kind === 'realistic' ? config.cliRounds : config.denseCliRounds);

// ── machine facts ──────────────────────────────────────────────────────────────────────────────────
function machine() {
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    cpu = /^model name\s*:\s*(.*)$/m.exec(info)?.[1] ?? cpu;
  } catch { /* not Linux */ }
  const git = (args: string[]) => spawnSync('git', args, { cwd: root, encoding: 'utf8' }).stdout?.trim() ?? '';
  return {
    date: new Date().toISOString(),
    node: process.version,
    v8: process.versions.v8,
    cpu,
    cores: cpus().length,
    memoryGB: +(totalmem() / 2 ** 30).toFixed(1),
    platform: `${process.platform}-${process.arch}`,
    loadavgAtStart: loadavg(),
    commit: git(['rev-parse', '--short', 'HEAD']),
    dirtySrc: git(['status', '--porcelain', '--', 'src']).length > 0,
  };
}

// ── corpus facts ───────────────────────────────────────────────────────────────────────────────────
interface CorpusStats {
  rollouts: number;
  tokens: number;
  tokensPerRollout: number;
  distinctRollouts: number;
  /** Share of tokens with mask 1. */
  actionShare: number;
  /** Share of tokens whose piece holds a `<` byte (where every Search-R1 literal starts). */
  ltShare: number;
  /** Share of rollouts that state prompt_length. */
  promptLengthStated: number;
  realistic?: RealisticInfo;
}

function corpusStats(corpus: Corpus, loaded: LoadedTokenizer, realistic?: RealisticInfo): CorpusStats {
  const lut = floorTable(loaded.table);
  let lt = 0;
  let action = 0;
  for (let i = 0; i < corpus.tokens; i++) { lt += lut[corpus.ids[i]]; action += corpus.expected[i]; }
  let stated = 0;
  for (let r = 0; r < corpus.rollouts; r++) if (corpus.promptLengths[r] >= 0) stated++;
  return {
    rollouts: corpus.rollouts,
    tokens: corpus.tokens,
    tokensPerRollout: +(corpus.tokens / corpus.rollouts).toFixed(1),
    distinctRollouts: corpus.samples.length,
    actionShare: +(action / corpus.tokens).toFixed(4),
    ltShare: +(lt / corpus.tokens).toFixed(4),
    promptLengthStated: +(stated / corpus.rollouts).toFixed(3),
    ...(realistic ? { realistic } : {}),
  };
}

// ── phase A/B: in memory ───────────────────────────────────────────────────────────────────────────
interface InMemory {
  tokens: number;
  rollouts: number;
  tokensPerRollout: number;
  rounds: number;
  sanity: { batchBadTokens: number; batchBadRollouts: number; batchBadDistinct: number; maskBadTokens: number; optionLines: number; optionLinesBad: number; diagnosticsRaised: number; naiveAgreement: number };
  timings: Timed[];
  ratios: { batchOverFloor: number; batchOverFloorCpu: number; batchOverNaive: number; maskTypedOverBatch: number; maskArrayOverBatch?: number; batchAfterPolymorphicOverBatch?: number };
}

/** Tokens and rollouts where `mask` differs from the constructed masks, and how many distinct rollouts those are. */
function countBad(mask: Uint8Array, corpus: Corpus): { tokens: number; rollouts: number; distinct: number } {
  let tokens = 0;
  let rollouts = 0;
  const distinct = new Set<number>();
  for (let r = 0; r < corpus.rollouts; r++) {
    let bad = 0;
    for (let i = corpus.starts[r]; i < corpus.starts[r + 1]; i++) if (mask[i] !== corpus.expected[i]) bad++;
    if (bad) { rollouts++; tokens += bad; distinct.add(corpus.source[r]); }
  }
  return { tokens, rollouts, distinct: distinct.size };
}

/** Masker.mask() over every rollout; returns a checksum so nothing is optimized away. */
function maskEach(masker: Masker, inputs: ArrayLike<number>[], promptLengths: Int32Array): number {
  let sink = 0;
  for (let r = 0; r < inputs.length; r++) {
    const p = promptLengths[r];
    const result = masker.mask(inputs[r], p >= 0 ? { promptLength: p } : {});
    sink += result.spans.length + result.diagnostics.length + result.mask[result.mask.length - 1];
  }
  return sink;
}

function timeRounds(name: string, tokens: number, rounds: number, warmup: number, run: () => void): Timed {
  return interleave([{ name, run }], tokens, rounds, warmup)[0];
}

async function inMemoryTyped({ kind, corpus, loaded }: Run): Promise<InMemory> {
  const masker = await createMasker('search-r1', loaded);
  const mask = new Uint8Array(corpus.tokens);

  // Sanity (not timing): batch masks == constructed masks; option lines through their own Masker.
  const raised = masker.maskBatch(corpus.ids, corpus.starts, corpus.promptLengths, mask);
  const batchBad = countBad(mask, corpus);
  const grammar = loadGrammar('search-r1');
  let optionLinesBad = 0;
  for (const line of corpus.withOptions) {
    const own = new Masker(grammar, loaded.table, line.options ?? {});
    const result = own.mask(Uint32Array.from(line.tokens), line.prompt_length !== undefined ? { promptLength: line.prompt_length } : {});
    if (result.mask.some((m, i) => m !== line.mask[i])) optionLinesBad++;
  }
  const naive = new NaiveMasker(loaded.table);
  naive.maskBatch(corpus.ids, corpus.starts, corpus.promptLengths, mask);
  const naiveBad = countBad(mask, corpus);

  const lut = floorTable(loaded.table);
  const timings = interleave(
    [
      { name: 'floor (mask[i] = lut[ids[i]])', run: () => floorMask(corpus.ids, lut, mask) },
      { name: 'tagmask maskBatch', run: () => { masker.maskBatch(corpus.ids, corpus.starts, corpus.promptLengths, mask); } },
      { name: 'naive (latin1 + regex)', run: () => naive.maskBatch(corpus.ids, corpus.starts, corpus.promptLengths, mask) },
    ],
    corpus.tokens,
    roundsOf(kind),
    config.warmup,
  );

  // Masker.mask() per rollout, on Uint32Array views (no copy), with spans and diagnostics.
  const views = Array.from({ length: corpus.rollouts }, (_, r) => corpus.ids.subarray(corpus.starts[r], corpus.starts[r + 1]));
  let maskBad = 0;
  views.forEach((view, r) => {
    const p = corpus.promptLengths[r];
    const m = masker.mask(view, p >= 0 ? { promptLength: p } : {}).mask;
    for (let i = 0; i < m.length; i++) if (m[i] !== corpus.expected[corpus.starts[r] + i]) maskBad++;
  });
  timings.push(timeRounds('tagmask mask() per rollout, Uint32Array', corpus.tokens, sideRoundsOf(kind), 1, () => maskEach(masker, views, corpus.promptLengths)));

  const [floor, batch, naiveT, maskTyped] = timings;
  return {
    tokens: corpus.tokens,
    rollouts: corpus.rollouts,
    tokensPerRollout: +(corpus.tokens / corpus.rollouts).toFixed(1),
    rounds: roundsOf(kind),
    sanity: {
      batchBadTokens: batchBad.tokens,
      batchBadRollouts: batchBad.rollouts,
      batchBadDistinct: batchBad.distinct,
      maskBadTokens: maskBad,
      optionLines: corpus.withOptions.length,
      optionLinesBad,
      diagnosticsRaised: raised,
      naiveAgreement: +(1 - naiveBad.tokens / corpus.tokens).toFixed(5),
    },
    timings,
    ratios: {
      batchOverFloor: +(batch.mtoks / floor.mtoks).toFixed(3),
      batchOverFloorCpu: +(batch.cpuMtoks / floor.cpuMtoks).toFixed(3),
      batchOverNaive: +(batch.mtoks / naiveT.mtoks).toFixed(2),
      maskTypedOverBatch: +(maskTyped.mtoks / batch.mtoks).toFixed(3),
    },
  };
}

async function inMemoryArrays({ kind, corpus, loaded }: Run, result: InMemory): Promise<void> {
  const masker = await createMasker('search-r1', loaded);
  const arrays = Array.from({ length: corpus.rollouts }, (_, r) => Array.from(corpus.ids.subarray(corpus.starts[r], corpus.starts[r + 1])));
  const rounds = sideRoundsOf(kind);
  const maskArray = timeRounds('tagmask mask() per rollout, number[] (CLI shape)', corpus.tokens, rounds, 1, () => maskEach(masker, arrays, corpus.promptLengths));
  const mask = new Uint8Array(corpus.tokens);
  const batchAgain = timeRounds('tagmask maskBatch after number[] seen (polymorphic)', corpus.tokens, rounds, 1, () => { masker.maskBatch(corpus.ids, corpus.starts, corpus.promptLengths, mask); });
  result.timings.push(maskArray, batchAgain);
  const batch = result.timings[1];
  result.ratios.maskArrayOverBatch = +(maskArray.mtoks / batch.mtoks).toFixed(3);
  result.ratios.batchAfterPolymorphicOverBatch = +(batchAgain.mtoks / batch.mtoks).toFixed(3);
}

// ── phase C: CLI end to end ────────────────────────────────────────────────────────────────────────
interface ProcessRun { wallMs: number; maxRssMB?: number; userS?: number; sysS?: number; status: number | null; stderr: string }

function runChild(command: string, args: string[]): ProcessRun {
  const timed = existsSync('/usr/bin/time');
  const t0 = now();
  const child = timed
    ? spawnSync('/usr/bin/time', ['-f', 'BENCHTIME %M %U %S', command, ...args], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 })
    : spawnSync(command, args, { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
  const wallMs = now() - t0;
  const match = /BENCHTIME (\d+) ([\d.]+) ([\d.]+)/.exec(child.stderr ?? '');
  const stderr = (child.stderr ?? '').replace(/BENCHTIME.*\n?/, '').trim();
  if (child.status !== 0 && !(child.status === 1 && /rollouts masked/.test(stderr))) {
    throw new Error(`${command} ${args.join(' ')} failed (${child.status}): ${stderr.slice(-2000)}`);
  }
  return { wallMs, status: child.status, stderr, ...(match ? { maxRssMB: +(Number(match[1]) / 1024).toFixed(0), userS: Number(match[2]), sysS: Number(match[3]) } : {}) };
}

interface CliResult {
  tokens: number;
  rounds: number;
  inputMB: number;
  outputMB: number;
  startupMs: number;
  runs: Record<string, { wallMs: number; mtoks: number; maxRssMB?: number; cpuS?: number; walls: number[] }>;
  steadyMtoks: number;
  ratios: { cliOverParseFloor: number; cliOverWriteFloor: number; cliOverReadFloor: number };
  /** Issue 21 goal 2: JSON floor wall ÷ CLI wall, per round (paired), and the same by CPU time. */
  overJsonFloor: { median: number; min: number; max: number; pairs: number; cpuMedian: number; cpuMin: number; cpuMax: number };
  summary: string;
  outputCheck: Awaited<ReturnType<typeof checkCliOutput>>;
}

const inputFile = (run: Run) => join(config.workDir, `${run.kind}-${run.target.name}.jsonl`);

async function cliBench(run: Run): Promise<CliResult> {
  const { target, corpus } = run;
  mkdirSync(config.workDir, { recursive: true });
  const input = inputFile(run);
  const one = input.replace(/\.jsonl$/, '-one.jsonl');
  const output = input.replace(/\.jsonl$/, '.out.jsonl');
  const floorOut = input.replace(/\.jsonl$/, '.floor-out.jsonl');
  const inputBytes = writeCorpusJsonl(corpus, input);
  writeCorpusJsonl(corpus, one, 1);

  const cli = (file: string, out: string) => runChild(process.execPath, ['bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', target.tokenizer, file, '-o', out]);
  // Warm: tsx's transform cache and tagmask's byte-table cache (a first run may build it from tokenizer.json).
  cli(one, `${output}.one`);
  cli(one, `${output}.one`);
  const startup = median([0, 1, 2].map(() => cli(one, `${output}.one`).wallMs));

  const contenders: Array<[string, () => ProcessRun]> = [
    ['floor: read lines', () => runChild(process.execPath, ['bench/floor.mjs', 'read', input])],
    ['floor: read + JSON.parse', () => runChild(process.execPath, ['bench/floor.mjs', 'parse', input])],
    ['floor: parse + write {id,mask}', () => runChild(process.execPath, ['bench/floor.mjs', 'write', input, floorOut])],
    ['floor: JSON.parse + JSON.stringify', () => runChild(process.execPath, ['bench/floor.mjs', 'json', input, floorOut])],
    ['tagmask mask (CLI)', () => cli(input, output)],
  ];
  const collected = new Map<string, ProcessRun[]>(contenders.map(([name]) => [name, []]));
  contenders.forEach(([, child]) => child()); // one untimed round: page cache, disk allocation
  const rounds = cliRoundsOf(run.kind);
  for (let r = 0; r < rounds; r++) for (const [name, child] of contenders) collected.get(name)!.push(child());

  const runs: CliResult['runs'] = {};
  for (const [name, list] of collected) {
    const wallMs = median(list.map((x) => x.wallMs));
    const rss = list.map((x) => x.maxRssMB).filter((x): x is number => x !== undefined);
    const cpu = list.map((x) => (x.userS ?? 0) + (x.sysS ?? 0));
    runs[name] = { wallMs: +wallMs.toFixed(0), mtoks: +(corpus.tokens / wallMs / 1e3).toFixed(2), maxRssMB: rss.length ? Math.max(...rss) : undefined, cpuS: +median(cpu).toFixed(2), walls: list.map((x) => +x.wallMs.toFixed(0)) };
  }
  const cliRun = runs['tagmask mask (CLI)'];
  const jsonList = collected.get('floor: JSON.parse + JSON.stringify')!;
  const cliList = collected.get('tagmask mask (CLI)')!;
  const spread = (values: number[]) => ({ median: +median(values).toFixed(3), min: +Math.min(...values).toFixed(3), max: +Math.max(...values).toFixed(3) });
  const wallPairs = spread(jsonList.map((x, i) => x.wallMs / cliList[i].wallMs));
  const cpuOf = (x: ProcessRun) => (x.userS ?? NaN) + (x.sysS ?? NaN);
  const cpuPairs = spread(jsonList.map((x, i) => cpuOf(x) / cpuOf(cliList[i])));
  const outputCheck = await checkCliOutput(corpus, output);
  const result: CliResult = {
    tokens: corpus.tokens,
    rounds,
    inputMB: +(inputBytes / 1e6).toFixed(1),
    outputMB: +(statSync(output).size / 1e6).toFixed(1),
    startupMs: +startup.toFixed(0),
    runs,
    steadyMtoks: +(corpus.tokens / (cliRun.wallMs - startup) / 1e3).toFixed(2),
    ratios: {
      cliOverReadFloor: +(runs['floor: read lines'].wallMs / cliRun.wallMs).toFixed(3),
      cliOverParseFloor: +(runs['floor: read + JSON.parse'].wallMs / cliRun.wallMs).toFixed(3),
      cliOverWriteFloor: +(runs['floor: parse + write {id,mask}'].wallMs / cliRun.wallMs).toFixed(3),
    },
    overJsonFloor: { ...wallPairs, pairs: jsonList.length, cpuMedian: cpuPairs.median, cpuMin: cpuPairs.min, cpuMax: cpuPairs.max },
    summary: collected.get('tagmask mask (CLI)')![0].stderr.split('\n').at(-1) ?? '',
    outputCheck,
  };
  rmSync(floorOut, { force: true });
  rmSync(`${output}.one`, { force: true });
  return result;
}

function stagesBench(run: Run): Record<string, unknown> {
  const input = inputFile(run);
  const child = spawnSync(process.execPath, ['--import', 'tsx', 'bench/stages.ts', input, run.target.tokenizer, '--reps', quick ? '1' : '2'], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (child.status !== 0) throw new Error(`bench/stages.ts failed: ${child.stderr}`);
  rmSync(`${input}.stages-out.jsonl`, { force: true });
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!);
}

// ── main ───────────────────────────────────────────────────────────────────────────────────────────
const yesNo = (x: number, target: number) => (x >= target ? 'yes' : `no (${fmt(x / target, 2)} of it)`);

async function main() {
  const t00 = now();
  const facts = machine();
  log(`tagmask bench · ${facts.date} · node ${facts.node} · ${facts.cpu} × ${facts.cores} · commit ${facts.commit}${facts.dirtySrc ? ' (src modified)' : ''} · load ${facts.loadavgAtStart}`);
  log(`corpora: ${kinds.join(', ')}, each ~${(config.tokens / 1e6).toFixed(0)} M tokens per tokenizer; in memory ${config.rounds} timed rounds (tag-dense ${config.denseRounds}) after ${config.warmup} warm-up, medians`);
  const results: Record<string, unknown> = { machine: facts, config: { ...config, out: undefined } };

  // Corpora (every one built before anything is timed).
  const tokenizers: Record<string, LoadedTokenizer> = {};
  for (const target of targets) tokenizers[target.name] = await loadTokenizer(target.tokenizer, root);
  const runs: Run[] = [];
  for (const kind of kinds) {
    for (const target of targets) {
      const t0 = now();
      const loaded = tokenizers[target.name];
      let corpus: Corpus;
      let info: RealisticInfo | undefined;
      if (kind === 'realistic') ({ corpus, info } = buildRealisticCorpus(target, config.tokens, config.workDir));
      else corpus = buildCorpus(root, target, config.tokens);
      const stats = corpusStats(corpus, loaded, info);
      runs.push({ kind, target, label: `${kind} ${target.name}`, corpus, loaded, stats });
      const built = info ? (info.cached ? `; distinct rollouts from the cache in ${config.workDir}` : `; distinct rollouts built with runSearchR1 in ${fmt(info.buildMs / 1e3, 1)} s`) : '';
      log(`[${kind} ${target.name}] ${corpus.samples.length} distinct → ${corpus.rollouts} rollouts, ${corpus.tokens} tokens (${fmt(corpus.tokens / corpus.rollouts, 0)}/rollout); ready in ${fmt(now() - t0, 0)} ms${built}`);
    }
  }
  results.corpora = Object.fromEntries(kinds.map((kind) => [kind, Object.fromEntries(runs.filter((r) => r.kind === kind).map((r) => [r.target.name, r.stats]))]));
  const labels = runs.map((r) => r.label);
  const pct = (x: number) => `${fmt(100 * x)}%`;
  log('\nCorpora:');
  const realisticRows = (pick: (info: RealisticInfo) => string): string[] => runs.map((r) => (r.stats.realistic ? pick(r.stats.realistic) : '-'));
  log(table(['', ...labels], [
    ['distinct rollouts', ...runs.map((r) => String(r.stats.distinctRollouts))],
    ['rollouts tiled', ...runs.map((r) => String(r.stats.rollouts))],
    ['tokens per rollout', ...runs.map((r) => fmt(r.stats.tokensPerRollout))],
    ['action tokens (mask 1)', ...runs.map((r) => pct(r.stats.actionShare))],
    ['tokens holding a "<" byte', ...runs.map((r) => pct(r.stats.ltShare))],
    ['rollouts stating prompt_length', ...runs.map((r) => pct(r.stats.promptLengthStated))],
    ['prompt tokens (min–max)', ...realisticRows((x) => `${x.promptTokens.min}–${x.promptTokens.max}`)],
    ['observation / response tokens', ...realisticRows((x) => pct(x.observationShareOfResponse))],
    ['rollouts with 0/1/2/3 searches', ...realisticRows((x) => x.searches.join('/'))],
    ['odd documents (<, >, CJK, emoji)', ...realisticRows((x) => `${x.oddDocuments}/${x.documents}`)],
  ]));

  // A: typed ids only, every corpus.
  const inMemory = new Map<Run, InMemory>();
  for (const run of runs) {
    log(`\n[${run.label}] in memory, ${roundsOf(run.kind)} rounds …`);
    const result = await inMemoryTyped(run);
    inMemory.set(run, result);
    const s = result.sanity;
    log(`  sanity: maskBatch ${s.batchBadTokens} bad tokens in ${s.batchBadRollouts} rollouts (${s.batchBadDistinct} of ${run.stats.distinctRollouts} distinct); mask() ${s.maskBadTokens} bad tokens${s.optionLines ? `; option lines ${s.optionLines - s.optionLinesBad}/${s.optionLines} agree` : ''}; naive agrees on ${(100 * s.naiveAgreement).toFixed(2)}% of tokens`);
  }
  // B: number[] ids (after every typed measurement).
  for (const run of runs) await inMemoryArrays(run, inMemory.get(run)!);

  const im = (run: Run) => inMemory.get(run)!;
  log('\nIn memory (one core), M tokens/s at the median wall time:');
  const names = im(runs[0]).timings.map((t) => t.name);
  log(table(['', ...labels], names.map((name, i) => [name, ...runs.map((r) => fmt(im(r).timings[i].mtoks))])));
  for (const kind of kinds) {
    const group = runs.filter((r) => r.kind === kind);
    log(`\n${kind}: median wall (the headline), median CPU time, fastest run; ${roundsOf(kind)} rounds (${sideRoundsOf(kind)} for the mask() and polymorphic rows):`);
    log(table(['', ...group.flatMap((r) => [`${r.target.name} wall`, 'cpu', 'best', 'ms'])], names.map((name, i) => [
      name,
      ...group.flatMap((r) => {
        const x = im(r).timings[i];
        return [fmt(x.mtoks), fmt(x.cpuMtoks), fmt(x.bestMtoks), fmt(x.medianMs)];
      }),
    ])));
  }
  log('\nRatios (higher is better for tagmask):');
  log(table(['', ...labels], [
    ['maskBatch / floor (wall)', ...runs.map((r) => fmt(im(r).ratios.batchOverFloor, 3))],
    ['maskBatch / floor (cpu)', ...runs.map((r) => fmt(im(r).ratios.batchOverFloorCpu, 3))],
    [`target as a floor ratio (200 / ${FEASIBILITY_FLOOR} Mtok/s)`, ...runs.map(() => fmt(200 / FEASIBILITY_FLOOR, 3))],
    ['maskBatch / naive', ...runs.map((r) => `${fmt(im(r).ratios.batchOverNaive, 2)}×`)],
    ['mask() typed / maskBatch', ...runs.map((r) => fmt(im(r).ratios.maskTypedOverBatch, 3))],
    ['mask() number[] / maskBatch', ...runs.map((r) => fmt(im(r).ratios.maskArrayOverBatch ?? NaN, 3))],
    ['maskBatch polymorphic / monomorphic', ...runs.map((r) => fmt(im(r).ratios.batchAfterPolymorphicOverBatch ?? NaN, 3))],
    ['target 200 Mtok/s met (wall)', ...runs.map((r) => yesNo(im(r).timings[1].mtoks, 200))],
  ]));
  results.inMemory = Object.fromEntries(kinds.map((kind) => [kind, Object.fromEntries(runs.filter((r) => r.kind === kind).map((r) => [r.target.name, im(r)]))]));

  const cli = new Map<Run, CliResult>();
  if (config.cli) {
    for (const run of runs) {
      log(`\n[${run.label}] CLI: writing ${inputFile(run)} and running ${cliRoundsOf(run.kind)} interleaved rounds …`);
      const c = await cliBench(run);
      cli.set(run, c);
      log(`  ${c.inputMB} MB in, ${c.outputMB} MB out; output check: ${c.outputCheck.badTokens} bad tokens in ${c.outputCheck.badRollouts} of ${c.outputCheck.lines} lines, ${c.outputCheck.errors} errors`);
      log(`  CLI says: ${c.summary}`);
    }
    const cl = (run: Run) => cli.get(run)!;
    const cliKinds = Object.keys(cl(runs[0]).runs);
    log('\nCLI end to end (child processes, wall clock incl. startup), M tokens/s at the median:');
    log(table(['', ...labels], cliKinds.map((k) => [k, ...runs.map((r) => fmt(cl(r).runs[k].mtoks, 2))])));
    for (const kind of kinds) {
      const group = runs.filter((r) => r.kind === kind);
      log(`\n${kind}: median of ${cliRoundsOf(kind)} rounds:`);
      log(table(['', ...group.flatMap((r) => [`${r.target.name} ms`, 'Mtok/s', 'RSS MB', 'CPU s'])], cliKinds.map((k) => [
        k,
        ...group.flatMap((r) => { const x = cl(r).runs[k]; return [String(x.wallMs), fmt(x.mtoks, 2), String(x.maxRssMB ?? '-'), fmt(x.cpuS ?? NaN, 2)]; }),
      ])));
    }
    log('');
    log(table(['', ...labels], [
      ['CLI startup (1-line input), ms', ...runs.map((r) => String(cl(r).startupMs))],
      ['CLI steady state (wall − startup), Mtok/s', ...runs.map((r) => fmt(cl(r).steadyMtoks, 2))],
      ['CLI speed / read floor', ...runs.map((r) => fmt(cl(r).ratios.cliOverReadFloor, 3))],
      ['CLI speed / parse floor', ...runs.map((r) => fmt(cl(r).ratios.cliOverParseFloor, 3))],
      ['CLI speed / parse+write floor', ...runs.map((r) => fmt(cl(r).ratios.cliOverWriteFloor, 3))],
      ['CLI speed / JSON floor, paired (min–max)', ...runs.map((r) => { const x = cl(r).overJsonFloor; return `${fmt(x.median, 2)} (${fmt(x.min, 2)}–${fmt(x.max, 2)})`; })],
      ['  the same by CPU time', ...runs.map((r) => { const x = cl(r).overJsonFloor; return `${fmt(x.cpuMedian, 2)} (${fmt(x.cpuMin, 2)}–${fmt(x.cpuMax, 2)})`; })],
      ['goal 2: ≥ 2× the JSON floor', ...runs.map((r) => yesNo(cl(r).overJsonFloor.median, 2))],
      ['target 20 Mtok/s met', ...runs.map((r) => yesNo(cl(r).runs['tagmask mask (CLI)'].mtoks, 20))],
    ]));
    results.cli = Object.fromEntries(kinds.map((kind) => [kind, Object.fromEntries(runs.filter((r) => r.kind === kind).map((r) => [r.target.name, cl(r)]))]));

    if (config.stages) {
      const headlineRuns = runs.filter((r) => r.kind === kinds[0]);
      const stages: Record<string, unknown> = {};
      for (const run of headlineRuns) stages[run.target.name] = stagesBench(run);
      log(`\nCLI stages in one process (bench/stages.ts, ${kinds[0]} corpus), wall ms: cold = first pass in a fresh process (what the CLI pays), warm = best later pass:`);
      type St = { stageMs: Record<string, number>; coldStageMs: Record<string, number>; coldLoopMs: number; loopMs: number; jsonParseMs: number; runRolloutsMs: number; openMs: number; nsPerToken: Record<string, number> };
      const first = stages[headlineRuns[0].target.name] as St;
      const stageNames = Object.keys(first.stageMs);
      const cell = (x: number, total: number) => [fmt(x, 0), `${fmt((100 * x) / total)}%`];
      const st = (r: Run) => stages[r.target.name] as St;
      log(table(['stage', ...headlineRuns.flatMap((r) => [`${r.target.name} cold`, 'share', 'warm', 'share'])], [
        ...stageNames.map((stage) => [`${stage} (warm ${headlineRuns.map((r) => fmt(st(r).nsPerToken[stage], 2)).join(' / ')} ns/token)`, ...headlineRuns.flatMap((r) => [...cell(st(r).coldStageMs[stage], st(r).coldLoopMs), ...cell(st(r).stageMs[stage], st(r).loopMs)])]),
        ['= loop', ...headlineRuns.flatMap((r) => [fmt(st(r).coldLoopMs, 0), '', fmt(st(r).loopMs, 0), ''])],
        ['JSON.parse of the same lines, alone', ...headlineRuns.flatMap((r) => ['', '', fmt(st(r).jsonParseMs, 0), ''])],
        ['runRollouts itself', ...headlineRuns.flatMap((r) => ['', '', fmt(st(r).runRolloutsMs, 0), ''])],
        ['MaskerPool.open (warm cache)', ...headlineRuns.flatMap((r) => [fmt(st(r).openMs, 0), '', '', ''])],
      ]));
      results.stages = { corpus: kinds[0], ...stages };
    }
  }

  // E: the merge against tinker-cookbook's own trajectory_to_data.
  let merge: MergeOutcome | undefined;
  if (config.merge) {
    log(`\nmerge: ${config.mergeRounds} paired rounds against tinker-cookbook's trajectory_to_data …`);
    merge = await mergeBench({ rounds: config.mergeRounds, trajectories: 300, workDir: config.workDir, log });
    log(describeMerge(merge));
    results.merge = merge;
  }

  // F: {messages} input against the same rollouts as ids.
  let messages: MessagesResult | undefined;
  if (config.messages) {
    log(`\nmessages: ${config.conversations} conversations, ${config.messagesRounds} paired CLI rounds …`);
    messages = await messagesBench({ conversations: config.conversations, rounds: config.messagesRounds, workDir: config.workDir });
    log(describeMessages(messages));
    results.messages = messages;
  }

  // F2: Parquet read and write against JSONL on the same rollouts.
  let parquet: ParquetResult | undefined;
  const parquetCorpus = runs.find((r) => r.kind === 'realistic' && r.target.name === 'qwen3') ?? runs[0];
  if (config.parquet && parquetCorpus) {
    log(`\nParquet: ${config.parquetRollouts} rollouts (${parquetCorpus.label}), ${config.parquetRounds} paired CLI rounds …`);
    parquet = await parquetBench({ corpus: parquetCorpus.corpus, rollouts: config.parquetRollouts, rounds: config.parquetRounds, workDir: config.workDir });
    log(describeParquet(parquet));
    results.parquet = parquet;
  }

  // G: a cold first use against a warm one.
  let cold: ReturnType<typeof coldBench> | undefined;
  if (config.cold) {
    log(`\ncold start: ${config.coldRounds} paired rounds per tokenizer …`);
    cold = coldBench({ rounds: config.coldRounds, workDir: config.workDir });
    log(describeCold(cold));
    results.cold = cold;
  }

  // H: detect on 1,000 rollouts against one mask of them (the CLI input of the first run, written in phase C).
  let detect: ReturnType<typeof detectBench> | undefined;
  if (config.detect && config.cli) {
    log(`\ndetect: 1,000 rollouts of ${inputFile(runs[0])}, ${config.coldRounds} paired rounds …`);
    detect = detectBench({ input: inputFile(runs[0]), tokenizer: runs[0].target.tokenizer, rounds: config.coldRounds });
    log(describeDetect(detect));
    results.detect = detect;
  }

  // I: the training-loop doors: a batch through the Python package, and the CLI reading a pipe (bench/serve.ts).
  if (config.serve) {
    log('\nserve: the Python package per call, and the CLI from a pipe against the file …');
    results.serve = serveBench({ quick, workDir: config.workDir, log });
  }

  // J: --jobs 2 against one thread on the first run's CLI input (written in phase C).
  if (config.jobs && config.cli) {
    log(`\n--jobs: ${inputFile(runs[0])}, --jobs 1 and 2, ${config.jobsRounds} paired rounds (and on its first quarter) …`);
    const jobs = jobsBench(inputFile(runs[0]), { tokenizer: runs[0].target.tokenizer, jobs: [1, 2], rounds: config.jobsRounds });
    const two = jobs[2] as { wallSpeedup: { median: number; min: number; max: number }; cpuOverOneThread: { median: number } };
    log(`  --jobs 2 wall ÷ --jobs 1: ${fmt(two.wallSpeedup.median, 2)} (${fmt(two.wallSpeedup.min, 2)}–${fmt(two.wallSpeedup.max, 2)}), CPU ${fmt(two.cpuOverOneThread.median, 2)}× one thread's; projected ${projection(jobs) ?? '(no thread figures)'}`);
    results.jobs = jobs;
  }

  // Headline: the first corpus (realistic unless --corpus says otherwise).
  const headline = runs.filter((r) => r.kind === kinds[0]);
  results.headline = {
    corpus: kinds[0],
    ...Object.fromEntries(headline.map((r) => [r.target.name, {
      maskBatchMtoks: im(r).timings[1].mtoks,
      floorMtoks: im(r).timings[0].mtoks,
      maskBatchOverFloor: im(r).ratios.batchOverFloor,
      maskBatchOverNaive: im(r).ratios.batchOverNaive,
      maskPerRolloutMtoks: im(r).timings[3].mtoks,
      ...(cli.has(r) ? { cliMtoks: cli.get(r)!.runs['tagmask mask (CLI)'].mtoks, cliOverParseFloor: cli.get(r)!.ratios.cliOverParseFloor } : {}),
    }])),
  };
  log(`\nHeadline (${kinds[0]} corpus):`);
  for (const r of headline) {
    const x = im(r);
    const c = cli.get(r);
    log(`  ${r.target.name}: maskBatch ${fmt(x.timings[1].mtoks)} Mtok/s = ${fmt(x.ratios.batchOverFloor, 3)} of the floor (${fmt(x.timings[0].mtoks)}; target ratio ${fmt(200 / FEASIBILITY_FLOOR, 3)}), ${fmt(x.ratios.batchOverNaive, 2)}× naive; mask() ${fmt(x.timings[3].mtoks)} Mtok/s${c ? `; CLI ${fmt(c.runs['tagmask mask (CLI)'].mtoks, 2)} Mtok/s = ${fmt(c.ratios.cliOverParseFloor, 3)} of the parse floor` : ''}`);
  }

  // Issue 21's goals, each as measured above: median and min–max of its paired rounds, against its target.
  type Range = { median: number; min: number; max: number };
  const goals: Array<{ goal: string; target: string; median: number; min: number; max: number; met: boolean }> = [];
  const goal = (name: string, range: Range, target: number, atLeast: boolean) =>
    goals.push({ goal: name, target: `${atLeast ? '≥' : '≤'} ${target}×`, median: range.median, min: range.min, max: range.max, met: atLeast ? range.median >= target : range.median <= target });
  if (merge && 'identical' in merge) {
    goal('1 merge: tinker ÷ tagmask, warm pairs', merge.warm, 30, true);
    goal('1 merge: tinker ÷ tagmask, every pair', merge.all, 30, true);
  }
  for (const r of headline) {
    if (!cli.has(r)) continue;
    const x = cli.get(r)!.overJsonFloor;
    goal(`2 CLI ÷ JSON floor, ${r.target.name}`, x, 2, true);
    goal(`2 CLI ÷ JSON floor, ${r.target.name}, CPU`, { median: x.cpuMedian, min: x.cpuMin, max: x.cpuMax }, 2, true);
  }
  if (messages) { goal('3 messages ÷ ids', messages.ratio, 3, false); goal('3 messages ÷ ids, CPU', messages.cpuRatio, 3, false); }
  if (parquet) { goal('4 Parquet read ÷ JSONL', parquet.read, 2, false); goal('4 Parquet write ÷ JSONL', parquet.write, 2, false); }
  for (const x of cold ?? []) goal(`5 cold ÷ warm, ${x.tokenizer}`, x.ratio, 2, false);
  if (detect) goal('6 detect ÷ mask, 1,000 rollouts', detect.ratio, 3, false);
  if (detect?.cpu) goal('6 detect ÷ mask, 1,000 rollouts, CPU', detect.cpu.ratio, 3, false);
  results.goals = goals;
  if (goals.length) {
    log(`
Issue 21 goals (median of paired rounds, min–max; met by the median):`);
    log(table(['goal', 'target', 'median', 'min–max', 'met'], goals.map((x) => [x.goal, x.target, fmt(x.median, 2), `${fmt(x.min, 2)}–${fmt(x.max, 2)}`, x.met ? 'yes' : 'no'])));
  }

  (results.machine as Record<string, unknown>).loadavgAtEnd = loadavg();
  (results.machine as Record<string, unknown>).benchSeconds = +((now() - t00) / 1e3).toFixed(0);
  writeFileSync(config.out, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nload average at end: ${loadavg()} (on ${facts.cores} cores; above that, other processes competed for the CPU and wall-clock figures are pessimistic); ${fmt((now() - t00) / 1e3, 0)} s in all`);
  log(`wrote ${config.out}`);

  // Sanity is required, not informative: any mask that differs from the constructed one fails the run.
  const failures = runs.flatMap((r) => {
    const s = im(r).sanity;
    const c = cli.get(r)?.outputCheck;
    const bad = s.batchBadTokens + s.maskBadTokens + s.optionLinesBad + (c ? c.badTokens + c.errors : 0);
    return bad ? [`${r.label}: maskBatch ${s.batchBadTokens}, mask() ${s.maskBadTokens}, option lines ${s.optionLinesBad}${c ? `, CLI ${c.badTokens} bad tokens / ${c.errors} errors` : ''}`] : [];
  });
  if (parquet && !parquet.outputsEqual) failures.push('parquet: reading or writing Parquet changed the output');
  if (messages && !messages.masksEqual) failures.push('messages: the masks of {messages} lines differ from those of the same rollouts as ids');
  if (merge && 'identical' in merge && !merge.identical) failures.push(`merge: datums differ from tinker-cookbook's (${merge.mismatches.join('; ')})`);
  if (failures.length) {
    log(`\nSANITY FAILED (masks differ from the constructed ones; the timings above are not comparable):\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
}

await main();
