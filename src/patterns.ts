/**
 * The shape of a whole mask under audit (issue 17 item 2): when every disagreement of a rollout comes from
 * one known bug, name it once (inverted, all zero, all one, shifted a token, runs to the end, span mask,
 * every stop token untrained, drift after re-tokenization) rather than leaving a user to infer it from a dozen
 * runs; a deliberate policy (the truncated last turn untrained) is named as one. Pure, on plain arrays, so it is
 * tested without a tokenizer.
 */

export type PatternCode = 'all-zero' | 'all-one' | 'stop-tokens-untrained' | 'shifted-early' | 'shifted-late' | 'span-mask' | 'runs-to-end' | 'inverted'
  | 'padding-trained' | 'truncated-untrained' | 'drift';

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
  'truncated-untrained': "truncated turn untrained: the last turn, cut before its stop token, is untrained (alone, or with the whole completion it ends), as TRL's mask_truncated_completions does: a policy, not a mask bug",
  'drift': 'drift after re-tokenization: every boundary of the protocol is there, in order, but moved a few tokens, by different amounts (a mask made for the sampled ids laid over re-encoded ones, SkyRL#123, TRL#5144)',
  'padding-trained': 'padding trained: the mask is 1 past the response, where attention_mask is 0 (verl#3805); the response itself agrees',
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
  /** Where the model's last turn begins when it was cut before its stop token (-1 or absent: it was not). */
  truncatedFrom?: number;
}

const bit = (value: number | undefined) => (value ? 1 : 0);

/** The one pattern the whole given mask follows, or undefined (a correct mask, or disagreements with no known shape). */
export function patternOf(input: PatternInput): Pattern | undefined {
  const { given, protocol, from, to, runs } = input;
  if (!runs.length || from >= to) return undefined;
  const every = (test: (i: number) => boolean) => { for (let i = from; i < to; i++) if (!test(i)) return false; return true; };
  const named = (code: PatternCode): Pattern => ({ code, words: PATTERN_WORDS[code] });
  // A policy before any bug: the cut last turn untrained, every token of it (TRL's mask_truncated_completions zeroes
  // the whole completion; others drop only the cut turn).
  const cut = input.truncatedFrom ?? -1;
  if (cut >= from && runs.every((run) => run.given === 0)) {
    const turnUntrained = every((i) => i < cut || bit(given[i]) === 0);
    const onlyTurn = runs.every((run) => run.start >= cut);
    if (turnUntrained && (onlyTurn || every((i) => bit(given[i]) === 0))) return named('truncated-untrained');
  }
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
  if (drifted(input)) return named('drift');
  return undefined;
}

/** How far a boundary may move and still be the same boundary, drifted. */
const MAX_DRIFT = 16;

/** The positions in [from, to) where a mask changes value, with the value it changes to (before `from` counts as 0). */
function changes(values: ArrayLike<number>, from: number, to: number): Array<{ at: number; to: number }> {
  const out: Array<{ at: number; to: number }> = [];
  let previous = 0;
  for (let i = from; i < to; i++) {
    const value = bit(values[i]);
    if (value !== previous) out.push({ at: i, to: value });
    previous = value;
  }
  return out;
}

/**
 * Drift after re-tokenization: the given mask has every boundary the protocol has, in the same order and the same
 * direction, each moved at most MAX_DRIFT tokens, the moves growing one way along the stream, not all by the same
 * amount (one amount is a shift). A bug
 * confined to one kind of part (every header trained, every newline after a stop token) moves boundaries too, by a
 * fixed part each time: runs all of one part are that part's bug, not drift.
 */
function drifted(input: PatternInput): boolean {
  const { given, protocol, from, to, runs } = input;
  if (runs.length < 2) return false;
  const codes = new Set(runs.flatMap((run) => (run.parts ?? []).map((part) => part.code)));
  if (codes.size < 2) return false;
  const want = changes(protocol, from, to);
  const got = changes(given, from, to);
  if (!want.length || want.length !== got.length) return false;
  const moves: number[] = [];
  for (let k = 0; k < want.length; k++) {
    if (want[k].to !== got[k].to || Math.abs(got[k].at - want[k].at) > MAX_DRIFT) return false;
    moves.push(got[k].at - want[k].at);
  }
  // Re-encoding merges (or splits) tokens as it goes: each merge moves every later boundary one more token the same
  // way, so the moves only grow, all one sign. Two unrelated bugs move boundaries both ways.
  const growing = moves.every((move, k) => move >= 0 && (k === 0 || move >= moves[k - 1]))
    || moves.every((move, k) => move <= 0 && (k === 0 || move <= moves[k - 1]));
  return growing && new Set(moves).size > 1;
}
