/**
 * The byte scanner: walks one rollout's tokens through the compiled protocol and records where each
 * state begins, as exact (token, byte offset) positions.
 *
 * Shape of the hot loop (feasibility.md §4): per state, a byte automaton over the literals that state
 * can hear; a token none of whose bytes can start a literal is skipped with one table lookup, so most
 * tokens cost one load and one test. Policy lives in the tables compiled from the xstate machine.
 */
import type { CompiledGrammar, Role } from './grammar/compile.ts';
import { KNOWN, type ByteTable } from './tokenizer/table.ts';
import { RolloutError, SEVERITY, type Diagnostic, type DiagnosticCode } from './diagnostics.ts';
import { readAttributes } from './attributes.ts';

export type OptionValues = Record<string, number | null>;

/** A grammar bound to a tokenizer and option values: everything the scanner reads, precomputed. */
export interface Bound {
  grammar: CompiledGrammar;
  table: ByteTable;
  options: OptionValues;
  /**
   * Per automaton, per id: 1 when the token is known and none of its bytes can start a literal, so the
   * scanner may pass it with one lookup. Unknown ids read 0 (or undefined past the end): the scanner
   * stops on them and reports them, which is how every id gets checked without a pass of its own.
   */
  skip: Uint8Array[];
  /** Per automaton: what a whole token does from a state (next state, or ~(literal << 12 | end offset)). */
  memo: Memo[];
  /** The token is one of the grammar's padding tokens (a run of them ends the stream). */
  isPadding: Uint8Array;
  /** Per reply: its token budget, 0 for none. */
  budgets: Int32Array;
  /** Are the optional texts after the prompt's end / after each reply's close switched on? */
  promptOptionalOn: boolean;
  replyOptionalOn: boolean[];
  /** Per state: mask value of its bytes (action 1, prompt/observation 0, trailing `after_end`); -1 for handovers. */
  stateMask: Int8Array;
  straddleMask: number;
}

export function bind(grammar: CompiledGrammar, table: ByteTable, overrides: OptionValues = {}): Bound {
  const options: OptionValues = {};
  for (const [name, spec] of Object.entries(grammar.grammar.options)) options[name] = spec.default;
  for (const [name, value] of Object.entries(overrides)) {
    const spec = grammar.grammar.options[name];
    if (!spec) throw new Error(`unknown option "${name}" for grammar ${grammar.grammar.name} (options: ${Object.keys(grammar.grammar.options).join(', ')})`);
    if (spec.values ? !spec.values.includes(value) : value !== null && !(Number.isInteger(value) && value > 0)) {
      throw new Error(`option ${name}=${JSON.stringify(value)}: expected ${spec.values ? spec.values.map((item) => JSON.stringify(item)).join(' or ') : 'a positive integer or null'}`);
    }
    options[name] = value;
  }
  if (grammar.dfas.length > 32) throw new Error(`grammar ${grammar.grammar.name} needs ${grammar.dfas.length} automata; at most 32 are supported`);
  const { size, pieces, offsets, flags } = table;
  // One pass over all pieces: which automata can each token's bytes start?
  const startsOf = new Uint32Array(256);
  grammar.dfas.forEach((dfa, d) => { for (let byte = 0; byte < 256; byte++) if (dfa.firstBytes[byte]) startsOf[byte] |= 1 << d; });
  const skip = grammar.dfas.map(() => new Uint8Array(size));
  for (let id = 0; id < size; id++) {
    if ((flags[id] & KNOWN) === 0) continue;
    let starts = 0;
    for (let p = offsets[id], end = offsets[id + 1]; p < end; p++) starts |= startsOf[pieces[p]];
    for (let d = 0; d < skip.length; d++) if (((starts >>> d) & 1) === 0) skip[d][id] = 1;
  }

  // Bit 1: padding; bit 2: a stop token the model samples (the first of a closing padding run is its own).
  const isPadding = new Uint8Array(size);
  const padTexts = new Set(grammar.grammar.padding);
  const stopTexts = new Set(grammar.grammar.stop);
  const decoder = new TextDecoder();
  // Decode only the ids that could be a padding text (same first byte): a per-id decode costs ~40 ms.
  const firstBytes = new Set(grammar.grammar.padding.map((text) => new TextEncoder().encode(text)[0]));
  for (let id = 0; id < size; id++) {
    const length = offsets[id + 1] - offsets[id];
    if (!(length > 0 && length < 64 && (table.flags[id] & KNOWN) && firstBytes.has(pieces[offsets[id]]))) continue;
    const text = decoder.decode(pieces.subarray(offsets[id], offsets[id + 1]));
    if (padTexts.has(text)) isPadding[id] = stopTexts.has(text) ? 3 : 1;
  }

  const budgets = new Int32Array(grammar.replies.length);
  grammar.replies.forEach((reply, r) => {
    const budget = typeof reply.budget === 'string' ? options[reply.budget] : reply.budget;
    budgets[r] = budget ?? 0;
  });
  const afterEnd = options.after_end ?? 0;
  const maskOf: Record<Role, number> = { prompt: 0, action: 1, observation: 0, trailing: afterEnd };
  const stateMask = Int8Array.from(grammar.states, (state) => (state.role === undefined ? -1 : maskOf[state.role]));
  const on = (option: string | undefined) => option === undefined || options[option] === 1;
  return {
    grammar, table, options, skip, memo: grammar.dfas.map(newMemo), isPadding, budgets, stateMask, straddleMask: options.straddle ?? 0,
    promptOptionalOn: on(grammar.grammar.prompt.optional_when),
    replyOptionalOn: grammar.replies.map((reply) => on(reply.optionalWhen)),
  };
}

const MEMO_BITS = 12;
/** A memoised end offset takes 12 bits; longer pieces are stepped byte by byte. */
const MEMO_MAX_PIECE = 1 << 12;
const MEMO_SHIFT = 32 - MEMO_BITS;

interface Memo { memoState: Int32Array; memoId: Int32Array; memoResult: Int32Array }

function newMemo(): Memo {
  const size = 1 << MEMO_BITS;
  return { memoState: new Int32Array(size).fill(-1), memoId: new Int32Array(size), memoResult: new Int32Array(size) };
}

/** Where each state begins: parallel arrays, reused between rollouts. */
export class Segments {
  count = 0;
  token = new Int32Array(64);
  offset = new Int32Array(64);
  state = new Int32Array(64);
  diagnostics: Diagnostic[] = [];
  /** Write diagnostic messages (off in the batch path, which only counts diagnostics). */
  messages = true;
  /** Token index where each segment's tokens start (filled by spans.ts), reused between rollouts. */
  starts = new Int32Array(64);
  /** Attributes of the tag that opens a segment (tags declared with `attributes`), by segment index. */
  attributes = new Map<number, Record<string, string>>();

  reset() {
    this.count = 0;
    if (this.diagnostics.length) this.diagnostics = [];
    if (this.attributes.size) this.attributes.clear();
  }

  push(token: number, offset: number, state: number) {
    if (this.count === this.token.length) {
      const grow = (array: Int32Array) => { const next = new Int32Array(array.length * 2); next.set(array); return next; };
      this.token = grow(this.token); this.offset = grow(this.offset); this.state = grow(this.state); this.starts = grow(this.starts);
    }
    this.token[this.count] = token;
    this.offset[this.count] = offset;
    this.state[this.count] = state;
    this.count++;
  }
}

// Cursor results of the helpers below, kept in module scope so the hot path allocates nothing.
let atToken = 0;
let atOffset = 0;

/**
 * Does `literal` occur at (token, offset)? On success the end position is in atToken/atOffset.
 * Bytes past `limit` tokens do not count: they are padding or beyond a budget.
 */
function matchForward(table: ByteTable, ids: ArrayLike<number>, limit: number, token: number, offset: number, literal: Uint8Array): boolean {
  if (token >= limit) return false;
  const { pieces, offsets } = table;
  let t = token;
  let p = offsets[ids[t]] + offset;
  let end = offsets[ids[t] + 1];
  for (let q = 0; q < literal.length; q++) {
    while (p >= end) {
      if (++t >= limit) return false;
      p = offsets[ids[t]];
      end = offsets[ids[t] + 1];
      // An id without bytes (unknown) never matches: the automaton that runs next reports it.
      if (!(p < end)) return false;
    }
    if (pieces[p++] !== literal[q]) return false;
  }
  atToken = t;
  atOffset = p - offsets[ids[t]];
  return true;
}

/** The position `length` bytes before (token, offset), into atToken/atOffset; false before the stream. */
function retreat(table: ByteTable, ids: ArrayLike<number>, token: number, offset: number, length: number): boolean {
  const { offsets } = table;
  let t = token;
  let o = offset;
  while (length > o) {
    length -= o;
    if (--t < 0) return false;
    o = offsets[ids[t] + 1] - offsets[ids[t]];
  }
  atToken = t;
  atOffset = o - length;
  return true;
}

function unknownToken(table: ByteTable, index: number, id: number): RolloutError {
  return new RolloutError(`token ${index}: id ${JSON.stringify(id)} is not in the tokenizer's vocabulary (size ${table.size})`, index);
}

/** Check ids the automata never walk (a prompt given by length, the rest after the last state). */
function checkIds(table: ByteTable, ids: ArrayLike<number>, from: number, to: number): void {
  const { size, flags } = table;
  for (let i = from; i < to; i++) {
    const id = ids[i];
    if (!(id < size && (flags[id] & KNOWN))) throw unknownToken(table, i, id);
  }
}

/**
 * Run automaton `d` from (token, offset) up to token `limit`. Returns the accepted literal's index with its
 * end in atToken/atOffset, or -1 with atToken = limit. Throws on an id outside the vocabulary.
 */
function runDfa(bound: Bound, d: number, ids: ArrayLike<number>, limit: number, token: number, offset: number): number {
  const { pieces, offsets, flags, size } = bound.table;
  const step = bound.grammar.dfas[d].step;
  const skip = bound.skip[d];
  const { memoState, memoId, memoResult } = bound.memo[d];
  let state = 0;
  let t = token;
  let o = offset;
  while (t < limit) {
    if (state === 0 && o === 0) {
      while (t < limit && skip[ids[t]] === 1) t++;
      if (t === limit) break;
    }
    const id = ids[t];
    const base = offsets[id];
    if (o === 0 && !(id < size && (flags[id] & KNOWN))) throw unknownToken(bound.table, t, id);
    if (o === 0 && offsets[id + 1] - base < MEMO_MAX_PIECE) {
      // The same token from the same state always ends the same way (the prompt repeats across rollouts,
      // tags and words recur): remember it instead of stepping its bytes again.
      const slot = (Math.imul(state ^ (id << 7), 0x9e3779b1) >>> MEMO_SHIFT);
      let result: number;
      if (memoState[slot] === state && memoId[slot] === id) result = memoResult[slot];
      else {
        result = state;
        for (let p = base, end = offsets[id + 1]; p < end; p++) {
          result = step[(result << 8) | pieces[p]];
          if (result < 0) { result = ~(((~result) << 12) | (p - base + 1)); break; }
        }
        memoState[slot] = state;
        memoId[slot] = id;
        memoResult[slot] = result;
      }
      if (result < 0) {
        atToken = t;
        atOffset = ~result & 0xfff;
        return (~result) >>> 12;
      }
      state = result;
      t++;
      continue;
    }
    for (let p = base + o, end = offsets[id + 1]; p < end; p++) {
      state = step[(state << 8) | pieces[p]];
      if (state < 0) {
        atToken = t;
        atOffset = p - base + 1;
        return ~state;
      }
    }
    o = 0;
    t++;
  }
  atToken = limit;
  atOffset = 0;
  return -1;
}

/** Are the bytes from (token, offset) up to token `limit` all whitespace (or none)? */
function onlyWhitespaceBefore(table: ByteTable, ids: ArrayLike<number>, token: number, offset: number, limit: number): boolean {
  const { pieces, offsets } = table;
  for (let t = token, o = offset; t < limit; t++, o = 0) {
    for (let p = offsets[ids[t]] + o, end = offsets[ids[t] + 1]; p < end; p++) {
      const c = pieces[p];
      if (!(c === 0x0a || c === 0x20 || c === 0x0d || c === 0x09)) return false;
    }
  }
  return true;
}

const MAX_TAG_BYTES = 4096;

/**
 * After a tag-name literal (`<invoke`) at (token, offset): if the name ends there, read up to `>` and
 * return the attributes (end position in atToken/atOffset). Undefined when it is another name
 * (`<invoker`) or no `>` follows within MAX_TAG_BYTES.
 */
function readTagRest(table: ByteTable, ids: ArrayLike<number>, limit: number, token: number, offset: number): { attributes: Record<string, string> } | undefined {
  const { pieces, offsets } = table;
  const bytes: number[] = [];
  let t = token;
  let p = offsets[ids[t]] + offset;
  let end = offsets[ids[t] + 1];
  for (;;) {
    while (p >= end) {
      if (++t >= limit) return undefined;
      p = offsets[ids[t]];
      end = offsets[ids[t] + 1];
      if (!(p < end)) return undefined;
    }
    const byte = pieces[p++];
    if (bytes.length === 0 && !(byte === 0x3e || byte === 0x2f || byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d)) return undefined;
    bytes.push(byte);
    if (byte === 0x3e) break;
    if (bytes.length > MAX_TAG_BYTES) return undefined;
  }
  atToken = t;
  atOffset = p - offsets[ids[t]];
  // Read under a neutral name: HTML parsing rules for names like <tr> or <title> would drop the element.
  return { attributes: readAttributes(`<span${new TextDecoder().decode(Uint8Array.from(bytes))}`) };
}

/**
 * Record a diagnostic about `token` (and reply `reply`, where it concerns one). Its message is only written
 * when someone will read it (not in `maskBatch`), and no closure is made for it: on the hot path a closure
 * per event costs more than the event.
 */
function report(out: Segments, code: DiagnosticCode, token: number, reply = -1) {
  out.diagnostics.push({ code, severity: SEVERITY[code], token, message: out.messages ? describe(code, walk.bound, walk.ids, token, reply) : '' });
}

const show = (bytes: Uint8Array) => JSON.stringify(new TextDecoder().decode(bytes));

/**
 * The walk through one rollout: module state rather than closures, so scanning a rollout allocates
 * nothing (closures per call cost more than the scan of a short rollout; see bench/).
 */
interface Walk {
  bound: Bound;
  ids: ArrayLike<number>;
  out: Segments;
  state: number;
  /** Where the current model turn began: a line-start marker may also stand there. */
  turnToken: number;
  turnOffset: number;
}
const walk: Walk = { bound: undefined as never, ids: [], out: undefined as never, state: 0, turnToken: -1, turnOffset: 0 };

/** The state an event leads to from the current one, reporting the diagnostics the transition raises. */
function fire(eventIndex: number, at: number): number {
  const { grammar } = walk.bound;
  const index = walk.state * grammar.events.length + eventIndex;
  const raised = grammar.codes[index];
  if (raised) for (const code of raised) report(walk.out, code, at);
  return grammar.next[index];
}

/** Move to `target`, whose bytes begin at (t, o). */
function enter(target: number, t: number, o: number): void {
  const { states } = walk.bound.grammar;
  const { offsets } = walk.bound.table;
  const ids = walk.ids;
  const before = states[walk.state].role;
  walk.state = target;
  const role = states[target].role;
  if (role === undefined) return;
  // A state that begins right after a token's last byte begins at the next token: no straddle.
  if (o > 0 && o === offsets[ids[t] + 1] - offsets[ids[t]]) { t++; o = 0; }
  if (role === 'action' && before !== 'action') { walk.turnToken = t; walk.turnOffset = o; }
  walk.out.push(t, o, target);
}

function atLineStart(t: number, o: number): boolean {
  if (t === walk.turnToken && o === walk.turnOffset) return true;
  if (t === 0 && o === 0) return true;
  const { table } = walk.bound;
  retreat(table, walk.ids, t, o, 1);
  return table.pieces[table.offsets[walk.ids[atToken]] + atOffset] === 0x0a;
}

/**
 * Scan one rollout. `promptLength` < 0 means: find the prompt's end from the grammar.
 * Throws RolloutError for input that cannot be masked at all.
 */
export function scanRollout(bound: Bound, ids: ArrayLike<number>, promptLength: number, out: Segments): void {
  const { grammar, table, isPadding, budgets } = bound;
  const { next, states, replies, handovers, event } = grammar;
  const E = grammar.events.length;
  const n = ids.length;
  out.reset();

  if (promptLength > n) throw new RolloutError(`prompt_length ${promptLength} is longer than the rollout (${n} tokens)`);

  // A run of padding tokens closes the stream; nothing in it is the model's or the environment's text.
  let padStart = n;
  while (padStart > 0 && isPadding[ids[padStart - 1]]) padStart--;
  if (padStart < n && isPadding[ids[padStart]] === 3) padStart++;

  walk.bound = bound;
  walk.ids = ids;
  walk.out = out;
  walk.state = grammar.initial;
  walk.turnToken = -1;
  walk.turnOffset = 0;
  out.push(0, 0, walk.state);
  let token = 0;
  let offset = 0;
  let replyStart = 0;

  if (promptLength >= 0) {
    checkIds(table, ids, 0, promptLength);
    token = promptLength;
    enter(fire(event.promptEnd, token), token, 0);
  }

  for (;;) {
    const info = states[walk.state];

    if (info.handover >= 0) {
      // The environment may reply only here. Try each allowed reply's first bytes.
      if (token < n && offset > 0 && offset === table.offsets[ids[token] + 1] - table.offsets[ids[token]]) { token++; offset = 0; }
      let reply = -1;
      for (const r of handovers[info.handover].replies) {
        if (matchForward(table, ids, padStart, token, offset, replies[r].open ?? replies[r].text!)) { reply = r; break; }
      }
      if (reply >= 0) {
        const endToken = atToken;
        const endOffset = atOffset;
        enter(fire(replies[reply].event, token), token, offset);
        replyStart = token;
        token = endToken;
        offset = endOffset;
        // A fixed text is the whole reply; an envelope goes on until its close.
        if (replies[reply].text) enter(fire(event.replyEnd, token), token, offset);
        continue;
      }
      // Only whitespace left before the padding (a chat template's newline after the last turn): the end.
      if (onlyWhitespaceBefore(table, ids, token, offset, padStart)) {
        enter(fire(event.end, token), token, offset);
        break;
      }
      enter(fire(event.continue, token), token, offset);
      continue;
    }

    if (info.dfa < 0) break; // done, or a state with nothing to hear

    let limit = padStart;
    const budget = info.reply >= 0 ? budgets[info.reply] : 0;
    if (budget > 0 && replyStart + budget < limit) limit = replyStart + budget;

    const literalIndex = runDfa(bound, info.dfa, ids, limit, token, offset);
    if (literalIndex < 0) {
      if (info.reply >= 0 && limit < padStart) {
        // The environment cut this reply at its budget; the model writes again from the next token.
        report(out, 'reply-truncated', limit - 1, info.reply);
        token = limit;
        offset = 0;
        enter(fire(event.replyEnd, token), token, 0);
        continue;
      }
      token = limit;
      offset = 0;
      break;
    }

    const literal = grammar.dfas[info.dfa].literals[literalIndex];
    const endToken = atToken;
    const endOffset = atOffset;

    if (literal.interrupt >= 0) {
      // Only a trigger matched: the whole fixed text must stand around it, from `back` bytes before its end.
      const reply = replies[literal.interrupt];
      if (retreat(table, ids, endToken, endOffset, literal.back)) {
        const startToken = atToken;
        const startOffset = atOffset;
        if (matchForward(table, ids, padStart, startToken, startOffset, reply.text!)) {
          token = atToken;
          offset = atOffset;
          enter(fire(literal.event, startToken), startToken, startOffset);
          replyStart = startToken;
          enter(fire(event.replyEnd, token), token, offset);
          continue;
        }
      }
      token = endToken;
      offset = endOffset;
      continue;
    }

    if (literal.endsBefore || literal.opens) {
      // The literal belongs to what it starts: the next state begins at its first byte.
      retreat(table, ids, endToken, endOffset, literal.bytes.length);
      const startToken = atToken;
      const startOffset = atOffset;
      let attributes: Record<string, string> | undefined;
      let afterToken = endToken;
      let afterOffset = endOffset;
      if (literal.lineStart && !atLineStart(startToken, startOffset)) {
        token = endToken; offset = endOffset;
        continue;
      }
      if (literal.attributes) {
        // `<invoke` must end its name here, and the tag runs to `>`: parse5 reads its attributes.
        const tag = readTagRest(table, ids, padStart, endToken, endOffset);
        if (!tag) { token = endToken; offset = endOffset; continue; }
        attributes = tag.attributes;
        afterToken = atToken;
        afterOffset = atOffset;
      }
      enter(fire(literal.event, startToken), startToken, startOffset);
      if (attributes) out.attributes.set(out.count - 1, attributes);
      // An ends_before literal is heard again by the model's automaton, which gives it its own meaning.
      token = literal.endsBefore ? startToken : afterToken;
      offset = literal.endsBefore ? startOffset : afterOffset;
      continue;
    }

    token = endToken;
    offset = endOffset;
    const target = fire(literal.event, endToken);
    if (literal.event === event.promptEnd || literal.event === event.replyEnd) {
      // Text the template may add after a header (an inserted empty think block) is still not the model's.
      const isPrompt = literal.event === event.promptEnd;
      const optional = isPrompt ? grammar.promptOptional : replies[info.reply].closeOptional;
      if (isPrompt ? bound.promptOptionalOn : bound.replyOptionalOn[info.reply]) for (const extra of optional) {
        if (matchForward(table, ids, padStart, token, offset, extra)) { token = atToken; offset = atOffset; break; }
      }
    }
    enter(target, token, offset);
  }

  // A state with nothing to hear stops the walk early: the ids it never saw are still checked.
  checkIds(table, ids, offset > 0 ? token + 1 : token, padStart);
  const last = states[walk.state];
  if (last.role === 'prompt' && promptLength < 0 && n > 0) {
    report(out, 'no-prompt-end', 0);
  } else if (last.reply >= 0 && budgets[last.reply] === 0 && replies[last.reply].text === undefined) {
    report(out, 'unclosed-reply', replyStart, last.reply);
  }
  if (padStart < n && last.role !== 'trailing') {
    const done = next[walk.state * E + event.end];
    if (done >= 0) out.push(padStart, 0, done);
  }
}

function describe(code: DiagnosticCode, bound: Bound, ids: ArrayLike<number>, at: number, reply: number): string {
  const piece = bound.table.pieces.subarray(bound.table.offsets[ids[at]], bound.table.offsets[ids[at] + 1]);
  const { grammar } = bound;
  const name = reply >= 0 ? grammar.replies[reply].name : '';
  const option = reply >= 0 && typeof grammar.replies[reply].budget === 'string' ? grammar.replies[reply].budget : 'max_tokens';
  switch (code) {
    case 'reply-truncated': return `reply "${name}" ended by its budget of ${bound.budgets[reply]} tokens (max_tokens) before its closing text`;
    case 'no-prompt-end': return `the prompt's end (${grammar.grammar.prompt.ends_after.map((literal) => JSON.stringify(literal)).join(' or ')}) was not found and no prompt_length was given: every token is prompt`;
    case 'unclosed-reply': return `the stream ends inside reply "${name}" opened at token ${at}, which never closed; if the environment cut it, set its max_tokens option (e.g. --set ${option}=N)`;
    case 'nested-tag': return `a tag opens at token ${at} (${show(piece)}) while another is still open`;
    case 'observation-tag-in-action': return `the model wrote an environment-looking tag itself at token ${at} (${show(piece)}); it is the model's text, so it stays action`;
    case 'missing-reply': return `no reply the protocol allows follows the handover ending at token ${at}; the text after it is kept as the model's (or, after the model's stop token, as nobody's)`;
    case 'text-after-end': return `the model kept writing after the episode-ending tag at token ${at}; that text is kept as action`;
    case 'reply-in-reply': return `a reply's opening text appears again at token ${at}, inside a reply that has not closed: the environment probably cut the earlier reply (its close is missing), so a model turn was read as observation; set the reply's max_tokens option (e.g. --set max_obs_tokens=N)`;
    default: return code;
  }
}
