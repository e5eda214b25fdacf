/**
 * The proof: a tagmask mask is trusted only where it equals an independent one, either the mask of the
 * transition merge (tinker's `trajectory_to_data`) or a mask a rollout brings from its framework.
 * Comparisons are made in the reference's frame: the merge's mask is in target space (`mask[i]` belongs
 * to `tokens[i + 1]`), so tagmask's mask is shifted the same way before comparing.
 */
import type { Masker, MaskResult } from './masker.ts';
import type { OptionValues } from './scan/bind.ts';
import { auditExtension, trajectoryToData, type Trajectory } from './merge.ts';
import { SPECIAL, pieceOf, textOf, type ByteTable } from './tokenizer/table.ts';

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
  /** Which parts of the protocol the run's tokens are, in order (from tagmask's spans). */
  parts: Part[];
  /** Decoded text: a little before, the run itself, a little after. */
  before: string;
  text: string;
  after: string;
}

const CONTEXT_TOKENS = 4;

/**
 * A part of the protocol, named in a user's words: what a disagreeing run's tokens are.
 * `prompt`, `header` (the template's role header / generation prompt), `stop-token` (end-of-turn or stop
 * token), `newline-after-stop` (the template's newline after it), `template-think` (an empty think block or
 * prefill a template writes), `environment-reply` (a tool response or other environment reply), `padding`,
 * `model-text` (what the model sampled), `truncated-turn` (a last turn cut before its stop token).
 */
export type PartCode = 'prompt' | 'header' | 'stop-token' | 'newline-after-stop' | 'template-think' | 'environment-reply' | 'padding' | 'model-text' | 'truncated-turn';

export interface Part { code: PartCode; words: string; start: number; end: number }

const THINK_BLOCK = /^\s*<think>\s*(<\/think>\s*)?$/;
const isSpecial = (table: ByteTable, id: number) => id < table.size && (table.flags[id] & SPECIAL) !== 0;
const pieceText = (table: ByteTable, id: number) => (id < table.size ? Buffer.from(pieceOf(table, id)).toString('utf8') : '');

/** The part of tokens [start, end), all inside `span`, of tagmask's reading. */
function partOfPiece(table: ByteTable, tokens: ArrayLike<number>, result: MaskResult, span: MaskResult['spans'][number], start: number, end: number): Omit<Part, 'start' | 'end'> {
  const text = textOf(table, tokens, start, end);
  let allSpecial = true;
  for (let i = start; i < end; i++) if (!isSpecial(table, tokens[i])) allSpecial = false;
  const previous = start > 0 ? tokens[start - 1] : -1;
  // An empty think block or a prefill: the template's where tagmask reads it as observation; an empty block the model may have written.
  if (THINK_BLOCK.test(text) && (span.role === 'observation' || text.includes('</think>'))) return { code: 'template-think', words: `the think block ${JSON.stringify(text)} (a template's empty block or prefill, or the model's own)` };
  if (span.tag === 'trailing') {
    const firstOfTrailing = start === span.start && allSpecial && end - start === 1 && start > 0;
    return firstOfTrailing ? { code: 'stop-token', words: `the stop token ${JSON.stringify(text)}` } : { code: 'padding', words: 'padding' };
  }
  if (!text.trim() && previous >= 0 && isSpecial(table, previous)) {
    return { code: 'newline-after-stop', words: `the template's ${JSON.stringify(text)} after ${JSON.stringify(pieceText(table, previous))}` };
  }
  if (allSpecial && span.role === 'action' && end === span.end) return { code: 'stop-token', words: `the end-of-turn token ${JSON.stringify(text)}` };
  const header = isSpecial(table, tokens[start]) && /^[^\n]*(assistant|model)/i.test(text) && end - start <= 12 && (end === span.end || span.role === 'action');
  if (span.tag === 'prompt') return header && end === span.end ? { code: 'header', words: `the template's header (generation prompt) ${JSON.stringify(text)}` } : { code: 'prompt', words: 'the prompt' };
  if (span.role === 'observation') {
    if (header && end === span.end) return { code: 'header', words: `the template's header ${JSON.stringify(text)}` };
    return { code: 'environment-reply', words: `the environment's reply (${span.tag})` };
  }
  // The model's text: a last turn that reaches the end of the stream (or its padding) without a stop token was cut.
  const last = result.spans.findIndex((item) => item === span);
  const rest = result.spans.slice(last + 1);
  if (end === span.end && rest.every((item) => item.tag === 'trailing') && !isSpecial(table, tokens[span.end - 1])) {
    return { code: 'truncated-turn', words: `the truncated last turn (${span.tag}: cut before its stop token)` };
  }
  return { code: 'model-text', words: `the model's text (${span.tag})` };
}

/**
 * Where a prompt or reply span's closing template text begins: the role header (from the last special token
 * before "assistant"/"model" near its end), then any think block the template writes after it.
 */
function closingCuts(table: ByteTable, tokens: ArrayLike<number>, span: MaskResult['spans'][number]): number[] {
  const cuts: number[] = [];
  for (let k = span.end - 1; k >= Math.max(span.start, span.end - 12); k--) {
    if (!isSpecial(table, tokens[k])) continue;
    const tail = textOf(table, tokens, k, span.end);
    if (/^[^\n]*(assistant|model)/i.test(tail)) {
      if (k > span.start) cuts.push(k);
      for (let t = k + 1; t < span.end; t++) if (/^<think>/.test(pieceText(table, tokens[t]))) { cuts.push(t); break; }
      break;
    }
  }
  return cuts;
}

/** The parts of run [start, end), split where tagmask's spans change and merged where the part repeats. */
export function partsOf(table: ByteTable, tokens: ArrayLike<number>, result: MaskResult, start: number, end: number): Part[] {
  const parts: Part[] = [];
  const push = (span: MaskResult['spans'][number], from: number, to: number) => {
    if (from >= to) return;
    const part = partOfPiece(table, tokens, result, span, from, to);
    const previous = parts[parts.length - 1];
    if (previous && previous.code === part.code && previous.end === from && (part.code === 'prompt' || part.code === 'padding' || part.code === 'model-text' || part.code === 'environment-reply')) {
      previous.end = to;
      if (previous.words !== part.words) previous.words = part.code === 'environment-reply' ? "the environment's replies" : part.code === 'model-text' ? "the model's text" : previous.words;
    } else parts.push({ ...part, start: from, end: to });
  };
  for (const span of result.spans) {
    if (span.end <= start || span.start >= end) continue;
    const from = Math.max(start, span.start);
    const to = Math.min(end, span.end);
    if (span.role !== 'observation' || span.tag === 'trailing') { push(span, from, to); continue; }
    // A reply or the prompt: the template's newline after a stop token, the body, the closing header and think block.
    const cuts = new Set<number>();
    if (span.start > 0 && isSpecial(table, tokens[span.start - 1]) && !pieceText(table, tokens[span.start]).trim() && span.end > span.start + 1) cuts.add(span.start + 1);
    for (const cut of closingCuts(table, tokens, span)) cuts.add(cut);
    let at = from;
    for (const cut of [...cuts].sort((a, b) => a - b)) {
      if (cut <= at || cut >= to) continue;
      push(span, at, cut);
      at = cut;
    }
    push(span, at, to);
  }
  return parts;
}

/** The parts in words, the largest three named: "the prompt, the environment's reply (information) and padding". */
export function partsInWords(parts: Part[]): string {
  const names = [...new Set(parts.map((part) => part.words))];
  if (names.length <= 1) return names[0] ?? 'tokens';
  const shown = names.slice(0, 3);
  const more = names.length > 3 ? ` and ${names.length - 3} more part(s)` : '';
  return `${shown.slice(0, -1).join(', ')}${more ? `, ${shown.at(-1)}` : ` and ${shown.at(-1)}`}${more}`;
}

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
      parts: partsOf(table, tokens, result, i, end),
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
