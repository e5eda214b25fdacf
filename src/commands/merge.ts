/** `tagmask merge`: tinker's trajectory_to_data over a file of trajectories, splits reported (src/run.ts runMerge). */
import type { CommandSpec } from './args.ts';
import { announceStdin } from './terminal.ts';
import { runMerge } from '../run.ts';
import { loadTokenizer } from '../tokenizer/load.ts';
import { log, OUTPUT_ANY, TOKENIZER } from './shared.ts';

export const merge: CommandSpec = {
  name: 'merge',
  summary: 'merge tinker transitions into datums, as tinker\'s trajectory_to_data does, and report splits',
  positionals: '[IN.jsonl|-]',
  maxPositionals: 1,
  description: [
    'input lines  {"id", "transitions": [{"ob", "ac": {"tokens", "logprobs"}}…], "advantage"?}',
    'output lines one datum each: {"id", "datum", "tokens", "target_tokens", "mask", "advantages", …}',
    'splits (observations that stop extending the sequence) are reported on stderr, decoded with --tokenizer',
  ],
  flags: { tokenizer: { ...TOKENIZER, required: false, help: 'decode the tokens in split reports with this tokenizer' }, output: OUTPUT_ANY },
  examples: ['tagmask merge trajectories.jsonl -o datums.jsonl --tokenizer ./Qwen3-8B'],
  async run(args) {
    const tokenizer = args.string('tokenizer');
    const table = tokenizer ? (await loadTokenizer(tokenizer)).table : undefined;
    announceStdin(args.input(), 'merge', 'trajectories (JSONL)');
    return (await runMerge(args.input(), args.string('output'), table, log)) ? 1 : 0;
  },
};
