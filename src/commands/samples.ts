/** `tagmask samples` (what `npm start` runs): mask each suite's rollouts into a folder, then prove it. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandSpec } from './args.ts';
import { MaskerPool } from '../masker.ts';
import { runRollouts } from '../run.ts';
import { proveSuite } from '../suites.ts';
import { suitePassed, type Suite } from '../conformance.ts';
import { formatRunSummary, formatSuite } from '../report/text.ts';
import { OUTPUT, out, suitesToRun } from './shared.ts';

/** `tagmask samples`: mask each suite's rollouts into out/, then prove it. */
async function maskSamples(suites: Suite[], outDir: string, log: (line: string) => void): Promise<boolean> {
  let passed = true;
  let failedSuites = 0;
  mkdirSync(outDir, { recursive: true });
  for (const suite of suites) {
    const pool = await MaskerPool.open(suite.grammar, suite.tokenizer, suite.options);
    if (suite.rollouts) {
      const output = join(outDir, `${suite.name}.masks.jsonl`);
      const started = performance.now();
      const summary = await runRollouts(pool, { input: suite.rollouts, output, log });
      log(`${suite.name}: ${formatRunSummary(summary, 'mask')} → ${output} in ${(performance.now() - started).toFixed(0)} ms`);
      if (summary.failed) passed = false;
    }
    const verdict = await proveSuite(suite, pool);
    log(formatSuite(verdict));
    if (!suitePassed(verdict)) { passed = false; failedSuites++; }
  }
  log(passed ? `\n${suites.length} suites masked into ${outDir}/ and proved: every mask agrees with its construction and with the merge`
    : `\n${failedSuites} of ${suites.length} suites disagree (see ✖ above)`);
  return passed;
}


export const samples: CommandSpec = {
  name: 'samples',
  summary: 'mask the bundled samples (or the suites given) into a folder and prove them',
  positionals: '[SUITE…]',
  maxPositionals: Infinity,
  flags: { output: { ...OUTPUT, value: 'DIR', default: 'out', help: 'the folder for the masks' } },
  examples: ['tagmask samples', 'tagmask samples samples/search-r1-qwen3 -o /tmp/masks'],
  async run(args) {
    return (await maskSamples(suitesToRun(args.positionals), args.string('output')!, out)) ? 0 : 1;
  },
};
