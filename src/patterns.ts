/**
 * The shape of a whole mask under audit (issue 17 item 2): when every disagreement of a rollout comes from
 * one known bug, name it once (inverted, all zero, all one, shifted a token, runs to the end, span mask,
 * every stop token untrained) rather than leaving a user to infer it from a dozen runs. Pure, on plain
 * arrays, so it is tested without a tokenizer. Drift after re-tokenization is not named here.
 */

export type PatternCode = 'all-zero' | 'all-one' | 'stop-tokens-untrained' | 'shifted-early' | 'shifted-late' | 'span-mask' | 'runs-to-end' | 'inverted';

export interface Pattern { code: PatternCode; words: string }

/** The words of each pattern: fixed per code, so a file's summary can count them. */
export const PATTERN_WORDS: Record<PatternCode, string> = {
  'all-zero': 'all zero: no token trained',
  'all-one': 'all one: every token trained',
  'stop-tokens-untrained': 'every stop token untrained: the disagreements are exactly the end-of-turn/stop tokens the model sampled',
  'shifted-early': 'shifted one token early: given[i] = protocol[i + 1], a target-frame mask (mask[i] for token i + 1) laid on the input tokens',
  'shifted-late': 'shifted one token late: given[i] = protocol[i - 1], an input-frame mask shifted once more, as if for targets read one token back',
  'span-mask': "span mask: 1 from the first to the last model token, the observations between included",
  'runs-to-end': 'runs to the end: 1 from the first model token to the end of the rollout',
  'inverted': "inverted: 1 - the protocol mask over the response (observations trained, the model's tokens not)",
};

export interface PatternInput {
  /** The mask under audit, one value per token of the stream (input frame); read only on [from, to). */
  given: ArrayLike<number>;
  /** tagmask's mask, one value per token of the stream. */
  protocol: ArrayLike<number>;
  /** The token positions the given mask covers, end exclusive. */
  from: number;
  to: number;
  /** The disagreements (token ranges in the stream), with the parts their tokens are. */
  runs: ReadonlyArray<{ start: number; end: number; given: number; parts?: ReadonlyArray<{ code: string }> }>;
  /** Positions of the stop / end-of-turn tokens the protocol trains, inside [from, to). */
  stops: ReadonlyArray<number>;
}

const bit = (value: number | undefined) => (value ? 1 : 0);

/** The one pattern the whole given mask follows, or undefined (a correct mask, or disagreements with no known shape). */
export function patternOf(input: PatternInput): Pattern | undefined {
  const { given, protocol, from, to, runs } = input;
  if (!runs.length || from >= to) return undefined;
  const every = (test: (i: number) => boolean) => { for (let i = from; i < to; i++) if (!test(i)) return false; return true; };
  const named = (code: PatternCode): Pattern => ({ code, words: PATTERN_WORDS[code] });
  if (every((i) => bit(given[i]) === 0)) return named('all-zero');
  if (every((i) => bit(given[i]) === 1)) return named('all-one');
  if (input.stops.length && runs.every((run) => run.given === 0 && run.parts?.length && run.parts.every((part) => part.code === 'stop-token'))) {
    const untrained = new Set(runs.flatMap((run) => Array.from({ length: run.end - run.start }, (_, k) => run.start + k)));
    if (untrained.size === input.stops.length && input.stops.every((stop) => untrained.has(stop))) return named('stop-tokens-untrained');
  }
  const last = protocol.length - 1;
  if (every((i) => i === last || bit(given[i]) === bit(protocol[i + 1]))) return named('shifted-early');
  if (every((i) => i === 0 || bit(given[i]) === bit(protocol[i - 1]))) return named('shifted-late');
  let first = -1;
  let final = -1;
  for (let i = from; i < to; i++) if (bit(protocol[i])) { if (first < 0) first = i; final = i; }
  if (first < 0) return undefined;
  if (every((i) => bit(given[i]) === (i >= first && i <= final ? 1 : 0))) return named('span-mask');
  if (every((i) => bit(given[i]) === (i >= first ? 1 : 0))) return named('runs-to-end');
  if (every((i) => i < first || bit(given[i]) === 1 - bit(protocol[i]))) return named('inverted');
  return undefined;
}
