/**
 * The proof: a tagmask mask is trusted only where it equals an independent one, either the mask of the
 * transition merge (tinker's `trajectory_to_data`) or a mask a rollout brings from its framework.
 * Comparisons are made in the reference's frame: the merge's mask is in target space (`mask[i]` belongs
 * to `tokens[i + 1]`), so tagmask's mask is shifted the same way before comparing.
 */
import type { Masker, MaskResult } from './masker.ts';
import type { OptionValues } from './scan/bind.ts';
import { auditExtension, trajectoryToData, type Trajectory } from './merge.ts';
import { textOf, type ByteTable } from './tokenizer/table.ts';

export type DisagreementClass = 'mask-mismatch' | 'straddling-token';

/**
 * What a disagreement means for training, read from the side under audit: given 1 where the protocol
 * says 0 puts gradient on text the model never sampled; given 0 where it says 1 wastes the model's tokens.
 */
export type Direction = 'trains on environment text' | 'leaves model tokens untrained';

export const directionOf = (given: number, protocol: number): Direction =>
  given === 1 && protocol === 0 ? 'trains on environment text' : 'leaves model tokens untrained';

/**
 * Which mask a comparison reads: `tokens` (one value per token) or `targets` (one shorter, `mask[i]`
 * belongs to `tokens[i + 1]`, the way tinker datums and next-token losses index it).
 */
export type Frame = 'tokens' | 'targets';

export const frameOf = (maskLength: number, tokenCount: number): Frame => (maskLength === tokenCount ? 'tokens' : 'targets');

export interface Disagreement {
  class: DisagreementClass;
  /** Token range in the compared stream (not target space), end exclusive. */
  start: number;
  end: number;
  /** The mask under audit on the run (a framework's, the construction's, the merge's), and tagmask's. */
  given: 0 | 1;
  protocol: 0 | 1;
  direction: Direction;
  /** Decoded text: a little before, the run itself, a little after. */
  before: string;
  text: string;
  after: string;
}

const CONTEXT_TOKENS = 4;

/**
 * Maximal runs where the mask under audit (`given`) and tagmask's disagree. `shift` = 1 when `given` is
 * in target space (one shorter, `given[i]` for token i + 1).
 */
export function compareMasks(table: ByteTable, tokens: ArrayLike<number>, given: ArrayLike<number>, result: MaskResult, shift = 0): Disagreement[] {
  const straddles = new Set(result.diagnostics.filter((item) => item.code === 'straddling-token').map((item) => item.token));
  const runs: Disagreement[] = [];
  for (let i = shift; i < tokens.length; i++) {
    const want = given[i - shift] ? 1 : 0;
    const got = result.mask[i] ? 1 : 0;
    if (want === got) continue;
    let end = i + 1;
    while (end < tokens.length && (given[end - shift] ? 1 : 0) === want && (result.mask[end] ? 1 : 0) === got) end++;
    let straddling = true;
    for (let t = i; t < end; t++) if (!straddles.has(t)) straddling = false;
    runs.push({
      class: straddling ? 'straddling-token' : 'mask-mismatch',
      start: i,
      end,
      given: want,
      protocol: got,
      direction: directionOf(want, got),
      before: textOf(table, tokens, Math.max(0, i - CONTEXT_TOKENS), i),
      text: textOf(table, tokens, i, end),
      after: textOf(table, tokens, end, Math.min(tokens.length, end + CONTEXT_TOKENS)),
    });
    i = end - 1;
  }
  return runs;
}

export interface DatumVerdict {
  datum: number;
  /** Transitions [first, end) merged into this datum. */
  transitions: [number, number];
  tokens: number;
  agree: boolean;
  disagreements: Disagreement[];
}

export interface SplitReport {
  transition: number;
  /** First token index where the new observation departs from the sequence so far. */
  position: number;
  expected: string;
  actual: string;
}

export interface TrajectoryVerdict {
  id: unknown;
  agree: boolean;
  /** Agreeing target tokens out of all target tokens. */
  agreeing: number;
  total: number;
  datums: DatumVerdict[];
  /** Non-extensions: each a new datum, reported as `split`, never as a mismatch. */
  splits: SplitReport[];
  cost: { trainedTokens: number; mergedTokens: number };
}

/** What a report needs of one datum: its token stream, the merge's mask (target space) and tagmask's result. */
export interface DatumSeen { datum: number; tokens: Uint32Array; mask: Uint8Array; result: MaskResult; disagreements: Disagreement[] }

/**
 * Merge a trajectory, run the masker over every datum (its first observation is the prompt), compare.
 * `seeDatum` is called with each datum's stream and masks (for the HTML report).
 */
export function checkTrajectory(masker: Masker, table: ByteTable, id: unknown, trajectory: Trajectory, advantage = 1, seeDatum?: (seen: DatumSeen) => void): TrajectoryVerdict {
  const data = trajectoryToData(trajectory, advantage, { missingLogprobs: 'zero' });
  const audit = auditExtension(trajectory);
  let agreeing = 0;
  let total = 0;
  const datums = data.map((datum, index): DatumVerdict => {
    const stream = datum.sequence;
    const result = masker.mask(stream, { promptLength: datum.firstObservationLength });
    const disagreements = compareMasks(table, stream, datum.mask, result, 1);
    seeDatum?.({ datum: index, tokens: stream, mask: datum.mask, result, disagreements });
    const wrong = disagreements.reduce((sum, run) => sum + run.end - run.start, 0);
    total += datum.mask.length;
    agreeing += datum.mask.length - wrong;
    return { datum: index, transitions: [datum.transitionStart, datum.transitionEnd], tokens: stream.length, agree: disagreements.length === 0, disagreements };
  });
  const splits = audit.splits.map((split) => ({
    transition: split.transition,
    position: split.position,
    expected: textOf(table, split.expected.filter((token) => token < table.size)),
    actual: textOf(table, split.actual.filter((token) => token < table.size)),
  }));
  return { id, agree: datums.every((datum) => datum.agree), agreeing, total, datums, splits, cost: audit.cost };
}

/** A sample suite (src/suites.ts reads it from suite.json): a grammar, a tokenizer and its data files. */
export interface Suite {
  name: string;
  dir: string;
  grammar: string;
  tokenizer: string;
  options: OptionValues;
  rollouts?: string;
  retokenized?: string;
  trajectories?: string;
}

export interface RolloutVerdict { id: unknown; tokens: number; disagreements: Disagreement[]; straddles: number; error?: string }

export interface SuiteVerdict {
  suite: Suite;
  rollouts: RolloutVerdict[];
  retokenized: RolloutVerdict[];
  trajectories: TrajectoryVerdict[];
  errors: string[];
}

export function suitePassed(verdict: SuiteVerdict): boolean {
  return verdict.errors.length === 0
    && verdict.rollouts.every((item) => item.disagreements.length === 0)
    && verdict.trajectories.every((item) => item.agree);
}
