/**
 * `tagmask detect` and `--grammar auto`: read rollouts from a file (any input and shape `mask` reads, through
 * src/io/records.ts), judge every bundled grammar on them (src/detect.ts), and name the one that fits.
 */
import { statSync } from 'node:fs';
import { readRollouts } from '../io/records.ts';
import { tokenizeRollout } from '../io/prepare.ts';
import type { ShapeName } from '../io/shapes.ts';
import { detectGrammar, detectionSentence, type Detection, type DetectRollout } from '../detect.ts';
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
        rollouts.push({ tokens: Array.from(rollout.tokens), promptLength: rollout.promptLength >= 0 ? rollout.promptLength : undefined });
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
