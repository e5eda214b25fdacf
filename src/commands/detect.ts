/**
 * `tagmask detect` and `--grammar auto`: read rollouts from a file, judge every bundled grammar on them
 * (src/detect.ts), and name the one that fits.
 */
import { statSync } from 'node:fs';
import { readJsonl } from '../io/jsonl.ts';
import { readRolloutLine } from '../io/rollout.ts';
import { detectGrammar, detectionSentence, type Detection, type DetectRollout } from '../detect.ts';
import type { LoadedTokenizer } from '../tokenizer/load.ts';

/** How many rollouts detection reads by default: the protocol shows in the first few hundred. */
export const DETECT_LIMIT = 1000;

export interface FileDetection { detection: Detection; unreadable: number }

export function detectFile(input: string, tokenizer: LoadedTokenizer, limit = DETECT_LIMIT): FileDetection {
  const rollouts: DetectRollout[] = [];
  let unreadable = 0;
  for (const line of readJsonl(input)) {
    if (rollouts.length >= limit) break;
    try {
      const rollout = readRolloutLine(line.text);
      // prompt_length −1 means "find it"; one given (or verl's prompt_ids) is the rollout's own.
      rollouts.push({ tokens: Array.from(rollout.tokens), promptLength: rollout.promptLength >= 0 ? rollout.promptLength : undefined });
    } catch {
      unreadable++;
    }
  }
  return { detection: detectGrammar(rollouts, tokenizer.table), unreadable };
}

/**
 * `--grammar auto`: the verdict for the whole file, said on stderr. Throws (a set-up error, exit 2) when no
 * grammar or more than one fits, or when the input is stdin (it would have to be read twice).
 */
export function autoGrammar(input: string, tokenizer: LoadedTokenizer, log: (line: string) => void): string {
  if (input === '-') throw new Error('--grammar auto reads the rollouts twice (once to detect, once to mask): give a file, not stdin');
  // A pipe (`<(cat f)`, a FIFO) or a device would be drained by detection and masked empty: refuse it.
  const stat = statSync(input, { throwIfNoEntry: false });
  if (stat && !stat.isFile()) {
    const kind = stat.isFIFO() ? 'a pipe' : stat.isDirectory() ? 'a folder' : stat.isSocket() ? 'a socket' : 'a device';
    throw new Error(`--grammar auto reads the rollouts twice (once to detect, once to mask): ${input} is ${kind}, which can be read only once; save it to a file, or name the grammar (tagmask detect shows which)`);
  }
  const { detection } = detectFile(input, tokenizer);
  const sentence = detectionSentence(detection);
  if (!detection.verdict) throw new Error(`--grammar auto: ${sentence} (tagmask detect --tokenizer … ${input} shows the evidence)`);
  log(`--grammar auto: ${sentence}`);
  return detection.verdict;
}
