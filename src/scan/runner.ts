/**
 * The scan of one rollout, as the protocol reads: the prompt, then model turns, handovers and replies,
 * then padding. Each step below looks at the bytes around the cursor and moves the machine; the comment
 * on each shows those bytes (`^` is the cursor).
 *
 * Shape of the hot loop (docs/measurements.md): a byte automaton over the literals a state can hear (all
 * the model's kinds share one, and a literal counts only where the machine takes its event); a token none
 * of whose bytes can start a literal is skipped with one table lookup, so most tokens cost one load and
 * one test. Policy lives in the tables compiled from the xstate machine.
 */
import type { DfaLiteral, StateInfo } from '../grammar/compile.ts';
import { KNOWN } from '../tokenizer/table.ts';
import { RolloutError } from '../diagnostics.ts';
import { MEMO_MAX_PIECE, MEMO_OFFSET_BITS, MEMO_OFFSET_MASK, MEMO_SLOT_BITS, type Bound, type OptionalCheck } from './bind.ts';
import { atLineStart, atTokenEnd, checkIds, Cursor, findTagEnd, matchForward, onlyWhitespaceBefore, pieceLength, retreat, skipWhitespace, unknownToken } from './cursor.ts';

/** A slot of the memo is the top MEMO_SLOT_BITS bits of a 32-bit hash. */
const MEMO_SHIFT = 32 - MEMO_SLOT_BITS;

/**
 * Scan one rollout into `cursor.out`. `promptLength` < 0 means: find the prompt's end from the grammar.
 * Throws RolloutError for input that cannot be masked at all.
 */
export function scanRollout(bound: Bound, ids: ArrayLike<number>, promptLength: number, cursor: Cursor): void {
  const n = ids.length;
  if (promptLength > n) throw new RolloutError(`prompt_length ${promptLength} is longer than the rollout (${n} tokens)`);
  const c = cursor;
  c.begin(bound, ids);
  const { states } = bound.grammar;
  const { dfas } = bound;
  findPadding(c);
  // A given prompt is the prompt even where its last tokens look like padding: padding starts after it.
  if (promptLength > c.padStart) c.padStart = promptLength;
  c.out.push(0, 0, c.state);
  if (promptLength >= 0) atGivenPromptEnd(c, promptLength);

  for (;;) {
    const info = states[c.state];
    if (info.handover >= 0) {
      if (atHandover(c, info)) continue;
      break;
    }
    if (info.dfa < 0) break; // done, or a state with nothing to hear
    const limit = limitOf(c, info);
    let literalIndex = runDfa(c, info.dfa, limit, 0);
    // The model's kinds share one automaton, and a literal counts only where the machine takes its event.
    // Another's (a close of a tag not open) is passed over: the scan goes on from its accepting state, so
    // its last bytes can still begin a literal that counts.
    while (literalIndex >= 0 && info.takes[literalIndex] === 0) {
      c.moveToEnd();
      literalIndex = runDfa(c, info.dfa, limit, dfas[info.dfa].acceptState[literalIndex]);
    }
    if (literalIndex < 0) {
      if (atBudget(c, info, limit)) continue;
      break;
    }
    const literal = dfas[info.dfa].literals[literalIndex];
    if (literal.interrupt >= 0) atInterruptTrigger(c, literal);
    else if (literal.header >= 0) atHeader(c, literal);
    else if (literal.endsBefore || literal.opens) atTagOpening(c, literal);
    else atPlainLiteral(c, literal, info);
  }
  finish(c, promptLength);
}

/**
 * Padding: a run of padding tokens closes the stream; nothing in it is the model's or the environment's.
 *
 *   …</answer><|im_end|><|endoftext|><|endoftext|>
 *             ^ padStart (the first is the model's own when it is also its stop token)
 */
function findPadding(c: Cursor): void {
  const { ids } = c;
  const { isPadding } = c.bound;
  let padStart = ids.length;
  while (padStart > 0 && isPadding[ids[padStart - 1]]) padStart--;
  if (padStart < ids.length && isPadding[ids[padStart]] === 3) padStart++;
  c.padStart = padStart;
}

/**
 * The prompt's length was given: its ids are checked, and the model begins right after it. Where the given
 * prompt ends right after one of the grammar's prompt ends or headers, the text the template may add there
 * (an empty think block a framework put at the start of the response, verl#2189) is the prompt's too, as
 * where the prompt's end is searched for: the same rollout reads the same with or without prompt_length.
 *
 *   …<|im_start|>assistant␊<think>…          …<|im_start|>assistant␊<think>␊␊</think>␊␊<think>…
 *                          ^ token promptLength                       ^ promptLength     ^ the model's
 */
function atGivenPromptEnd(c: Cursor, promptLength: number): void {
  checkIds(c.bound.table, c.ids, 0, promptLength);
  c.moveTo(promptLength, 0);
  if (promptLength > 0 && (endsWithAny(c, promptLength, c.bound.promptEnds) || endsWithAny(c, promptLength, c.bound.headers))) {
    skipOptional(c, c.bound.promptOptional, c.bound.promptOptionalOn, c.bound.promptOptionalCheck);
  }
  enter(c, fire(c, c.bound.grammar.event.promptEnd, c.token), c.token, c.offset);
}

/** Do the bytes of tokens [0, end) end with one of `literals`? The cursor is left at token `end`. */
function endsWithAny(c: Cursor, end: number, literals: Uint8Array[]): boolean {
  let found = false;
  for (let i = 0; i < literals.length && !found; i++) {
    found = retreat(c, end, 0, literals[i].length) && matchForward(c, end, c.atToken, c.atOffset, literals[i]);
  }
  c.moveTo(end, 0);
  return found;
}

/**
 * At a handover: the model has handed the turn over; only here may the environment reply. Try each
 * allowed reply's first bytes; else the episode ends (only whitespace left) or the model goes on.
 *
 *   </search>␊␊<information>Doc 1 …      </answer>␊<|endoftext|>
 *            ^                                    ^
 * Returns false when the walk ends here.
 */
function atHandover(c: Cursor, info: StateInfo): boolean {
  const { grammar, replyOpen, replyText } = c.bound;
  const { replies, handovers, event } = grammar;
  const ids = c.ids;
  // A handover right after a token's last byte stands at the next token.
  if (c.token < ids.length && atTokenEnd(c, c.token, c.offset)) c.moveTo(c.token + 1, 0);
  const token = c.token;
  const offset = c.offset;
  // Order: the model's own header (gpt-oss `<|end|><|start|>assistant`: its turn goes on), then the template's
  // header (before the replies, so a reply that opens with a bare `<|start_header_id|>` never takes it), then
  // the replies in the grammar's order.
  const continues = c.bound.modelContinues[info.handover];
  for (let i = 0; i < continues.length; i++) {
    if (can(c, event.modelContinues) && matchForward(c, c.padStart, token, offset, continues[i])) {
      const endToken = c.atToken;
      const endOffset = c.atOffset;
      enter(c, fire(c, event.modelContinues, token), token, offset);
      // A literal that is itself a handover (the end token after a tool-call block) is heard again by the model.
      if (c.bound.modelContinuesHandsOver[info.handover][i]) c.moveTo(token, offset);
      else c.moveTo(endToken, endOffset);
      return true;
    }
  }
  // The template's header for a further model turn (two assistant messages in a row), after its whitespace.
  if (c.bound.headers.length) {
    skipWhitespace(c, token, offset, c.padStart);
    const headerToken = c.atToken;
    const headerOffset = c.atOffset;
    for (let h = 0; h < c.bound.headers.length; h++) {
      // Only where the machine takes a header from this handover (found by fuzzing: gpt-oss's, after `<|call|>`).
      if (!can(c, event.headers[h]) || !matchForward(c, c.padStart, headerToken, headerOffset, c.bound.headers[h])) continue;
      const endToken = c.atToken;
      const endOffset = c.atOffset;
      enter(c, fire(c, event.headers[h], token), token, offset);
      c.replyStart = token;
      c.moveTo(endToken, endOffset);
      afterHeader(c);
      return true;
    }
  }
  // A stop string whose last part opens the next reply (`\n\nUser:`, GLM's `<|user|>`): the replies are looked
  // for from that part's first byte; it is the reply's only where the option says so, else the model's.
  let fromToken = token;
  let fromOffset = offset;
  const overlap = c.bound.overlapLength[info.handover];
  if (overlap > 0 && retreat(c, token, offset, overlap)) { fromToken = c.atToken; fromOffset = c.atOffset; }
  let reply = -1;
  for (const r of handovers[info.handover].replies) {
    if (matchForward(c, c.padStart, fromToken, fromOffset, replyOpen[r] ?? replyText[r]!)) { reply = r; break; }
  }
  if (reply >= 0) {
    const endToken = c.atToken;
    const endOffset = c.atOffset;
    const replyToken = c.bound.overlapToReply[info.handover] ? fromToken : token;
    const replyOffset = c.bound.overlapToReply[info.handover] ? fromOffset : offset;
    enter(c, fire(c, replies[reply].event, replyToken), replyToken, replyOffset);
    c.replyStart = token;
    c.moveTo(endToken, endOffset);
    // A fixed text is the whole reply; an envelope goes on until its close.
    if (replyText[reply]) enter(c, fire(c, event.replyEnd, endToken), endToken, endOffset);
    return true;
  }
  if (onlyWhitespaceBefore(c, token, offset, c.padStart)) {
    // A chat template's newline after the last turn, then padding: the end.
    enter(c, fire(c, event.end, token), token, offset);
    return false;
  }
  enter(c, fire(c, event.continue, token), token, offset);
  return true;
}

/** How far the current state's automaton may read: the padding, or a reply's token budget. */
function limitOf(c: Cursor, info: StateInfo): number {
  const budget = info.reply >= 0 ? c.bound.budgets[info.reply] : 0;
  return budget > 0 && c.replyStart + budget < c.padStart ? c.replyStart + budget : c.padStart;
}

/**
 * Nothing heard up to the limit. Inside a reply cut at its budget, the model writes again from the next
 * token; otherwise the walk ends.
 *
 *   ␊␊<information>Doc 1 … (max_obs_tokens reached) <think>…
 *                                                   ^ limit
 * Returns false when the walk ends here.
 */
function atBudget(c: Cursor, info: StateInfo, limit: number): boolean {
  c.moveTo(limit, 0);
  if (!(info.reply >= 0 && limit < c.padStart)) return false;
  c.out.note('reply-truncated', limit - 1, info.reply);
  enter(c, fire(c, c.bound.grammar.event.replyEnd, limit), limit, 0);
  return true;
}

/**
 * An interrupting reply's trigger was heard inside a model turn: the whole fixed text must stand around
 * it, beginning `back` bytes before the trigger's end. Then it is the environment's; else the model's text.
 *
 *   …no tags here␊My previous action is invalid. If I want to search, … Let me try again.␊<think>
 *                 ^ trigger ends …, text starts `back` bytes earlier (at the ␊)      ^ model again
 */
function atInterruptTrigger(c: Cursor, literal: DfaLiteral): void {
  const { grammar } = c.bound;
  const text = c.bound.replyText[literal.interrupt]!;
  const endToken = c.atToken;
  const endOffset = c.atOffset;
  if (retreat(c, endToken, endOffset, literal.back)) {
    const startToken = c.atToken;
    const startOffset = c.atOffset;
    // The text may not reach back into what an earlier state holds (the prompt's last newline, a reply's
    // closing newline, a tag): those bytes are already someone's, so this is not the whole text.
    if (startsBeforeCurrentState(c, startToken, startOffset)) { c.moveTo(endToken, endOffset); return; }
    if (matchForward(c, c.padStart, startToken, startOffset, text)) {
      c.moveToEnd();
      enter(c, fire(c, literal.event, startToken), startToken, startOffset);
      c.replyStart = startToken;
      enter(c, fire(c, grammar.event.replyEnd, c.token), c.token, c.offset);
      return;
    }
  }
  c.moveTo(endToken, endOffset);
}

/** Is (token, offset) before the first byte of the state the walk is in? */
function startsBeforeCurrentState(c: Cursor, token: number, offset: number): boolean {
  const out = c.out;
  const last = out.count - 1;
  if (atTokenEnd(c, token, offset)) { token++; offset = 0; }
  return token < out.token[last] || (token === out.token[last] && offset < out.offset[last]);
}

/**
 * A template header inside a model turn: never the model's. It is observation from its first byte, then
 * what the template may add after it (an empty think block), then the model's turn begins again.
 *
 *   <|start_header_id|>assistant<|end_header_id|>␊␊I will …   (verl prompt_ids ending before the header)
 *   ^ header (observation)                          ^ the model's
 */
function atHeader(c: Cursor, literal: DfaLiteral): void {
  const endToken = c.atToken;
  const endOffset = c.atOffset;
  retreat(c, endToken, endOffset, literal.bytes.length);
  const startToken = c.atToken;
  const startOffset = c.atOffset;
  enter(c, fire(c, literal.event, startToken), startToken, startOffset);
  c.replyStart = startToken;
  c.moveTo(endToken, endOffset);
  afterHeader(c);
}

/** After a header's last byte: the template's optional text, then the model's turn. */
function afterHeader(c: Cursor): void {
  skipOptional(c, c.bound.promptOptional, c.bound.promptOptionalOn, c.bound.promptOptionalCheck);
  enter(c, fire(c, c.bound.grammar.event.replyEnd, c.token), c.token, c.offset);
}

/**
 * Past the first switched-on optional literal that stands at the cursor, if any, and whose rules hold: it
 * ends a token where it must (`<think>\n` as a generation prompt's prefill ends one; inside a history
 * turn's `<think>\n\n</think>` its `\n` is half of one `\n\n` token), and the text it must be followed by follows.
 */
function skipOptional(c: Cursor, optional: Uint8Array[], on: boolean[], checks: OptionalCheck[]): void {
  for (let i = 0; i < optional.length; i++) {
    if (!on[i] || !matchForward(c, c.padStart, c.token, c.offset, optional[i])) continue;
    const endToken = c.atToken;
    const endOffset = c.atOffset;
    const { endsToken, followedBy } = checks[i];
    if (endsToken && endOffset !== pieceLength(c, endToken)) continue;
    if (followedBy && !matchForward(c, c.padStart, endToken, endOffset, followedBy)) continue;
    c.moveTo(endToken, endOffset);
    return;
  }
}

/**
 * A literal that belongs to what it starts: a tag opening (`<think>`, `<invoke name="x">`), or a reply's
 * `ends_before` text (ReAct's `Thought:`). The next state begins at the literal's first byte.
 *
 *   …reasoning␊Thought: I should …      <invoke name="search">
 *             ^ starts here              ^ starts here; the tag runs to `>`, its attributes read later
 */
function atTagOpening(c: Cursor, literal: DfaLiteral): void {
  const endToken = c.atToken;
  const endOffset = c.atOffset;
  retreat(c, endToken, endOffset, literal.bytes.length);
  const startToken = c.atToken;
  const startOffset = c.atOffset;
  if (literal.lineStart && !atLineStart(c, startToken, startOffset)) { c.moveTo(endToken, endOffset); return; }
  let afterToken = endToken;
  let afterOffset = endOffset;
  if (literal.attributes) {
    // `<invoke` must end its name here, and the tag must run to `>`.
    if (!findTagEnd(c, c.padStart, endToken, endOffset)) { c.moveTo(endToken, endOffset); return; }
    afterToken = c.atToken;
    afterOffset = c.atOffset;
  }
  enter(c, fire(c, literal.event, startToken), startToken, startOffset);
  if (literal.attributes) c.out.tagRanges.push(c.out.count - 1, endToken, endOffset, afterToken, afterOffset);
  // An ends_before literal is heard again by the model's automaton, which gives it its own meaning.
  if (literal.endsBefore) c.moveTo(startToken, startOffset);
  else c.moveTo(afterToken, afterOffset);
}

/**
 * A literal that ends what came before: a tag's close, the prompt's end, a reply's close, a handover.
 * After the prompt's end or a reply's close, text the template may add (an empty think block) is skipped.
 *
 *   <|im_start|>assistant␊<think>␊␊</think>␊␊…      </information>␊␊<think>
 *                         ^ optional text after       ^ the model's from here
 */
function atPlainLiteral(c: Cursor, literal: DfaLiteral, info: StateInfo): void {
  const { grammar } = c.bound;
  const { event } = grammar;
  c.moveToEnd();
  if (literal.event === event.promptEnd) skipOptional(c, c.bound.promptOptional, c.bound.promptOptionalOn, c.bound.promptOptionalCheck);
  else if (literal.event === event.replyEnd) {
    skipOptional(c, c.bound.closeOptional[info.reply], c.bound.replyOptionalOn[info.reply], c.bound.closeOptionalCheck[info.reply]);
    // A repeating reply (tool outputs back to back): its own open right after the close continues it.
    const open = c.bound.replyOpen[info.reply];
    if (grammar.replies[info.reply].repeats && matchForward(c, c.padStart, c.token, c.offset, open!)) { c.moveToEnd(); return; }
  }
  enter(c, fire(c, literal.event, c.token), c.token, c.offset);
}

/**
 * The walk has stopped: ids it never saw are still checked, what stayed open is reported, and the
 * closing padding gets its own state.
 *
 *   …</answer><|im_end|><|endoftext|>
 *                       ^ padStart: trailing
 */
function finish(c: Cursor, promptLength: number): void {
  const { table, grammar, budgets } = c.bound;
  const { states, next, event } = grammar;
  const ids = c.ids;
  const n = ids.length;
  checkIds(table, ids, c.offset > 0 ? c.token + 1 : c.token, c.padStart);
  const last = states[c.state];
  if (last.role === 'prompt' && promptLength < 0 && n > 0) {
    c.out.note('no-prompt-end', 0);
  } else if (last.reply >= 0 && budgets[last.reply] === 0 && c.bound.replyText[last.reply] === undefined) {
    c.out.note('unclosed-reply', c.replyStart, last.reply);
  }
  if (c.padStart < n && last.role !== 'trailing') {
    const done = next[c.state * grammar.events.length + event.end];
    if (done >= 0) c.out.push(c.padStart, 0, done);
  }
}

/**
 * The state an event leads to from the current one, noting the diagnostics the transition raises (with
 * the reply being read, if any: `reply-in-reply` names it).
 */
function fire(c: Cursor, eventIndex: number, at: number): number {
  const { grammar } = c.bound;
  const index = c.state * grammar.events.length + eventIndex;
  const raised = grammar.codes[index];
  if (raised) for (const code of raised) c.out.note(code, at, grammar.states[c.state].reply);
  return grammar.next[index];
}

/** Does the machine take this event from the current state? */
function can(c: Cursor, eventIndex: number): boolean {
  const { grammar } = c.bound;
  return grammar.next[c.state * grammar.events.length + eventIndex] >= 0;
}

/** Move to `target`, whose bytes begin at (t, o). */
function enter(c: Cursor, target: number, t: number, o: number): void {
  const { states } = c.bound.grammar;
  const before = states[c.state].role;
  c.state = target;
  const role = states[target].role;
  if (role === undefined) return;
  // A state that begins right after a token's last byte begins at the next token: no straddle.
  if (atTokenEnd(c, t, o)) { t++; o = 0; }
  if (role === 'action' && before !== 'action') { c.turnToken = t; c.turnOffset = o; }
  c.out.push(t, o, target);
}

/**
 * Run automaton `d` from the cursor, in automaton state `from`, up to token `limit`. Returns the accepted
 * literal's index with its end in atToken/atOffset, or -1. Throws on an id outside the vocabulary.
 */
function runDfa(c: Cursor, d: number, limit: number, from: number): number {
  const bound = c.bound;
  const ids = c.ids;
  const { pieces, offsets, flags, size } = bound.scan;
  const step = bound.dfas[d].step;
  const skip = bound.skip[d];
  const { memoState, memoId, memoResult } = bound.memo[d];
  // The memo's layout in locals: the loop below reads them per token.
  const offsetBits = MEMO_OFFSET_BITS;
  const offsetMask = MEMO_OFFSET_MASK;
  const maxPiece = MEMO_MAX_PIECE;
  const slotShift = MEMO_SHIFT;
  let state = from;
  let t = c.token;
  let o = c.offset;
  while (t < limit) {
    if (state === 0 && o === 0) {
      while (t < limit && skip[ids[t]] === 1) t++;
      if (t === limit) break;
    }
    const id = ids[t];
    const base = offsets[id];
    if (o === 0 && !(id < size && (flags[id] & KNOWN))) throw unknownToken(bound.table, t, id);
    if (o === 0 && offsets[id + 1] - base < maxPiece) {
      // The same token from the same state always ends the same way (the prompt repeats across rollouts,
      // tags and words recur): remember it instead of stepping its bytes again.
      const slot = (Math.imul(state ^ (id << 7), 0x9e3779b1) >>> slotShift);
      let result: number;
      if (memoState[slot] === state && memoId[slot] === id) result = memoResult[slot];
      else {
        result = state;
        for (let p = base, end = offsets[id + 1]; p < end; p++) {
          result = step[(result << 8) | pieces[p]];
          if (result < 0) { result = ~(((~result) << offsetBits) | (p - base + 1)); break; }
        }
        memoState[slot] = state;
        memoId[slot] = id;
        memoResult[slot] = result;
      }
      if (result < 0) {
        c.atToken = t;
        c.atOffset = ~result & offsetMask;
        return (~result) >>> offsetBits;
      }
      state = result;
      t++;
      continue;
    }
    for (let p = base + o, end = offsets[id + 1]; p < end; p++) {
      state = step[(state << 8) | pieces[p]];
      if (state < 0) {
        c.atToken = t;
        c.atOffset = p - base + 1;
        return ~state;
      }
    }
    o = 0;
    t++;
  }
  c.atToken = limit;
  c.atOffset = 0;
  return -1;
}
