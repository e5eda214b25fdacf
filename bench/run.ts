/**
 * tagmask benchmark: `npm run bench` (see bench/README.md for how to read it).
 *
 *   npm run bench [-- --quick] [--tokens N] [--rounds N] [--cli-rounds N] [--only qwen3|llama3]
 *                 [--skip-cli] [--skip-stages] [--out bench/results.json]
 *
 * Speeds are reported as ratios to baselines timed in the same process (or the same run), never asserted.
 * Phases, in this order on purpose:
 *   A. in memory, typed ids only: sanity check, then Masker.maskBatch vs the lookup floor and a naive
 *      regex masker (interleaved rounds, medians), then Masker.mask() per rollout on Uint32Array views;
 *   B. Masker.mask() on number[] ids (the CLI's shape) and maskBatch again, now that V8 has seen both
 *      shapes in the shared scanner (the cost a library user mixing them would pay);
 *   C. the CLI end to end in child processes vs read/parse/write floors (plain node children);
 *   D. the CLI's stages timed in one child process (bench/stages.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

const loadavg = (): string => { try { return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '); } catch { return 'n/a'; } };
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Masker, createMasker, loadGrammar, loadTokenizer, type LoadedTokenizer } from '../src/index.ts';
import { NaiveMasker, floorMask, floorTable } from './baselines.ts';
import { buildCorpus, TARGETS, type Corpus } from './corpus.ts';
import { checkCliOutput, writeCorpusJsonl } from './jsonl.ts';
import { fmt, interleave, median, now, table, type Timed } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The lookup floor measured on the machine the targets were set on (shared/research/feasibility.md §4). */
const FEASIBILITY_FLOOR = 568;

// ── arguments ──────────────────────────────────────────────────────────────────────────────────────
const argv = process.argv.slice(2);
const has = (name: string) => argv.includes(name);
const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
const quick = has('--quick');
const config = {
  tokens: Number(value('--tokens', quick ? '5000000' : '20000000')),
  rounds: Number(value('--rounds', quick ? '5' : '7')),
  warmup: 2,
  cliRounds: Number(value('--cli-rounds', quick ? '2' : '3')),
  only: value('--only', ''),
  cli: !has('--skip-cli'),
  stages: !has('--skip-stages'),
  out: resolve(root, value('--out', 'bench/results.json')),
  workDir: value('--work-dir', '/tmp/tagmask-bench'),
};
const targets = TARGETS.filter((t) => !config.only || t.name === config.only);
const log = (line = '') => process.stdout.write(`${line}\n`);

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

// ── phase A/B: in memory ───────────────────────────────────────────────────────────────────────────
interface InMemory {
  tokens: number;
  rollouts: number;
  tokensPerRollout: number;
  sanity: { batchBadTokens: number; batchBadRollouts: number; maskBadTokens: number; optionLines: number; optionLinesBad: number; diagnosticsRaised: number; naiveAgreement: number };
  timings: Timed[];
  ratios: { batchOverFloor: number; batchOverFloorCpu: number; batchOverNaive: number; maskTypedOverBatch: number; maskArrayOverBatch?: number; batchAfterPolymorphicOverBatch?: number };
}

function countBad(mask: Uint8Array, corpus: Corpus): { tokens: number; rollouts: number } {
  let tokens = 0;
  let rollouts = 0;
  for (let r = 0; r < corpus.rollouts; r++) {
    let bad = 0;
    for (let i = corpus.starts[r]; i < corpus.starts[r + 1]; i++) if (mask[i] !== corpus.expected[i]) bad++;
    if (bad) { rollouts++; tokens += bad; }
  }
  return { tokens, rollouts };
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

async function inMemoryTyped(target: (typeof TARGETS)[number], corpus: Corpus, loaded: LoadedTokenizer): Promise<InMemory> {
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
    config.rounds,
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
  const rounds = Math.max(5, config.rounds - 2);
  timings.push(timeRounds('tagmask mask() per rollout, Uint32Array', corpus.tokens, rounds, 1, () => maskEach(masker, views, corpus.promptLengths)));

  const [floor, batch, naiveT, maskTyped] = timings;
  return {
    tokens: corpus.tokens,
    rollouts: corpus.rollouts,
    tokensPerRollout: +(corpus.tokens / corpus.rollouts).toFixed(1),
    sanity: {
      batchBadTokens: batchBad.tokens,
      batchBadRollouts: batchBad.rollouts,
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

async function inMemoryArrays(corpus: Corpus, loaded: LoadedTokenizer, result: InMemory): Promise<void> {
  const masker = await createMasker('search-r1', loaded);
  const arrays = Array.from({ length: corpus.rollouts }, (_, r) => Array.from(corpus.ids.subarray(corpus.starts[r], corpus.starts[r + 1])));
  const rounds = Math.max(5, config.rounds - 2);
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
  inputMB: number;
  outputMB: number;
  startupMs: number;
  runs: Record<string, { wallMs: number; mtoks: number; maxRssMB?: number; cpuS?: number; walls: number[] }>;
  steadyMtoks: number;
  ratios: { cliOverParseFloor: number; cliOverWriteFloor: number; cliOverReadFloor: number };
  summary: string;
  outputCheck: Awaited<ReturnType<typeof checkCliOutput>>;
}

async function cliBench(target: (typeof TARGETS)[number], corpus: Corpus): Promise<CliResult> {
  mkdirSync(config.workDir, { recursive: true });
  const input = join(config.workDir, `${target.name}.jsonl`);
  const one = join(config.workDir, `${target.name}-one.jsonl`);
  const output = join(config.workDir, `${target.name}.out.jsonl`);
  const floorOut = join(config.workDir, `${target.name}.floor-out.jsonl`);
  const inputBytes = writeCorpusJsonl(corpus, input);
  writeCorpusJsonl(corpus, one, 1);

  const cli = (file: string, out: string) => runChild(process.execPath, ['bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', target.tokenizer, file, '-o', out]);
  // Warm: tsx's transform cache and tagmask's byte-table cache (a first run may build it from tokenizer.json).
  cli(one, `${output}.one`);
  cli(one, `${output}.one`);
  const startup = median([0, 1, 2].map(() => cli(one, `${output}.one`).wallMs));

  const kinds: Array<[string, () => ProcessRun]> = [
    ['floor: read lines', () => runChild(process.execPath, ['bench/floor.mjs', 'read', input])],
    ['floor: read + JSON.parse', () => runChild(process.execPath, ['bench/floor.mjs', 'parse', input])],
    ['floor: parse + write {id,mask}', () => runChild(process.execPath, ['bench/floor.mjs', 'write', input, floorOut])],
    ['tagmask mask (CLI)', () => cli(input, output)],
  ];
  const collected = new Map<string, ProcessRun[]>(kinds.map(([name]) => [name, []]));
  kinds.forEach(([, run]) => run()); // one untimed round: page cache, disk allocation
  for (let r = 0; r < config.cliRounds; r++) for (const [name, run] of kinds) collected.get(name)!.push(run());

  const runs: CliResult['runs'] = {};
  for (const [name, list] of collected) {
    const wallMs = median(list.map((x) => x.wallMs));
    const rss = list.map((x) => x.maxRssMB).filter((x): x is number => x !== undefined);
    const cpu = list.map((x) => (x.userS ?? 0) + (x.sysS ?? 0));
    runs[name] = { wallMs: +wallMs.toFixed(0), mtoks: +(corpus.tokens / wallMs / 1e3).toFixed(2), maxRssMB: rss.length ? Math.max(...rss) : undefined, cpuS: +median(cpu).toFixed(2), walls: list.map((x) => +x.wallMs.toFixed(0)) };
  }
  const cliRun = runs['tagmask mask (CLI)'];
  const outputCheck = await checkCliOutput(corpus, output);
  const result: CliResult = {
    tokens: corpus.tokens,
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
    summary: collected.get('tagmask mask (CLI)')![0].stderr.split('\n').at(-1) ?? '',
    outputCheck,
  };
  rmSync(floorOut, { force: true });
  rmSync(`${output}.one`, { force: true });
  return result;
}

function stagesBench(target: (typeof TARGETS)[number]): Record<string, unknown> {
  const input = join(config.workDir, `${target.name}.jsonl`);
  const child = spawnSync(process.execPath, ['--import', 'tsx', 'bench/stages.ts', input, target.tokenizer, '--reps', quick ? '1' : '2'], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (child.status !== 0) throw new Error(`bench/stages.ts failed: ${child.stderr}`);
  rmSync(`${input}.stages-out.jsonl`, { force: true });
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!);
}

// ── main ───────────────────────────────────────────────────────────────────────────────────────────
async function main() {
  const facts = machine();
  log(`tagmask bench · ${facts.date} · node ${facts.node} · ${facts.cpu} × ${facts.cores} · commit ${facts.commit}${facts.dirtySrc ? ' (src modified)' : ''} · load ${facts.loadavgAtStart}`);
  log(`corpus: ~${(config.tokens / 1e6).toFixed(0)} M tokens per tokenizer, tiled from samples/search-r1-*/rollouts.jsonl; ${config.rounds} timed rounds after ${config.warmup} warm-up, medians`);
  const results: Record<string, unknown> = { machine: facts, config: { ...config, out: undefined } };
  const inMemory: Record<string, InMemory> = {};
  const corpora: Record<string, Corpus> = {};
  const tokenizers: Record<string, LoadedTokenizer> = {};

  // A: typed ids only.
  for (const target of targets) {
    const corpus = buildCorpus(root, target, config.tokens);
    const t0 = now();
    const loaded = await loadTokenizer(target.tokenizer, root);
    log(`\n[${target.name}] ${corpus.rollouts} rollouts, ${corpus.tokens} tokens (${(corpus.tokens / corpus.rollouts).toFixed(0)}/rollout); tokenizer loaded in ${fmt(now() - t0, 0)} ms`);
    inMemory[target.name] = await inMemoryTyped(target, corpus, loaded);
    corpora[target.name] = corpus;
    tokenizers[target.name] = loaded;
    const s = inMemory[target.name].sanity;
    log(`  sanity: maskBatch ${s.batchBadTokens} bad tokens in ${s.batchBadRollouts} rollouts; mask() ${s.maskBadTokens} bad tokens; option lines ${s.optionLines - s.optionLinesBad}/${s.optionLines} agree; naive agrees on ${(100 * s.naiveAgreement).toFixed(2)}% of tokens`);
  }
  // B: number[] ids (after every typed measurement).
  for (const target of targets) await inMemoryArrays(corpora[target.name], tokenizers[target.name], inMemory[target.name]);

  log('\nIn memory (one core), M tokens/s: median wall (the headline), median CPU time, fastest run:');
  const names = inMemory[targets[0].name].timings.map((t) => t.name);
  log(table(['', ...targets.flatMap((t) => [`${t.name} wall`, 'cpu', 'best', 'ms'])], names.map((name, i) => [
    name,
    ...targets.flatMap((t) => {
      const x = inMemory[t.name].timings[i];
      return [fmt(x.mtoks), fmt(x.cpuMtoks), fmt(x.bestMtoks), fmt(x.medianMs)];
    }),
  ])));
  log('\nRatios (higher is better for tagmask):');
  log(table(['', ...targets.map((t) => t.name)], [
    ['maskBatch / floor (wall)', ...targets.map((t) => fmt(inMemory[t.name].ratios.batchOverFloor, 3))],
    ['maskBatch / floor (cpu)', ...targets.map((t) => fmt(inMemory[t.name].ratios.batchOverFloorCpu, 3))],
    [`target as a floor ratio (200 / ${FEASIBILITY_FLOOR} Mtok/s)`, ...targets.map(() => fmt(200 / FEASIBILITY_FLOOR, 3))],
    ['maskBatch / naive', ...targets.map((t) => `${fmt(inMemory[t.name].ratios.batchOverNaive, 2)}×`)],
    ['mask() typed / maskBatch', ...targets.map((t) => fmt(inMemory[t.name].ratios.maskTypedOverBatch, 3))],
    ['mask() number[] / maskBatch', ...targets.map((t) => fmt(inMemory[t.name].ratios.maskArrayOverBatch ?? NaN, 3))],
    ['maskBatch polymorphic / monomorphic', ...targets.map((t) => fmt(inMemory[t.name].ratios.batchAfterPolymorphicOverBatch ?? NaN, 3))],
    ['target 200 Mtok/s met (wall)', ...targets.map((t) => (inMemory[t.name].timings[1].mtoks >= 200 ? 'yes' : `no (${fmt(inMemory[t.name].timings[1].mtoks / 200, 2)} of it)`))],
  ]));
  results.inMemory = inMemory;

  if (config.cli) {
    const cli: Record<string, CliResult> = {};
    for (const target of targets) {
      log(`\n[${target.name}] CLI: writing ${config.workDir}/${target.name}.jsonl and running ${config.cliRounds} interleaved rounds …`);
      cli[target.name] = await cliBench(target, corpora[target.name]);
      const c = cli[target.name];
      log(`  ${c.inputMB} MB in, ${c.outputMB} MB out; output check: ${c.outputCheck.badTokens} bad tokens in ${c.outputCheck.badRollouts} of ${c.outputCheck.lines} lines, ${c.outputCheck.errors} errors`);
      log(`  CLI says: ${c.summary}`);
    }
    log('\nCLI end to end (child processes, wall clock incl. startup), median:');
    const kinds = Object.keys(cli[targets[0].name].runs);
    log(table(['', ...targets.flatMap((t) => [`${t.name} ms`, 'Mtok/s', 'RSS MB', 'CPU s'])], kinds.map((kind) => [
      kind,
      ...targets.flatMap((t) => { const r = cli[t.name].runs[kind]; return [String(r.wallMs), fmt(r.mtoks, 2), String(r.maxRssMB ?? '-'), fmt(r.cpuS ?? NaN, 2)]; }),
    ])));
    log(table(['', ...targets.map((t) => t.name)], [
      ['CLI startup (1-line input), ms', ...targets.map((t) => String(cli[t.name].startupMs))],
      ['CLI steady state (wall − startup), Mtok/s', ...targets.map((t) => fmt(cli[t.name].steadyMtoks, 2))],
      ['CLI speed / read floor', ...targets.map((t) => fmt(cli[t.name].ratios.cliOverReadFloor, 3))],
      ['CLI speed / parse floor', ...targets.map((t) => fmt(cli[t.name].ratios.cliOverParseFloor, 3))],
      ['CLI speed / parse+write floor', ...targets.map((t) => fmt(cli[t.name].ratios.cliOverWriteFloor, 3))],
      ['target 20 Mtok/s met', ...targets.map((t) => (cli[t.name].runs['tagmask mask (CLI)'].mtoks >= 20 ? 'yes' : `no (${fmt(cli[t.name].runs['tagmask mask (CLI)'].mtoks / 20, 2)} of it)`))],
    ]));
    results.cli = cli;

    if (config.stages) {
      const stages: Record<string, unknown> = {};
      for (const target of targets) stages[target.name] = stagesBench(target);
      log('\nCLI stages in one process (bench/stages.ts), wall ms: cold = first pass in a fresh process (what the CLI pays), warm = best later pass:');
      type St = { stageMs: Record<string, number>; coldStageMs: Record<string, number>; coldLoopMs: number; loopMs: number; jsonParseMs: number; runRolloutsMs: number; openMs: number };
      const first = stages[targets[0].name] as St;
      const stageNames = Object.keys(first.stageMs);
      const cell = (x: number, total: number) => [fmt(x, 0), `${fmt((100 * x) / total)}%`];
      log(table(['stage', ...targets.flatMap((t) => [`${t.name} cold`, 'share', 'warm', 'share'])], [
        ...stageNames.map((stage) => [stage, ...targets.flatMap((t) => {
          const x = stages[t.name] as St;
          return [...cell(x.coldStageMs[stage], x.coldLoopMs), ...cell(x.stageMs[stage], x.loopMs)];
        })]),
        ['= loop', ...targets.flatMap((t) => { const x = stages[t.name] as St; return [fmt(x.coldLoopMs, 0), '', fmt(x.loopMs, 0), '']; })],
        ['  of parse: JSON.parse alone', ...targets.flatMap((t) => { const x = stages[t.name] as St; return ['', '', fmt(x.jsonParseMs, 0), '']; })],
        ['runRollouts itself', ...targets.flatMap((t) => { const x = stages[t.name] as St; return ['', '', fmt(x.runRolloutsMs, 0), '']; })],
        ['MaskerPool.open (warm cache)', ...targets.flatMap((t) => { const x = stages[t.name] as St; return [fmt(x.openMs, 0), '', '', '']; })],
      ]));
      results.stages = stages;
    }
  }

  (results.machine as Record<string, unknown>).loadavgAtEnd = loadavg();
  writeFileSync(config.out, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nload average at end: ${loadavg()} (on ${facts.cores} cores; above that, other processes competed for the CPU and wall-clock figures are pessimistic)`);
  log(`wrote ${config.out}`);
}

await main();
