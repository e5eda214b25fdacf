/**
 * A grammar bound to a tokenizer and option values: everything the scanner reads, precomputed.
 *
 * Two parts with two lifetimes. The vocabulary-sized tables (which ids each automaton may skip, the
 * per-token memo, the padding ids) depend only on grammar × tokenizer: built once and shared by every
 * binding. What options change (reply budgets, the straddle value, the optional texts, `after_end`) is a
 * few small arrays, so a rollout with its own `options` costs microseconds, not a vocabulary pass.
 */
import type { CompiledGrammar, Role } from '../grammar/compile.ts';
import { buildDfa, interruptTrigger, type Dfa } from '../grammar/automata.ts';
import { declaredLiterals, MAX_AUTOMATA, modelLiterals } from '../grammar/check.ts';
import { optionValueProblem, type OptionalRule } from '../grammar/schema.ts';
import { KNOWN, type ByteTable } from '../tokenizer/table.ts';
import { buildScanView, type ScanView } from '../tokenizer/special.ts';

export type OptionValues = Record<string, number | null>;

/**
 * The memo's layout, one place for the scanner (runner.ts `runDfa`) and the tables here. It holds 2^MEMO_SLOT_BITS
 * slots, found by a hash of (automaton state, token id). A slot's result is the state after the whole token, or,
 * where a literal ends inside it, `~(literal << MEMO_OFFSET_BITS | end offset)`: so only pieces shorter than
 * MEMO_MAX_PIECE are remembered (longer ones are stepped byte by byte).
 */
export const MEMO_SLOT_BITS = 12;
export const MEMO_OFFSET_BITS = 12;
export const MEMO_OFFSET_MASK = (1 << MEMO_OFFSET_BITS) - 1;
export const MEMO_MAX_PIECE = 1 << MEMO_OFFSET_BITS;

/** Per automaton: what a whole token does from a state, remembered (see runner.ts `runDfa`). */
export interface Memo { memoState: Int32Array; memoId: Int32Array; memoResult: Int32Array }

/** The grammar × tokenizer part: vocabulary-sized, built once per pair. */
export interface GrammarTables {
  grammar: CompiledGrammar;
  /** The tokenizer's byte table: the text of each id (for messages and attributes). */
  table: ByteTable;
  /**
   * What the scanner walks: the same ids and piece lengths, except that each special token is one byte that
   * no ordinary token can produce (tokenizer/special.ts). Every literal below is in these bytes, so a
   * literal's special tokens match only their ids.
   */
  scan: ByteTable;
  /** The grammar's automata, in the scanner's bytes. */
  dfas: Dfa[];
  replyOpen: Array<Uint8Array | undefined>;
  replyText: Array<Uint8Array | undefined>;
  closeOptional: Uint8Array[][];
  promptOptional: Uint8Array[];
  /** Per optional literal above: must it end a token, and the text that must follow it, in the scanner's bytes. */
  closeOptionalCheck: OptionalCheck[][];
  promptOptionalCheck: OptionalCheck[];
  headers: Uint8Array[];
  /** The prompt's ends (`prompt.ends_after`): a given prompt_length that ends right after one is the prompt's end the grammar knows. */
  promptEnds: Uint8Array[];
  /** Per handover, the headers the model may sample right after it. */
  modelContinues: Uint8Array[][];
  /**
   * Per handover, per `model_continues` literal: it is itself a handover literal (DeepSeek's end token after
   * `<｜tool▁calls▁end｜>`), so the model's automaton hears it again and its own handover follows.
   */
  modelContinuesHandsOver: boolean[][];
  /** Per handover: the byte length of its `overlap` in the scanner's bytes (0: none). */
  overlapLength: Int32Array;
  /**
   * Per automaton, per id: 1 when the token is known and none of its bytes can start a literal, so the
   * scanner may pass it with one lookup. Unknown ids read 0 (or undefined past the end): the scanner
   * stops on them and reports them, which is how every id gets checked without a pass of its own.
   */
  skip: Uint8Array[];
  /** Per automaton: what a whole token does from a state (next state, or ~(literal << MEMO_OFFSET_BITS | end offset)). */
  memo: Memo[];
  /** Bit 1: padding (a run of them ends the stream); bit 2: also a stop token the model samples. */
  isPadding: Uint8Array;
}

/** What else an optional literal needs to be the template's (schema.ts OptionalRule), in the scanner's bytes. */
export interface OptionalCheck { endsToken: boolean; followedBy: Uint8Array | undefined }

/** Everything the scanner reads: the shared tables and the option-dependent part. */
export interface Bound extends GrammarTables {
  options: OptionValues;
  /** Per reply: its token budget, 0 for none. */
  budgets: Int32Array;
  /** Per handover: is its overlap the following reply's (option `overlap_when` is 1)? */
  overlapToReply: boolean[];
  /** Is each optional text after the prompt's end (or a header) / after each reply's close switched on? */
  promptOptionalOn: boolean[];
  replyOptionalOn: boolean[][];
  /** Per state: mask value of its bytes (action 1, prompt/observation 0, trailing `after_end`); -1 for handovers. */
  stateMask: Int8Array;
  straddleMask: number;
}

const tablesCache = new WeakMap<CompiledGrammar, WeakMap<ByteTable, GrammarTables>>();

/** Per byte value, the known ids whose piece holds it (`ids[starts[b] .. starts[b + 1]]`); `known[id]` is 1 for known ids. */
interface ByteIndex { starts: Uint32Array; ids: Uint32Array; known: Uint8Array }
const byteIndexes = new WeakMap<ByteTable, ByteIndex>();

/**
 * The scan view's byte index, built once per view and shared by every grammar bound to it: `detect` binds every
 * bundled grammar, and each used to pass over all of the vocabulary's bytes to build its skip tables.
 */
function byteIndex(table: ByteTable): ByteIndex {
  let index = byteIndexes.get(table);
  if (index) return index;
  const { size, pieces, offsets, flags } = table;
  const known = new Uint8Array(size);
  const counts = new Uint32Array(257);
  const seen = new Int32Array(256).fill(-1);
  for (let pass = 0; pass < 2; pass++) {
    const ids = pass === 1 ? new Uint32Array(counts[256]) : undefined;
    const at = pass === 1 ? counts.slice(0, 256) : undefined;
    seen.fill(-1);
    for (let id = 0; id < size; id++) {
      if ((flags[id] & KNOWN) === 0) continue;
      known[id] = 1;
      for (let p = offsets[id], end = offsets[id + 1]; p < end; p++) {
        const byte = pieces[p];
        if (seen[byte] === id) continue;
        seen[byte] = id;
        if (ids) ids[at![byte]++] = id;
        else counts[byte + 1]++;
      }
    }
    if (ids) { index = { starts: counts, ids, known }; break; }
    for (let byte = 0; byte < 256; byte++) counts[byte + 1] += counts[byte];
  }
  byteIndexes.set(table, index!);
  return index!;
}

/** Scan views some grammar was bound to: binding a second grammar to one builds (and keeps) its byte index. */
const viewsBound = new WeakSet<ByteTable>();

/**
 * Per automaton, its skip row: it skips a known token none of whose bytes can start one of its literals. Where
 * several grammars are bound to one view (detect binds every bundled grammar), all known tokens minus those the
 * view's byte index lists under one of its first bytes; for the first grammar bound to a view (the CLI's mask
 * binds one), one pass over the pieces (two passes fewer than building the index: ~40 ms of a Qwen3 start).
 */
/** Skip rows by scan view, then by the bytes an automaton may start on: grammars that `detect` binds share most. */
const skipRowsByStart = new WeakMap<ByteTable, Map<string, Uint8Array>>();

const startKey = (dfa: Dfa) => Buffer.from(dfa.firstBytes).toString('latin1');

/** Each automaton's skip row (shared, never written after it is built). */
function skipRows(table: ByteTable, dfas: Dfa[]): Uint8Array[] {
  let byStart = skipRowsByStart.get(table);
  if (!byStart) skipRowsByStart.set(table, (byStart = new Map()));
  const keys = dfas.map(startKey);
  const missing = new Map<string, Dfa>();
  dfas.forEach((dfa, k) => { if (!byStart.has(keys[k]) && !missing.has(keys[k])) missing.set(keys[k], dfa); });
  if (missing.size) {
    const rows = buildSkipRows(table, [...missing.values()]);
    [...missing.keys()].forEach((key, k) => byStart.set(key, rows[k]));
  }
  return keys.map((key) => byStart.get(key)!);
}

function buildSkipRows(table: ByteTable, dfas: Dfa[]): Uint8Array[] {
  const index = byteIndexes.get(table) ?? (viewsBound.has(table) ? byteIndex(table) : undefined);
  viewsBound.add(table);
  if (!index) return skipRowsInOnePass(table, dfas);
  return dfas.map((dfa) => {
    const row = index.known.slice();
    for (let byte = 0; byte < 256; byte++) {
      if (!dfa.firstBytes[byte]) continue;
      for (let k = index.starts[byte], end = index.starts[byte + 1]; k < end; k++) row[index.ids[k]] = 0;
    }
    return row;
  });
}

/** The skip rows of `dfas`, 32 automata to a pass over the vocabulary's pieces. */
function skipRowsInOnePass(table: ByteTable, dfas: Dfa[]): Uint8Array[] {
  const { size, pieces, offsets, flags } = table;
  const rows = dfas.map(() => new Uint8Array(size));
  // Bit k of `starts[byte]` says whether automaton `from + k` may start on the byte.
  for (let from = 0; from < dfas.length; from += 32) {
    const group = Math.min(32, dfas.length - from);
    const starts = new Int32Array(256);
    for (let k = 0; k < group; k++) {
      const first = dfas[from + k].firstBytes;
      for (let byte = 0; byte < 256; byte++) if (first[byte]) starts[byte] |= 1 << k;
    }
    for (let id = 0; id < size; id++) {
      if ((flags[id] & KNOWN) === 0) continue;
      let hit = 0;
      for (let p = offsets[id], end = offsets[id + 1]; p < end; p++) hit |= starts[pieces[p]];
      for (let k = 0; k < group; k++) rows[from + k][id] = ((hit >>> k) & 1) ^ 1;
    }
  }
  return rows;
}

/**
 * Binds several grammars to one shared scan view at once (detect binds every bundled grammar): their automata
 * first, then the skip rows none of them has yet, all in one pass over the vocabulary (18 distinct rows for the
 * bundled grammars), instead of one grammar after another through a byte index of the view.
 */
export function bindTogether(grammars: readonly CompiledGrammar[], table: ByteTable, view: ScanView): void {
  const pending = grammars.filter((grammar) => !tablesCache.get(grammar)?.has(view.table));
  const automata = pending.map((grammar) => scanAutomata(grammar, view));
  let byStart = skipRowsByStart.get(view.table);
  if (!byStart) skipRowsByStart.set(view.table, (byStart = new Map()));
  const missing = new Map<string, Dfa>();
  for (const dfa of automata.flat()) {
    const key = startKey(dfa);
    if (!byStart.has(key) && !missing.has(key)) missing.set(key, dfa);
  }
  const rows = skipRowsInOnePass(view.table, [...missing.values()]);
  [...missing.keys()].forEach((key, k) => byStart.set(key, rows[k]));
  pending.forEach((grammar, g) => {
    let byTable = tablesCache.get(grammar);
    if (!byTable) { byTable = new WeakMap(); tablesCache.set(grammar, byTable); }
    byTable.set(view.table, buildTables(grammar, table, view, automata[g]));
  });
}

/**
 * The grammar × tokenizer tables, built on first use and shared afterwards. `view`: a scan view built for the
 * literals of several grammars at once (detect binds every bundled grammar to one, so the vocabulary is rewritten
 * and indexed once, not once per set of special tokens named); by default the grammar's own. Which bytes stand for
 * which special tokens is only a renaming, the same in the pieces and the literals, so the masks are the same.
 */
export function grammarTables(grammar: CompiledGrammar, table: ByteTable, view?: ScanView): GrammarTables {
  let byTable = tablesCache.get(grammar);
  if (!byTable) { byTable = new WeakMap(); tablesCache.set(grammar, byTable); }
  const key = view?.table ?? table;
  let tables = byTable.get(key);
  if (!tables) { tables = buildTables(grammar, table, view); byTable.set(key, tables); }
  return tables;
}

/** The grammar's automata, over the scanner's bytes: a literal's special tokens become their sentinel bytes. */
function scanAutomata(grammar: CompiledGrammar, view: ScanView): Dfa[] {
  const { encode } = view;
  const others = modelLiterals(grammar.grammar).map((item) => encode(item.literal));
  return grammar.dfas.map((dfa) => buildDfa(dfa.literals.map((literal) => {
    if (literal.interrupt < 0) {
      const bytes = encode(literal.source);
      return { ...literal, bytes, back: bytes.length };
    }
    const { trigger, bytesToEnd } = interruptTrigger(encode(literal.source), others);
    return { ...literal, bytes: trigger, back: bytesToEnd };
  })));
}

function buildTables(grammar: CompiledGrammar, table: ByteTable, shared?: ScanView, automata?: Dfa[]): GrammarTables {
  if (grammar.dfas.length > MAX_AUTOMATA) throw new Error(`grammar ${grammar.grammar.name} needs ${grammar.dfas.length} automata; at most ${MAX_AUTOMATA} are supported`);
  const view = shared ?? buildScanView(table, declaredLiterals(grammar.grammar).map((item) => item.literal));
  const { encode } = view;
  const dfas = automata ?? scanAutomata(grammar, view);
  const maybe = (literal: string | undefined) => (literal === undefined ? undefined : encode(literal));
  const check = (rule: OptionalRule): OptionalCheck => ({ endsToken: rule.ends_token, followedBy: maybe(rule.followed_by) });
  const literals = {
    dfas,
    replyOpen: grammar.replies.map((reply) => maybe(reply.openText)),
    replyText: grammar.replies.map((reply) => maybe(reply.textText)),
    closeOptional: grammar.replies.map((reply) => reply.closeOptionalText.map(encode)),
    promptOptional: grammar.promptOptionalText.map(encode),
    closeOptionalCheck: grammar.replies.map((reply) => reply.closeOptionalRules.map(check)),
    promptOptionalCheck: grammar.promptOptionalRules.map(check),
    headers: grammar.headers.map(encode),
    promptEnds: grammar.grammar.prompt.ends_after.map(encode),
    modelContinues: grammar.handovers.map((handover) => handover.modelContinues.map(encode)),
    modelContinuesHandsOver: grammar.grammar.handovers.map((handover) => handover.model_continues.map((literal) => grammar.grammar.handovers.some((other) => other.after === literal))),
    overlapLength: Int32Array.from(grammar.handovers, (handover) => (handover.overlap === undefined ? 0 : encode(handover.overlap).length)),
  };
  const skip = skipRows(view.table, dfas);

  const isPadding = paddingIds(table, grammar.grammar.padding, grammar.grammar.stop);
  return { grammar, table, scan: view.table, ...literals, skip, memo: dfas.map(newMemo), isPadding };
}

/** Per vocabulary, its known non-empty ids grouped by their first byte (`ids[starts[b] .. starts[b + 1]]`). */
const firstByteIndexes = new WeakMap<ByteTable, { starts: Uint32Array; ids: Uint32Array }>();

/** One pass over the vocabulary, shared by every padding table of it (detect asks for 12). */
function idsByFirstByte(table: ByteTable): { starts: Uint32Array; ids: Uint32Array } {
  let index = firstByteIndexes.get(table);
  if (index) return index;
  const { size, flags, offsets, pieces } = table;
  const starts = new Uint32Array(257);
  for (let id = 0; id < size; id++) if ((flags[id] & KNOWN) && offsets[id + 1] > offsets[id]) starts[pieces[offsets[id]] + 1]++;
  for (let byte = 0; byte < 256; byte++) starts[byte + 1] += starts[byte];
  const ids = new Uint32Array(starts[256]);
  const at = starts.slice(0, 256);
  for (let id = 0; id < size; id++) if ((flags[id] & KNOWN) && offsets[id + 1] > offsets[id]) ids[at[pieces[offsets[id]]]++] = id;
  index = { starts, ids };
  firstByteIndexes.set(table, index);
  return index;
}

/** Padding tables by vocabulary, then by padding and stop texts: `detect` binds 18 grammars, most with the same padding. */
const paddingTables = new WeakMap<ByteTable, Map<string, Uint8Array>>();

/**
 * Per id: 1 when the token's own text (the real table: a padding token is one whole token) is a padding text,
 * 3 when it is also a stop text. Shared and never written after it is built.
 */
function paddingIds(table: ByteTable, padding: readonly string[], stop: readonly string[]): Uint8Array {
  const key = JSON.stringify([padding, stop]);
  let byTexts = paddingTables.get(table);
  if (!byTexts) paddingTables.set(table, (byTexts = new Map()));
  let isPadding = byTexts.get(key);
  if (isPadding) return isPadding;
  const { size, flags, offsets, pieces } = table;
  isPadding = new Uint8Array(size);
  const stopTexts = new Set(stop);
  const decoder = new TextDecoder();
  const { starts, ids } = idsByFirstByte(table);
  // A token's text is a padding text when its bytes are the text's UTF-8 bytes: only the ids starting with the
  // text's first byte are compared. A text with U+FFFD or a surrogate could also be what an invalid token decodes
  // to: for those, every id is decoded.
  for (const text of new Set(padding)) {
    if (!text) continue;
    const mark = stopTexts.has(text) ? 3 : 1;
    if (/[\uFFFD\uD800-\uDFFF]/.test(text)) {
      for (let id = 0; id < size; id++) {
        if ((flags[id] & KNOWN) && offsets[id + 1] > offsets[id] && decoder.decode(pieces.subarray(offsets[id], offsets[id + 1])) === text) isPadding[id] = mark;
      }
      continue;
    }
    const own = Buffer.from(text, 'utf8');
    for (let k = starts[own[0]], end = starts[own[0] + 1]; k < end; k++) {
      const id = ids[k];
      if (offsets[id + 1] - offsets[id] !== own.length) continue;
      let same = true;
      for (let i = 0, p = offsets[id]; i < own.length && same; i++, p++) same = pieces[p] === own[i];
      if (same) isPadding[id] = mark;
    }
  }
  byTexts.set(key, isPadding);
  return isPadding;
}

function newMemo(): Memo {
  const size = 1 << MEMO_SLOT_BITS;
  return { memoState: new Int32Array(size).fill(-1), memoId: new Int32Array(size), memoResult: new Int32Array(size) };
}

/** The grammar's defaults with `overrides` applied; throws on an unknown option or a value it does not take. */
export function resolveOptions(grammar: CompiledGrammar, overrides: OptionValues): OptionValues {
  // No prototype, and only the grammar's own options: `constructor` or `__proto__` is an unknown name.
  const options: OptionValues = Object.create(null);
  const specs = grammar.grammar.options;
  for (const [name, spec] of Object.entries(specs)) options[name] = spec.default;
  for (const [name, value] of Object.entries(overrides)) {
    if (!Object.hasOwn(specs, name)) throw new Error(`unknown option "${name}" for grammar ${grammar.grammar.name} (options: ${Object.keys(specs).join(', ')})`);
    const problem = optionValueProblem(specs[name], value);
    if (problem) throw new Error(`option ${name}: ${problem}`);
    options[name] = value;
  }
  return options;
}

export function bind(grammar: CompiledGrammar, table: ByteTable, overrides: OptionValues = {}, view?: ScanView): Bound {
  const options = resolveOptions(grammar, overrides);
  const tables = grammarTables(grammar, table, view);
  const budgets = new Int32Array(grammar.replies.length);
  grammar.replies.forEach((reply, r) => {
    const budget = typeof reply.budget === 'string' ? options[reply.budget] : reply.budget;
    budgets[r] = budget ?? 0;
  });
  const afterEnd = options.after_end ?? 0;
  const maskOf: Record<Role, number> = { prompt: 0, action: 1, observation: 0, trailing: afterEnd };
  const stateMask = Int8Array.from(grammar.states, (state) => (state.role === undefined ? -1 : maskOf[state.role]));
  const on = (option: string | undefined) => option === undefined || options[option] === 1;
  const onUnless = (option: string | undefined, rule: OptionalRule) => on(option) && (rule.unless === undefined || options[rule.unless] !== 1);
  // Every field spelled out, in one order (no spread): each Bound gets the same hidden class, so the scanner's
  // property loads stay monomorphic across option sets (a spread made each new binding's first scans slow).
  const { scan, dfas, replyOpen, replyText, closeOptional, promptOptional, closeOptionalCheck, promptOptionalCheck, headers, promptEnds, modelContinues, modelContinuesHandsOver, overlapLength, skip, memo, isPadding } = tables;
  return {
    grammar, table, scan, dfas, replyOpen, replyText, closeOptional, promptOptional, closeOptionalCheck, promptOptionalCheck, headers, promptEnds, modelContinues, modelContinuesHandsOver, overlapLength, skip, memo, isPadding,
    options, budgets, stateMask, straddleMask: options.straddle ?? 0,
    overlapToReply: grammar.handovers.map((handover) => handover.overlapWhen !== undefined && options[handover.overlapWhen] === 1),
    promptOptionalOn: grammar.promptOptionalWhen.map((option, i) => onUnless(option, grammar.promptOptionalRules[i])),
    replyOptionalOn: grammar.replies.map((reply) => reply.closeOptionalWhen.map((option, i) => onUnless(option, reply.closeOptionalRules[i]))),
  };
}
