/**
 * Byte automata: one DFA over the literals a group of machine states can hear (Aho–Corasick made a full
 * table, one load per byte; compile.ts groups the states), and the choice of what to look for to find an
 * interrupting text.
 */

export interface Dfa {
  /**
   * `step[state * 256 + byte]`: the next state, or `~literal` when that byte completes a literal (the
   * scanner then starts again from the root). One load per byte.
   */
  step: Int32Array;
  /**
   * Per literal, its accepting state. A literal the current state does not take (another tag's close, in the
   * automaton all the model's kinds share) is passed over by going on from there, so the bytes it ends
   * with can still begin a literal that counts.
   */
  acceptState: Int32Array;
  literals: DfaLiteral[];
  /** Bytes that leave the root: a token without any of them cannot start a match. */
  firstBytes: Uint8Array;
}

export interface DfaLiteral {
  /** The literal as the grammar writes it (an interrupting reply: its whole text). */
  source: string;
  /** What the automaton looks for: the literal's bytes (the scanner's bytes, once bound to a tokenizer), or a trigger. */
  bytes: Uint8Array;
  /** Bytes from where the literal's meaning starts to the end of the match (its length, or more for a trigger). */
  back: number;
  event: number;
  /** The literal starts the next state rather than ending this one (ReAct's reply ends before `Thought:`). */
  endsBefore: boolean;
  /** A trigger for this interrupting reply: verify its whole text from the trigger's start. */
  interrupt: number;
  /** A template header (index into the grammar's `headers`): observation, then the model's turn again. */
  header: number;
  /** Counts only at the start of a line or of the model's turn. */
  lineStart: boolean;
  /** Opens a tag: the tag's kind begins at the literal's first byte. */
  opens: boolean;
  /** A tag name prefix: the tag runs to `>`, its attributes are read. */
  attributes: boolean;
}

const isSpace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
const startsWith = (a: Uint8Array, b: Uint8Array) => b.length <= a.length && b.every((byte, i) => a[i] === byte);

/**
 * What the scanner looks for to find an interrupting text (in bytes): a piece of it that no other model
 * literal overlaps, starting at its first non-space byte (a leading newline would send every token holding
 * one through the byte automaton). Returns the piece and how many bytes of the text precede its end.
 */
export function interruptTrigger(text: Uint8Array, others: Uint8Array[]): { trigger: Uint8Array; bytesToEnd: number } {
  let start = 0;
  while (start < text.length - 1 && isSpace(text[start])) start++;
  let end = text.length;
  for (let at = start + 1; at < text.length; at++) {
    const rest = text.subarray(at);
    if (others.some((literal) => startsWith(rest, literal) || startsWith(literal, rest))) { end = at; break; }
  }
  return { trigger: text.slice(start, end), bytesToEnd: end };
}

/**
 * Aho–Corasick over bytes, made a full table: `delta[state * 256 + byte]` is the next state, `fail[state]` the
 * state of its longest proper suffix that is also a prefix of some needle, `ends[state]` the first needle that
 * ends there (-1: none), `stateOf[needle]` where each needle ends (0, the root, for an empty one), `order` every
 * state but the root, parents before children (a state's failure state always comes before it).
 */
export interface ByteAutomaton { delta: Int32Array; fail: Int32Array; ends: Int32Array; stateOf: Int32Array; order: number[] }

export function byteAutomaton(needles: readonly Uint8Array[]): ByteAutomaton {
  const children: Array<Map<number, number>> = [new Map()];
  const stateOf = new Int32Array(needles.length);
  needles.forEach((needle, index) => {
    let state = 0;
    for (const byte of needle) {
      let next = children[state].get(byte);
      if (next === undefined) { next = children.length; children.push(new Map()); children[state].set(byte, next); }
      state = next;
    }
    stateOf[index] = state;
  });
  const count = children.length;
  const ends = new Int32Array(count).fill(-1);
  for (let index = needles.length - 1; index >= 0; index--) if (stateOf[index] !== 0) ends[stateOf[index]] = index;
  const delta = new Int32Array(count * 256);
  const fail = new Int32Array(count);
  const order: number[] = [];
  for (const [byte, next] of children[0]) { delta[byte] = next; order.push(next); }
  for (let head = 0; head < order.length; head++) {
    const state = order[head];
    // A state moves like its failure state, except on its own children: copy that row, then write the children
    // (a state has a few children; looking each of the 256 bytes up was most of a grammar's compile time).
    delta.copyWithin(state * 256, fail[state] * 256, fail[state] * 256 + 256);
    for (const [byte, next] of children[state]) {
      fail[next] = delta[fail[state] * 256 + byte];
      delta[state * 256 + byte] = next;
      order.push(next);
    }
  }
  return { delta, fail, ends, stateOf, order };
}

/**
 * The literals one automaton hears, checked as buildDfa would check them, without its tables: a compiled grammar
 * keeps only these, and binding to a tokenizer builds the automaton in the scanner's bytes (detect compiles
 * every bundled grammar, and a table built in the text's bytes was never read).
 */
export function literalGroup(literals: DfaLiteral[]): { literals: DfaLiteral[] } {
  const seen = new Set<string>();
  for (const literal of literals) {
    const key = Buffer.from(literal.bytes.buffer, literal.bytes.byteOffset, literal.bytes.length).toString('latin1');
    if (!literal.bytes.length || seen.has(key)) throw heardTwice(literal);
    seen.add(key);
  }
  return { literals };
}

const heardTwice = (literal: DfaLiteral) => new Error(`internal: literal ${JSON.stringify(literal.source)} is empty or heard twice in one automaton`);

export function buildDfa(literals: DfaLiteral[]): Dfa {
  // check.ts rejects one literal inside another, so each accepting state accepts exactly its own literal.
  const { delta, ends, stateOf } = byteAutomaton(literals.map((literal) => literal.bytes));
  literals.forEach((literal, index) => {
    if (stateOf[index] === 0 || ends[stateOf[index]] !== index) throw heardTwice(literal);
  });
  const firstBytes = new Uint8Array(256);
  for (let byte = 0; byte < 256; byte++) firstBytes[byte] = delta[byte] !== 0 ? 1 : 0;
  // The transition table becomes the step table in place (it is this automaton's own; a second table of the
  // same size was most of binding's memory).
  const step = delta;
  for (let at = 0; at < step.length; at++) {
    const target = step[at];
    if (ends[target] >= 0) step[at] = ~ends[target];
  }
  return { step, acceptState: stateOf, literals, firstBytes };
}
