/**
 * Which bundled grammar do these rollouts speak? Evidence first: every grammar's literals (prompt end,
 * headers, tags, handovers, reply envelopes) are counted in the streams' bytes, and each grammar masks every
 * rollout. A grammar **fits** when it masks at least 75% of the rollouts cleanly (prompt end found or
 * `prompt_length` given, no error, no sign that the protocol is another one: `missing-reply`, `text-after-end`, `observation-tag-in-action`)
 * and at least one of its model- or environment-side literals occurs after the prompt. Among the grammars
 * that fit, one whose found literals are a strict subset of another's says less about the streams and gives
 * way (a Qwen3 tool-calling stream also fits `thinking`, but `qwen3-tools` explains its <tool_call> too).
 * Where two still fit, the verdict says so rather than guess.
 */
import { bundledGrammarNames, loadGrammar } from './grammar/load.ts';
import type { CompiledGrammar } from './grammar/compile.ts';
import { byteAutomaton } from './grammar/automata.ts';
import type { Grammar } from './grammar/schema.ts';
import { Masker, type Scanned } from './masker.ts';
import { severityOf } from './diagnostics.ts';
import type { Segments } from './scan/segments.ts';
import { bindTogether } from './scan/bind.ts';
import { KNOWN, SPECIAL, type ByteTable } from './tokenizer/table.ts';
import { declaredLiterals } from './grammar/check.ts';
import { buildScanView, sentinelOverflow, type ScanView } from './tokenizer/special.ts';

export interface DetectRollout { tokens: ArrayLike<number>; promptLength?: number }

export interface LiteralEvidence {
  literal: string;
  /** Where the grammar declares it (`handovers[0].after`, `tags.think.open`…). */
  paths: string[];
  /** Occurrences in all rollouts, and in how many rollouts. */
  count: number;
  rollouts: number;
}

export type Fit = 'fits' | 'partial' | 'no';

export interface CandidateVerdict {
  grammar: string;
  fit: Fit;
  /** Why, in a few words. */
  reason: string;
  rollouts: number;
  /** Rollouts whose prompt end was found, or that brought `prompt_length`. */
  promptFound: number;
  /** Rollouts with at least one action token. */
  withAction: number;
  /** Rollouts that could not be masked or got an error diagnostic. */
  withErrors: number;
  /** Rollouts where the stream departs from the grammar's protocol (missing-reply, text-after-end). */
  misfits: number;
  /**
   * Rollouts where the grammar saw the model break the protocol (observation-tag-in-action: the model wrote an
   * environment tag itself). Seeing a violation is evidence for the grammar, not against it: it stays in the race.
   */
  modelViolations: number;
  /** Rollouts with the prompt end, some action, no error and no departure. */
  clean: number;
  /** Special tokens this grammar trains that none of its model-side literals (tags, handovers, stop) holds. */
  unexplainedSpecial: { tokens: number; rollouts: number; examples: string[] };
  /** Share of all tokens this grammar trains. */
  actionShare: number;
  found: LiteralEvidence[];
  /** Declared literals that never occur. */
  missing: string[];
}

/** Why a fitting grammar gave way to another. */
export type Evidence = 'unexplained-special' | 'trains-observation' | 'fewer-markers';

export interface Outranked {
  grammar: string;
  by: string;
  evidence: Evidence;
  /** The evidence in words. */
  reason: string;
}

/** Two fitting grammars that each train tokens the other calls observation: neither may be preferred. */
export interface Dispute {
  grammars: [string, string];
  /** Tokens the first trains that the second calls observation or prompt, and the other way. */
  trains: [number, number];
  /** The second grammar does not fit, but finds every marker the first finds and these more. */
  unfit?: string;
  explains?: string[];
}

export interface Detection {
  /** The one grammar left standing among those that fit, if exactly one is. */
  verdict?: string;
  /** Every grammar that fits, the verdict first. */
  fitting: string[];
  /** Fitting grammars that gave way to another, with the evidence. */
  outranked: Outranked[];
  /** Grammars left standing that disagree both ways (an ambiguous verdict says which). */
  disputes: Dispute[];
  candidates: CandidateVerdict[];
  rollouts: number;
  /** Token ids outside the tokenizer's vocabulary: the tokenizer is probably not the one the rollouts used. */
  unknownIds: number;
}

/** Signs that the stream speaks another protocol: the environment's side departs from this grammar's. */
const MISFIT_CODES = new Set(['missing-reply', 'text-after-end']);
/** Signs that the model broke this grammar's protocol, which the grammar can only see if it is the stream's. */
const MODEL_VIOLATION_CODES = new Set(['observation-tag-in-action']);
/**
 * A grammar fits when at least this share of the rollouts mask cleanly: a file of real rollouts has a few
 * broken ones (a model writing after its answer, a reply cut without a budget), which say little about the
 * protocol; a wrong grammar fails on most.
 */
export const FIT_SHARE = 0.75;

/** The literals a grammar declares, by text, with where it declares them. Template-inserted optional text and padding are left out: they are not the protocol's markers. */
export function grammarLiterals(grammar: Grammar): Map<string, string[]> {
  const literals = new Map<string, string[]>();
  const add = (literal: string | undefined, path: string) => {
    if (!literal) return;
    const paths = literals.get(literal) ?? [];
    paths.push(path);
    literals.set(literal, paths);
  };
  grammar.prompt.ends_after.forEach((literal, i) => add(literal, `prompt.ends_after[${i}]`));
  grammar.headers.forEach((literal, i) => add(literal, `headers[${i}]`));
  for (const [name, tag] of Object.entries(grammar.tags)) {
    tag.open.forEach((literal, i) => add(literal, `tags.${name}.open${tag.open.length > 1 ? `[${i}]` : ''}`));
    tag.close.forEach((literal, i) => add(literal, `tags.${name}.close${tag.close.length > 1 ? `[${i}]` : ''}`));
  }
  grammar.handovers.forEach((handover, i) => {
    add(handover.after, `handovers[${i}].after`);
    handover.model_continues.forEach((literal, j) => add(literal, `handovers[${i}].model_continues[${j}]`));
  });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    add(reply.open, `replies.${name}.open`);
    add(reply.close, `replies.${name}.close`);
    add(reply.ends_before, `replies.${name}.ends_before`);
    add(reply.text, `replies.${name}.text`);
  }
  return literals;
}

/**
 * A rollout's bytes, from the tokenizer's byte table (ids outside it are counted and skipped), with where each
 * token starts, and where its special tokens are (few: each grammar asks whether it trains them).
 */
interface Stream { bytes: Buffer; starts: Int32Array; unknown: number; specials: Int32Array }

/**
 * Every rollout's bytes back to back in one buffer (rollout `r` is `all[base[r] .. base[r + 1]]`, and `streams[r]`
 * a view of it), so that the literals are searched once for all rollouts and all grammars (`hits`, filled by
 * `literalHits`), not once per literal per rollout per grammar.
 */
interface Streams {
  all: Buffer; base: Int32Array; streams: Stream[]; hits: Map<string, Int32Array>;
  /** The rollouts for maskBatch: their ids back to back, where each starts, each one's prompt length (-1: find it), and a mask for all. */
  ids: Uint32Array; tokenStarts: Uint32Array; promptLengths: Int32Array; mask: Uint8Array;
}

/** The rollouts' bytes, and where each of `literals` occurs in them. */
function streamsOf(table: ByteTable, rollouts: readonly DetectRollout[], literals: readonly string[]): Streams {
  // The per-token work is in small functions called once per rollout: V8 optimizes those after a few calls,
  // where one loop over every token of every rollout ran unoptimized until an on-stack replacement was compiled.
  const base = new Int32Array(rollouts.length + 1);
  const measured = rollouts.map((rollout) => measure(table, rollout.tokens));
  measured.forEach(({ starts }, r) => { base[r + 1] = base[r] + starts[starts.length - 1]; });
  const all = Buffer.allocUnsafe(base[rollouts.length]);
  const streams = rollouts.map((rollout, r): Stream => {
    copyPieces(table, rollout.tokens, all, base[r]);
    return { bytes: all.subarray(base[r], base[r + 1]), ...measured[r] };
  });
  const tokenStarts = new Uint32Array(rollouts.length + 1);
  rollouts.forEach((rollout, r) => { tokenStarts[r + 1] = tokenStarts[r] + rollout.tokens.length; });
  const ids = new Uint32Array(tokenStarts[rollouts.length]);
  rollouts.forEach((rollout, r) => ids.set(rollout.tokens, tokenStarts[r]));
  // A prompt length that is not a whole number of tokens within the rollout cannot be masked: the rollout counts
  // as an error (scanRollout refuses one past its end); none (or a negative one) means find the prompt's end.
  // So does one with an id that is not a whole number a Uint32Array holds as it is (which the scan would have
  // refused as unknown).
  const exact = (tokens: ArrayLike<number>) => tokens instanceof Uint32Array || Array.prototype.every.call(tokens, (id: number) => Number.isInteger(id) && id >= 0 && id <= 0xffffffff);
  const promptLengths = Int32Array.from(rollouts, ({ promptLength: p, tokens }) => (!exact(tokens) ? tokens.length + 1 : p === undefined || !(p >= 0) ? -1 : Number.isInteger(p) && p <= tokens.length ? p : tokens.length + 1));
  return { all, base, streams, hits: literalHits(all, literals, base), ids, tokenStarts, promptLengths, mask: new Uint8Array(ids.length) };
}

/** Where each token's bytes start (ids outside the table have none), how many such ids, and where the special tokens are. */
function measure(table: ByteTable, tokens: ArrayLike<number>): { starts: Int32Array; unknown: number; specials: Int32Array } {
  const { size, flags, offsets } = table;
  const starts = new Int32Array(tokens.length + 1);
  let unknown = 0;
  let specialCount = 0;
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i];
    const known = id < size && (flags[id] & KNOWN);
    if (!known) unknown++;
    if (id < size && flags[id] & SPECIAL) specialCount++;
    starts[i + 1] = starts[i] + (known ? offsets[id + 1] - offsets[id] : 0);
  }
  const specials = new Int32Array(specialCount);
  for (let i = 0, k = 0; k < specialCount; i++) if (tokens[i] < size && flags[tokens[i]] & SPECIAL) specials[k++] = i;
  return { starts, unknown, specials };
}

/** The tokens' bytes into `all` from `at`, byte by byte: pieces are a few bytes long, shorter than a subarray view and a set() call cost per token. */
function copyPieces(table: ByteTable, tokens: ArrayLike<number>, all: Buffer, at: number): void {
  const { size, flags, offsets, pieces } = table;
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i];
    if (!(id < size && (flags[id] & KNOWN))) continue;
    for (let p = offsets[id], end = offsets[id + 1]; p < end; p++) all[at++] = pieces[p];
  }
}

/**
 * Where each literal starts in `bytes`, every place, overlapping ones too, in one pass for all of them
 * (Aho–Corasick: a literal may be another's part, so each state also links to the longest literal ending there).
 * Each literal's places come out in increasing order. With `regions` (offsets, the first 0 and the last the
 * end), only places inside one region are found, each region scanned on its own.
 */
export function literalHits(bytes: Uint8Array, literals: readonly string[], regions: ArrayLike<number> = [0, bytes.length]): Map<string, Int32Array> {
  const encoded = literals.map((literal) => Buffer.from(literal, 'utf8'));
  const { delta, fail, ends, stateOf, order } = byteAutomaton(encoded);
  // The nearest state on the failure chain (itself excluded) that ends a literal, or -1.
  const output = new Int32Array(ends.length).fill(-1);
  for (const state of order) output[state] = ends[fail[state]] >= 0 ? fail[state] : output[fail[state]];
  const found: number[][] = literals.map(() => []);
  const lengths = Int32Array.from(encoded, (literal) => literal.length);
  for (let r = 0; r + 1 < regions.length; r++) scanRegion(bytes, regions[r], regions[r + 1], delta, ends, output, lengths, found);
  const hits = new Map<string, Int32Array>();
  // Two texts with the same bytes share the places found for the first.
  literals.forEach((literal, index) => hits.set(literal, Int32Array.from(stateOf[index] ? found[ends[stateOf[index]]] : [])));
  return hits;
}

function scanRegion(bytes: Uint8Array, from: number, to: number, delta: Int32Array, ends: Int32Array, output: Int32Array, lengths: Int32Array, found: number[][]): void {
  for (let i = from, state = 0; i < to; i++) {
    state = delta[state * 256 + bytes[i]];
    for (let at = ends[state] >= 0 ? state : output[state]; at >= 0; at = output[at]) {
      const index = ends[at];
      found[index].push(i + 1 - lengths[index]);
    }
  }
}

/**
 * Per rollout, how many times `literal` occurs in its bytes from `from[r]` (an offset in `all`) to its end,
 * counted one after the other without overlap, as repeated `indexOf(needle, last + needle.length)` would count.
 * Returns the total and the number of rollouts it occurs in.
 */
function occurrences(streams: Streams, literal: string, from: Int32Array): { count: number; rollouts: number } {
  const hits = streams.hits.get(literal)!;
  const length = Buffer.byteLength(literal, 'utf8');
  const { base } = streams;
  let count = 0;
  let rollouts = 0;
  let r = 0;
  let next = from.length ? from[0] : 0;
  let counted = -1;
  for (let k = 0; k < hits.length; k++) {
    const at = hits[k];
    if (at >= base[r + 1]) {
      while (at >= base[r + 1]) r++;
      next = from[r];
    }
    // Inside this rollout's region, whole, and after the last one counted.
    if (at < next || at + length > base[r + 1]) continue;
    count++;
    if (counted !== r) { rollouts++; counted = r; }
    next = at + length;
  }
  return { count, rollouts };
}

/** The model-side literals of a grammar: what the model itself may write (tags, handover literals, its continuations, stop tokens). */
function modelLiterals(grammar: Grammar): string[] {
  return [
    ...Object.values(grammar.tags).flatMap((tag) => [...tag.open, ...tag.close]),
    ...grammar.handovers.flatMap((handover) => [handover.after, ...handover.model_continues]),
    ...grammar.stop,
  ].filter((literal): literal is string => Boolean(literal));
}

/**
 * Each rollout as one grammar read it: its action runs and its trailing padding's runs (nobody's: neither side
 * of a comparison), as [start, end) token pairs. All rollouts' runs are packed in one array, so that the 18
 * grammars' thousands of readings are a few objects for the collector, not two arrays each.
 */
class Readings {
  runs = new Int32Array(1 << 12);
  used = 0;
  /** Per rollout: where its action runs start in `runs`, where its trailing runs start, where they end (-1: no reading, its prompt end not found). */
  readonly actionAt: Int32Array;
  readonly trailingAt: Int32Array;
  readonly endAt: Int32Array;
  constructor(rollouts: number) {
    this.actionAt = new Int32Array(rollouts).fill(-1);
    this.trailingAt = new Int32Array(rollouts);
    this.endAt = new Int32Array(rollouts);
  }
  has(r: number): boolean { return this.actionAt[r] >= 0; }
  /** Rollout `r` from its scan's segments: action where the state's mask value is 1, trailing where its kind is (as its spans would say). */
  add(r: number, segments: Segments, n: number, stateMask: Int8Array, states: ReadonlyArray<{ kind: string }>): void {
    this.actionAt[r] = this.used;
    this.addRuns(segments, n, (state) => stateMask[state] === 1);
    this.trailingAt[r] = this.used;
    this.addRuns(segments, n, (state) => states[state].kind === 'trailing');
    this.endAt[r] = this.used;
  }
  /** The non-empty segments whose state `take`s, touching ones joined. */
  private addRuns(segments: Segments, n: number, take: (state: number) => boolean): void {
    const first = this.used;
    const { count, starts, state } = segments;
    for (let j = 0; j < count; j++) {
      const start = starts[j];
      const end = j + 1 < count ? starts[j + 1] : n;
      if (end <= start || !take(state[j])) continue;
      if (this.used > first && this.runs[this.used - 1] === start) { this.runs[this.used - 1] = end; continue; }
      if (this.used + 2 > this.runs.length) { const grown = new Int32Array(this.runs.length * 2); grown.set(this.runs); this.runs = grown; }
      this.runs[this.used++] = start;
      this.runs[this.used++] = end;
    }
  }
}

interface Judged {
  verdict: CandidateVerdict;
  readings: Readings;
  /** Texts its template may insert after a prompt end, header or reply (an empty think block, a prefill), as bytes. */
  optional: Buffer[];
}

function judge(name: string, grammar: CompiledGrammar, table: ByteTable, rollouts: DetectRollout[], corpus: Streams, view: ScanView | undefined): Judged {
  const { streams } = corpus;
  const spec = grammar.grammar;
  const masker = new Masker(grammar, table, {}, view);
  const named = modelLiterals(spec);
  const decoder = new TextDecoder();
  const namedSpecial = new Map<number, boolean>();
  const isUnnamedSpecial = (id: number) => {
    if (!(id < table.size && table.flags[id] & SPECIAL)) return false;
    let known = namedSpecial.get(id);
    if (known === undefined) {
      const piece = decoder.decode(table.pieces.subarray(table.offsets[id], table.offsets[id + 1]));
      known = named.some((literal) => literal.includes(piece));
      namedSpecial.set(id, known);
    }
    return !known;
  };
  let promptFound = 0;
  let withAction = 0;
  let withErrors = 0;
  let misfits = 0;
  let modelViolations = 0;
  let clean = 0;
  let trained = 0;
  let tokens = 0;
  const unexplained = { tokens: 0, rollouts: 0, examples: [] as string[] };
  const readings = new Readings(rollouts.length);
  // Markers count only after this grammar's prompt end: a prompt quotes the tags it asks for (Search-R1's does).
  const afterPrompt = new Int32Array(rollouts.length);
  const { ids, tokenStarts, promptLengths, mask } = corpus;
  const { stateMask } = masker.bound;
  const { states } = grammar;
  // What one rollout's scan says, read straight off its segments (spans and messages are never built): the codes
  // it raised, its mask, its action and trailing runs, where its prompt ends.
  const read = (r: number, scanned: Scanned) => {
    const { segments } = scanned;
    const n = scanned.tokens.length;
    let prompt = true;
    let error = false;
    let misfit = false;
    let violation = false;
    // (`no-action`, which mask() adds when nothing is action, is a warning and neither kind of sign.)
    for (const record of segments.records) {
      if (record.code === 'no-prompt-end') prompt = false;
      if (severityOf(record.code) === 'error') error = true;
      if (MISFIT_CODES.has(record.code)) misfit = true;
      if (MODEL_VIOLATION_CODES.has(record.code)) violation = true;
    }
    const at = scanned.from;
    // The mask's sum, from the segments (fillMask writes each one's mask value over its tokens).
    let ones = 0;
    for (let j = 0; j < segments.count; j++) {
      const end = j + 1 < segments.count ? segments.starts[j + 1] : n;
      if (end > segments.starts[j]) ones += (end - segments.starts[j]) * (stateMask[segments.state[j]] & 0xff);
    }
    trained += ones;
    const action = ones > 0;
    if (prompt) promptFound++;
    if (action) withAction++;
    if (error) withErrors++;
    if (misfit) misfits++;
    if (violation) modelViolations++;
    if (prompt && action && !error && !misfit) clean++;
    // Trained special tokens that none of the grammar's model-side literals names, in token order.
    let unnamed = 0;
    for (const i of streams[r].specials) {
      const id = ids[at + i];
      if (!mask[at + i] || !isUnnamedSpecial(id)) continue;
      unnamed++;
      if (unexplained.examples.length < 4) {
        const piece = decoder.decode(table.pieces.subarray(table.offsets[id], table.offsets[id + 1]));
        if (!unexplained.examples.includes(piece)) unexplained.examples.push(piece);
      }
    }
    if (unnamed) { unexplained.tokens += unnamed; unexplained.rollouts++; }
    if (prompt) readings.add(r, segments, n, stateMask, states);
    // The first token outside the prompt (the spans' first that is not the prompt).
    let from = n;
    for (let j = 0; j < segments.count; j++) {
      const end = j + 1 < segments.count ? segments.starts[j + 1] : n;
      if (end > segments.starts[j] && states[segments.state[j]].kind !== 'prompt') { from = segments.starts[j]; break; }
    }
    afterPrompt[r] = corpus.base[r] + streams[r].starts[from];
  };
  // All rollouts in one maskBatch call; one that cannot be masked ends the call, counts as an error, and the
  // batch goes on after it.
  for (let r = 0; r < rollouts.length;) {
    let last = -1;
    try {
      masker.maskBatch(ids, tokenStarts.subarray(r), promptLengths.subarray(r), mask, (i, scanned) => { last = i; read(r + i, scanned); });
      break;
    } catch {
      const failed = r + last + 1;
      withErrors++;
      afterPrompt[failed] = corpus.base[failed] + streams[failed].starts[rollouts[failed].tokens.length];
      r = failed + 1;
    }
  }
  for (const rollout of rollouts) tokens += rollout.tokens.length;

  const literals = grammarLiterals(spec);
  const found: LiteralEvidence[] = [];
  const missing: string[] = [];
  for (const [literal, paths] of literals) {
    // Whitespace (ReAct's line end) occurs everywhere: no evidence of anything.
    if (!literal.trim()) continue;
    // The prompt's end is the last bytes of the prompt: look for it in the whole stream.
    const isPromptEnd = paths.some((path) => path.startsWith('prompt.'));
    const { count, rollouts: inRollouts } = occurrences(corpus, literal, isPromptEnd ? corpus.base : afterPrompt);
    if (count) found.push({ literal, paths, count, rollouts: inRollouts });
    else missing.push(literal);
  }
  found.sort((a, b) => b.rollouts - a.rollouts || b.count - a.count);

  const promptLiterals = new Set(spec.prompt.ends_after);
  const protocolFound = found.filter((item) => !item.paths.every((path) => path.startsWith('prompt.') || path.startsWith('headers'))).length;
  const n = rollouts.length;
  let fit: Fit;
  let reason: string;
  const seen = modelViolations ? `; in ${modelViolations} it sees the model break the protocol (an environment tag written by the model)` : '';
  if (n === 0) { fit = 'no'; reason = 'no rollouts'; }
  else if (promptFound === 0) {
    fit = 'no';
    reason = promptLiterals.size ? 'its prompt end is in no rollout' : 'it declares no prompt end and the rollouts bring no prompt_length';
  } else if (protocolFound === 0) { fit = 'no'; reason = 'none of its markers beyond the prompt end occur'; }
  else if (clean < FIT_SHARE * n) {
    fit = clean ? 'partial' : 'no';
    reason = [
      promptFound < n ? `prompt end in ${promptFound}/${n} rollouts` : '',
      withErrors ? `${withErrors} rollout(s) with errors` : '',
      misfits ? `${misfits} rollout(s) where the stream departs from its protocol (missing-reply, text-after-end)` : '',
      withAction < n ? `${n - withAction} rollout(s) with no action` : '',
    ].filter(Boolean).join('; ') + seen;
  } else {
    fit = 'fits';
    const flaws = n - clean;
    reason = `${clean}/${n} rollouts masked cleanly${flaws ? ` (${flaws} with a prompt end missing, no action, an error or a departure from its protocol)` : ''}, ${protocolFound} of its markers found${seen}`;
  }
  const verdict: CandidateVerdict = {
    grammar: name, fit, reason, rollouts: n, promptFound, withAction, withErrors, misfits, modelViolations, clean,
    unexplainedSpecial: unexplained, actionShare: tokens ? trained / tokens : 0, found, missing,
  };
  const optional = [...grammar.promptOptionalText, ...grammar.replies.flatMap((reply) => reply.closeOptionalText)].filter(Boolean).map((text) => Buffer.from(text, 'utf8'));
  return { verdict, readings, optional };
}

/**
 * How many tokens `a` trains that `b` calls observation or prompt, over the rollouts where both found their
 * prompt end. Padding `b` calls trailing counts for neither: a stop token one grammar trains and another pads
 * is not environment text.
 */
function trainsBeyond(a: Judged, b: Judged, streams: Stream[]): number {
  let count = 0;
  const mine = a.readings;
  const theirs = b.readings;
  const { runs } = mine;
  for (let r = 0; r < streams.length; r++) {
    if (!mine.has(r) || !theirs.has(r)) continue;
    const { bytes, starts } = streams[r];
    outside(runs, mine.actionAt[r], mine.trailingAt[r], theirs, r, (start, end) => {
      // A run inside text b's template may insert is a question of b's options (template_think, a prefill), not
      // of the protocol: it decides nothing here.
      const text = bytes.subarray(starts[start], starts[end]);
      if (text.length && b.optional.some((optional) => optional.includes(text))) return;
      count += end - start;
    });
  }
  return count;
}

/**
 * Each run of `runs[from .. to]` outside the other reading's action and trailing runs for rollout `r` (each
 * list sorted and disjoint, and disjoint from each other: spans tile the stream), in order.
 */
function outside(runs: Int32Array, from: number, to: number, other: Readings, r: number, each: (start: number, end: number) => void): void {
  const covered = other.runs;
  // Two sorted lists walked as one: the next covered run is whichever list's head starts first.
  let i = other.actionAt[r];
  const iEnd = other.trailingAt[r];
  let j = iEnd;
  const jEnd = other.endAt[r];
  const next = () => (i < iEnd && (j >= jEnd || covered[i] < covered[j]) ? i : j < jEnd ? j : -1);
  for (let k = from; k < to; k += 2) {
    let at = runs[k];
    const end = runs[k + 1];
    // Skip covered runs that end before this one starts (ends are sorted as starts are: the runs are disjoint).
    for (let c = next(); c >= 0 && covered[c + 1] <= at; c = next()) { if (c === i) i += 2; else j += 2; }
    // Walk the covered runs that start before this one ends, without consuming the last: it may reach the next.
    let ci = i;
    let cj = j;
    for (;;) {
      const c = ci < iEnd && (cj >= jEnd || covered[ci] < covered[cj]) ? ci : cj < jEnd ? cj : -1;
      if (c < 0 || covered[c] >= end) break;
      if (covered[c] > at) each(at, covered[c]);
      at = Math.max(at, covered[c + 1]);
      if (c === ci) ci += 2; else cj += 2;
    }
    if (at < end) each(at, end);
  }
}

/** Markers explained, to compare two grammars whose masks are the same: distinct literals found, their occurrences, then the share of its declared literals found (the more specific explanation). */
function markerScore(verdict: CandidateVerdict): number[] {
  const declared = verdict.found.length + verdict.missing.length;
  return [verdict.found.length, verdict.found.reduce((n, item) => n + item.count, 0), declared ? verdict.found.length / declared : 0];
}
const better = (a: number[], b: number[]) => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return false;
};

const quoteList = (items: string[]) => items.map((item) => JSON.stringify(item)).join(', ');

/**
 * Judge every candidate grammar (default: the bundled ones) on these rollouts, then let the fitting ones give
 * way on evidence, in this order:
 * 1. a grammar that trains special tokens none of its model-side literals names (a chat template's
 *    `<|im_start|>`, `<|start_header_id|>` inside what it calls the model's text) gives way to one that trains
 *    fewer such rollouts;
 * 2. a grammar that trains tokens another fitting grammar calls observation, while that one trains nothing
 *    it calls observation, gives way to it: never prefer the grammar that trains more;
 * 3. one whose markers found are a subset of another's (which explains more of the stream) gives way to it,
 *    and of grammars whose masks are the same, the one that explains more markers stands.
 * Two left standing that each train what the other calls observation are a dispute: no verdict.
 */
export function detectGrammar(rollouts: DetectRollout[], table: ByteTable, candidates?: Array<{ name: string; grammar: CompiledGrammar }>): Detection {
  const list = candidates ?? bundledGrammarNames().map((name) => ({ name, grammar: loadGrammar(name) }));
  // Every literal any candidate counts, found in one pass over all the rollouts' bytes.
  const counted = new Set(list.flatMap(({ grammar }) => [...grammarLiterals(grammar.grammar).keys()].filter((literal) => literal.trim())));
  const corpus = streamsOf(table, rollouts, [...counted]);
  const { streams } = corpus;
  const unknownIds = streams.reduce((n, stream) => n + stream.unknown, 0);
  // One scan view for all of them, where the special tokens they name fit in the free bytes (else each its own).
  const viewLiterals = list.flatMap(({ grammar }) => declaredLiterals(grammar.grammar).map((item) => item.literal));
  const view = sentinelOverflow(table, viewLiterals) ? undefined : buildScanView(table, viewLiterals);
  if (view) bindTogether(list.map(({ grammar }) => grammar), table, view);
  const judged = list.map(({ name, grammar }) => judge(name, grammar, table, rollouts, corpus, view));
  const byName = new Map(judged.map((item) => [item.verdict.grammar, item]));
  const rank: Record<Fit, number> = { fits: 0, partial: 1, no: 2 };
  const verdicts = judged.map((item) => item.verdict);
  verdicts.sort((a, b) => rank[a.fit] - rank[b.fit] || b.found.length - a.found.length || a.grammar.localeCompare(b.grammar));
  const n = rollouts.length;

  const outranked: Outranked[] = [];
  let standing = verdicts.filter((verdict) => verdict.fit === 'fits');
  const fitting = [...standing];

  // 1. Special tokens trained that the grammar does not name.
  const fewest = Math.min(...standing.map((verdict) => verdict.unexplainedSpecial.rollouts));
  const naming = standing.find((verdict) => verdict.unexplainedSpecial.rollouts === fewest);
  for (const verdict of standing) {
    const unexplained = verdict.unexplainedSpecial;
    if (!naming || unexplained.rollouts === fewest) continue;
    outranked.push({
      grammar: verdict.grammar, by: naming.grammar, evidence: 'unexplained-special',
      reason: `trains special tokens none of its literals names (${quoteList(unexplained.examples)}) in ${unexplained.rollouts}/${n} rollouts; ${naming.grammar} ${fewest ? `in ${fewest}` : 'names every special token it trains'}`,
    });
  }
  standing = standing.filter((verdict) => !outranked.some((item) => item.grammar === verdict.grammar));

  // 2. Never prefer a grammar that trains what another fitting grammar calls observation.
  const beyond = new Map<string, number>();
  const trains = (a: string, b: string) => {
    const key = `${a}\u0000${b}`;
    let count = beyond.get(key);
    if (count === undefined) { count = trainsBeyond(byName.get(a)!, byName.get(b)!, streams); beyond.set(key, count); }
    return count;
  };
  const stricter = (a: CandidateVerdict) => standing.filter((b) => b !== a && trains(a.grammar, b.grammar) > 0 && trains(b.grammar, a.grammar) === 0);
  const dominated = new Set(standing.filter((verdict) => stricter(verdict).length).map((verdict) => verdict.grammar));
  for (const verdict of standing) {
    const over = stricter(verdict);
    if (!over.length) continue;
    const by = over.find((b) => !dominated.has(b.grammar)) ?? over[0];
    outranked.push({
      grammar: verdict.grammar, by: by.grammar, evidence: 'trains-observation',
      reason: `trains ${trains(verdict.grammar, by.grammar)} token(s) that ${by.grammar} calls observation or prompt, and ${by.grammar} trains none it does not`,
    });
  }
  standing = standing.filter((verdict) => !dominated.has(verdict.grammar));

  // 3. Markers: of two left standing, one whose markers found are a subset of the other's says less about the
  // streams; of two with the same masks, the one that explains more markers stands.
  const explainedLess = new Map<string, { by: CandidateVerdict; reason: string }>();
  const foundSet = (verdict: CandidateVerdict) => new Set(verdict.found.map((item) => item.literal));
  for (const a of standing) {
    const mine = foundSet(a);
    for (const b of standing) {
      if (a === b || explainedLess.has(a.grammar)) continue;
      const theirs = foundSet(b);
      const extra = [...theirs].filter((literal) => !mine.has(literal));
      const subset = [...mine].every((literal) => theirs.has(literal));
      if (subset && extra.length) {
        explainedLess.set(a.grammar, { by: b, reason: `finds only markers ${b.grammar} also explains, which explains ${quoteList(extra.slice(0, 3))}${extra.length > 3 ? ' and more' : ''} too` });
      } else if (subset && theirs.size === mine.size && b.missing.length < a.missing.length) {
        // The same markers, while declaring more that never occur: it claims more of the stream than it can show
        // (Qwen3's JSON tool calls fit qwen3_5 too, whose <function=…> blocks are nowhere).
        explainedLess.set(a.grammar, { by: b, reason: `finds the same markers as ${b.grammar} and declares ${a.missing.length - b.missing.length} more that never occur` });
      } else if (!trains(a.grammar, b.grammar) && !trains(b.grammar, a.grammar) && better(markerScore(b), markerScore(a))) {
        explainedLess.set(a.grammar, { by: b, reason: `masks every rollout as ${b.grammar} does, and explains fewer of the stream's markers (${a.found.length} of its ${a.found.length + a.missing.length} found, against ${b.found.length} of ${b.found.length + b.missing.length})` });
      }
    }
  }
  for (const [grammar, { by, reason }] of explainedLess) outranked.push({ grammar, by: by.grammar, evidence: 'fewer-markers', reason });
  standing = standing.filter((verdict) => !explainedLess.has(verdict.grammar));

  const disputes: Dispute[] = [];
  // A grammar that does not fit, but finds every marker the last one standing finds and more, and calls
  // observation some of what it trains, keeps the verdict open: the stream may be its protocol, broken.
  if (standing.length === 1) {
    const only = standing[0];
    const mine = foundSet(only);
    for (const other of verdicts) {
      if (other.fit === 'fits' || other.promptFound < FIT_SHARE * n) continue;
      const theirs = foundSet(other);
      const extra = [...theirs].filter((literal) => !mine.has(literal));
      if (!extra.length || ![...mine].every((literal) => theirs.has(literal))) continue;
      const over = trains(only.grammar, other.grammar);
      if (!over) continue;
      disputes.push({ grammars: [only.grammar, other.grammar], trains: [over, trains(other.grammar, only.grammar)], unfit: other.grammar, explains: extra });
    }
  }
  for (let i = 0; i < standing.length; i++) {
    for (let j = i + 1; j < standing.length; j++) {
      const a = standing[i].grammar;
      const b = standing[j].grammar;
      disputes.push({ grammars: [a, b], trains: [trains(a, b), trains(b, a)] });
    }
  }
  const verdict = standing.length === 1 && !disputes.length ? standing[0].grammar : undefined;

  return {
    verdict,
    fitting: [...(verdict ? [verdict] : []), ...fitting.map((item) => item.grammar).filter((name) => name !== verdict)],
    outranked,
    disputes,
    candidates: verdicts,
    rollouts: rollouts.length,
    unknownIds,
  };
}

/** One sentence for stderr: the verdict, or why there is none. */
export function detectionSentence(detection: Detection): string {
  if (detection.verdict) {
    const verdict = detection.candidates.find((item) => item.grammar === detection.verdict)!;
    const clean = verdict.clean === verdict.rollouts ? `all ${verdict.rollouts} rollouts` : `the ${verdict.rollouts} rollouts (${verdict.clean} masked cleanly)`;
    const gave = (evidence: Evidence) => detection.outranked.filter((item) => item.evidence === evidence).map((item) => item.grammar);
    const notes = [
      gave('trains-observation').length ? `${gave('trains-observation').join(', ')} also fit but train tokens it calls observation` : '',
      gave('unexplained-special').length ? `${gave('unexplained-special').join(', ')} train special tokens they do not name` : '',
      gave('fewer-markers').length ? `${gave('fewer-markers').join(', ')} explain fewer of the markers` : '',
    ].filter(Boolean);
    return `grammar ${detection.verdict} fits ${clean}${notes.length ? `; ${notes.join('; ')}` : ''}`;
  }
  const standing = detection.fitting.filter((name) => !detection.outranked.some((item) => item.grammar === name));
  const unfit = detection.disputes.filter((item) => item.unfit);
  if (standing.length === 1 && unfit.length) {
    const says = unfit.map((item) => {
      const other = detection.candidates.find((candidate) => candidate.grammar === item.unfit)!;
      return `${item.unfit} explains more of the markers (${quoteList(item.explains!.slice(0, 3))}) and calls ${item.trains[0]} token(s) it trains observation, but does not fit (${other.reason})`;
    });
    return `no verdict: ${standing[0]} fits the ${detection.rollouts} rollouts, but ${says.join('; ')}; name one with --grammar (and its options)`;
  }
  if (standing.length > 1) {
    const both = detection.disputes.filter((item) => !item.unfit && item.trains[0] && item.trains[1])
      .map((item) => `${item.grammars[0]} trains ${item.trains[0]} token(s) ${item.grammars[1]} calls observation, ${item.grammars[1]} ${item.trains[1]} the other way`);
    return `ambiguous: ${standing.join(' and ')} all fit the ${detection.rollouts} rollouts${both.length ? ` (${both.join('; ')})` : ' with the same masks and markers'}; name one with --grammar`;
  }
  const partial = detection.candidates.filter((verdict) => verdict.fit === 'partial').map((verdict) => verdict.grammar);
  const tokenizer = detection.unknownIds ? ` (${detection.unknownIds} token ids are outside the tokenizer: is it the rollouts' tokenizer?)` : '';
  return `no bundled grammar fits the ${detection.rollouts} rollouts${partial.length ? `; partly: ${partial.join(', ')}` : ''}${tokenizer}`;
}

/** The evidence for people: one block per candidate, then the verdict. */
export function formatDetection(detection: Detection, maxLiterals = 8): string {
  const width = Math.max(...detection.candidates.map((verdict) => verdict.grammar.length));
  const lines: string[] = [];
  for (const verdict of detection.candidates) {
    lines.push(`${verdict.grammar.padEnd(width)}  ${verdict.fit.padEnd(7)}  ${verdict.reason}`);
    if (verdict.found.length) {
      const shown = verdict.found.slice(0, maxLiterals).map((item) => `${JSON.stringify(item.literal)} ×${item.count} in ${item.rollouts}/${verdict.rollouts}`);
      const more = verdict.found.length > maxLiterals ? `, and ${verdict.found.length - maxLiterals} more` : '';
      lines.push(`${''.padEnd(width)}  found: ${shown.join(', ')}${more}`);
    }
    const gave = detection.outranked.find((item) => item.grammar === verdict.grammar);
    if (gave) lines.push(`${''.padEnd(width)}  gives way to ${gave.by}: it ${gave.reason}`);
  }
  lines.push(`verdict: ${detectionSentence(detection)}`);
  return lines.join('\n');
}
