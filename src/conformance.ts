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
 * says 0 puts gradient on tokens the model did not sample (the environment's replies, but also the template's
 * headers and newlines, padding, the prompt: `parts` names which); given 0 where it says 1 wastes the model's tokens.
 */
export type Direction = 'trains tokens the model did not sample' | 'leaves model tokens untrained';

export const directionOf = (given: number, protocol: number): Direction =>
  given === 1 && protocol === 0 ? 'trains tokens the model did not sample' : 'leaves model tokens untrained';

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
  /**
   * Where the stream departs from the template and that departure decides how the run's tokens are read
   * (verl#3720: no `\n` after `<|im_end|>`, so no reply opens and the rest is nobody's): the diagnostic's code,
   * token and words. Absent when the run sits where the stream follows the template.
   */
  cause?: Cause;
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
 * `model-text` (what the model sampled), `truncated-turn` (a last turn cut before its stop token),
 * `after-departure` (text after the stream departs from the template: whose it is cannot be told),
 * `history-turn` (an earlier assistant turn inside a given prompt: re-rendered history, not sampled ids).
 */
export type PartCode = 'prompt' | 'header' | 'stop-token' | 'newline-after-stop' | 'template-think' | 'environment-reply' | 'padding' | 'model-text' | 'truncated-turn' | 'after-departure' | 'history-turn';

/** A departure from the template that decides how a disagreeing run is read: a diagnostic, in words. */
export interface Cause { code: string; token: number; words: string }

/** Diagnostics that say the stream departs from the template, so what follows (or the span they sit in) is read otherwise. */
const DEPARTURES = new Set(['missing-reply', 'reply-in-reply', 'unclosed-reply', 'text-after-end', 'no-prompt-end']);

/**
 * The departure that decides how tokens from `start` are read: the last departure diagnostic that sits in the
 * span holding `start`, or whose token opens that span (the rest of a stream read as nobody's after a
 * missing reply begins at the handover's token).
 */
export function causeOf(table: ByteTable, tokens: ArrayLike<number>, result: MaskResult, start: number): Cause | undefined {
  const span = result.spans.find((item) => item.start <= start && start < item.end);
  if (!span) return undefined;
  let found: Cause | undefined;
  for (const item of result.diagnostics) {
    if (!DEPARTURES.has(item.code)) continue;
    const inSpan = item.token >= span.start && item.token < span.end;
    const opens = span.start === item.token || span.start === item.token + 1;
    if (item.token <= Math.max(start, span.end - 1) && (inSpan || opens)) found = { code: item.code, token: item.token, words: item.message };
  }
  // A stop token followed straight by the next special token: the template's separator between them is missing (verl#3720).
  const at = found?.token ?? -1;
  if (found?.code === 'missing-reply' && at > 0 && at < tokens.length && isSpecial(table, tokens[at - 1]) && isSpecial(table, tokens[at])) {
    found.words += `; ${JSON.stringify(pieceText(table, tokens[at]))} follows ${JSON.stringify(pieceText(table, tokens[at - 1]))} directly: is the template's separator after the stop token (Qwen's "\\n") missing from the stream, as in verl#3720?`;
  }
  return found;
}

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
  // The model's text: a last turn that reaches the end of the stream (or its padding) without a stop token was cut.
  const cut = span.role === 'action' ? truncatedTurnStart(table, tokens, result) : -1;
  if (cut >= 0 && start >= cut) return { code: 'truncated-turn', words: 'the truncated last turn (cut before its stop token)' };
  // An empty think block or a prefill: the template's where tagmask reads it as observation; an empty block the model may have written.
  if (THINK_BLOCK.test(text) && (span.role === 'observation' || text.includes('</think>'))) return { code: 'template-think', words: `the think block ${JSON.stringify(text)} (a template's empty block or prefill, or the model's own)` };
  if (span.tag === 'trailing') {
    // After a missing reply the rest of the stream is nobody's: not padding, text the template does not explain.
    const departed = result.diagnostics.some((item) => item.code === 'missing-reply' && (item.token === span.start || item.token + 1 === span.start));
    if (departed && !(start === span.start && allSpecial && end - start === 1)) return { code: 'after-departure', words: 'text after the stream departs from the template' };
    // The first token of the closing run is the model's stop token when the model's text runs into it (a
    // secondary EOS, TRL#7039); after an end-of-turn token it is padding.
    const firstOfTrailing = start === span.start && allSpecial && end - start === 1 && start > 0 && !isSpecial(table, tokens[start - 1]);
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
  return { code: 'model-text', words: `the model's text (${span.tag})` };
}

/**
 * Where the model's last turn begins when it was cut: the stream (before its padding) ends in the model's text
 * on a token that is no stop token. The turn is every action span after the last prompt or reply. -1 when the
 * last turn ended (or the stream ends on the environment's text).
 */
export function truncatedTurnStart(table: ByteTable, tokens: ArrayLike<number>, result: MaskResult): number {
  const spans = result.spans;
  let k = spans.length - 1;
  while (k >= 0 && spans[k].tag === 'trailing') k--;
  if (k < 0 || spans[k].role !== 'action' || isSpecial(table, tokens[spans[k].end - 1])) return -1;
  // A closing tag ends a turn too (Search-R1's `</answer>` ends the episode without a stop token); a think block's never does.
  if (/<\/(?!think>)[A-Za-z_][\w-]*>\s*$/.test(textOf(table, tokens, Math.max(spans[k].start, spans[k].end - 8), spans[k].end))) return -1;
  while (k > 0 && spans[k - 1].role === 'action') k--;
  return spans[k].start;
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
    if (previous && previous.code === part.code && previous.end === from && (part.code === 'prompt' || part.code === 'padding' || part.code === 'model-text' || part.code === 'environment-reply' || part.code === 'truncated-turn' || part.code === 'after-departure')) {
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
    const history = span.tag === 'prompt' ? historyTurns(table, tokens, span) : [];
    for (const turn of history) { cuts.add(turn.header); cuts.add(turn.start); cuts.add(turn.end); }
    const pushPiece = (from: number, to: number) => {
      const turn = history.find((item) => item.header <= from && to <= item.end);
      if (!turn) return push(span, from, to);
      const part = from >= turn.start
        ? { code: 'history-turn' as const, words: 'an earlier assistant turn, re-rendered into the prompt' }
        : { code: 'header' as const, words: `the template's header ${JSON.stringify(textOf(table, tokens, from, to))}` };
      const previous = parts[parts.length - 1];
      if (previous && previous.code === part.code && previous.end === from && part.code === 'history-turn') previous.end = to;
      else parts.push({ ...part, start: from, end: to });
    };
    let at = from;
    for (const cut of [...cuts].sort((a, b) => a - b)) {
      if (cut <= at || cut >= to) continue;
      pushPiece(at, cut);
      at = cut;
    }
    pushPiece(at, to);
  }
  return parts;
}

/**
 * The assistant turns inside a prompt (a history re-rendered into it, prime-rl#1334, verl#6854): from each
 * assistant header (a special token, then "assistant"/"model" on its line) to the end-of-turn token that closes
 * the turn. `header` is where the header begins, `start` where the turn's text does. The prompt's own closing
 * header (the generation prompt) opens no turn.
 */
function historyTurns(table: ByteTable, tokens: ArrayLike<number>, span: MaskResult['spans'][number]): Array<{ header: number; start: number; end: number }> {
  const turns: Array<{ header: number; start: number; end: number }> = [];
  for (let k = span.start; k < span.end; k++) {
    if (!isSpecial(table, tokens[k])) continue;
    // The header runs to its line's end (at most 6 tokens: `<|start_header_id|>assistant<|end_header_id|>\n\n`).
    let bodyStart = -1;
    for (let t = k + 1; t < Math.min(span.end, k + 7); t++) {
      if (pieceText(table, tokens[t]).includes('\n')) { bodyStart = t + 1; break; }
    }
    if (bodyStart < 0 || !/^[^\n]*(assistant|model)[^\n]*\n/i.test(textOf(table, tokens, k, bodyStart))) continue;
    let end = bodyStart;
    while (end < span.end && !isSpecial(table, tokens[end])) end++;
    if (end >= span.end) break; // no end-of-turn before the prompt ends: the generation prompt
    turns.push({ header: k, start: bodyStart, end: end + 1 });
    k = end;
  }
  return turns;
}

/** The parts in words, the largest three named: "the prompt, the environment's reply (information) and padding". */
export function partsInWords(parts: Part[]): string {
  const names = [...new Set(parts.map((part) => part.words))];
  if (names.length <= 1) return names[0] ?? 'tokens';
  const shown = names.slice(0, 3);
  const more = names.length > 3 ? ` and ${names.length - 3} more part(s)` : '';
  return `${shown.slice(0, -1).join(', ')}${more ? `, ${shown.at(-1)}` : ` and ${shown.at(-1)}`}${more}`;
}

const withCause = (table: ByteTable, tokens: ArrayLike<number>, result: MaskResult, start: number): { cause?: Cause } => {
  const cause = causeOf(table, tokens, result, start);
  return cause ? { cause } : {};
};

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
      ...withCause(table, tokens, result, i),
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
