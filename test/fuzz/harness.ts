/**
 * What the fuzzing checks and what it feeds, shared by the bounded run in `npm test` (test/unit/fuzz.test.ts)
 * and the long one (`npm run fuzz`, test/fuzz/run.ts).
 *
 * Inputs: every bundled sample stream (each suite's rollouts and re-tokenized twins, with its own grammar and
 * tokenizer), mutated the ways streams get broken (splice in a piece of another stream, delete, duplicate,
 * swap, reverse, truncate, insert a grammar literal spelled in real token ids); and random grammars over a
 * small synthetic vocabulary, with streams made of their literals and random text cut at random token edges.
 *
 * Properties, for every input and every option set: mask() returns (no crash); spans tile [0, n) with no
 * token claimed twice; the mask is 0/1 only and equals the spans' roles; the same input gives the same
 * result again and from another Masker built on per-state automata; maskBatch over several rollouts equals
 * mask() of each.
 * Nothing here runs the code under test to get expectations: every property compares the masker with itself
 * or with the structure it promises.
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { buildByteTable, compileGrammar, createMasker, loadGrammar, loadTokenizer, Masker, type ByteTable, type CompiledGrammar, type OptionValues } from '../../src/index.ts';
import { checkGrammar } from '../../src/grammar/check.ts';
import { readGrammar } from '../../src/grammar/schema.ts';
import { modelLiterals } from '../../src/grammar/check.ts';
import { buildDfa, type Dfa } from '../../src/grammar/automata.ts';
import type { MaskResult } from '../../src/masker.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** A grammar bound to a tokenizer, under several option sets, with streams to mutate and literals to insert. */
export interface Subject {
  name: string;
  maskers: Masker[];
  /**
   * A second Masker per option set, on the per-state automata (`perStateAutomata`): results must depend
   * neither on which instance ran nor on the model's kinds sharing one automaton.
   */
  twins: Masker[];
  streams: number[][];
  /** The grammar's literals spelled in the tokenizer's ids (greedy longest pieces: real ids, any segmentation). */
  literals: number[][];
}

/** Every literal a grammar declares, as text. */
function grammarLiterals(compiled: CompiledGrammar): string[] {
  const grammar = compiled.grammar;
  const out = modelLiterals(grammar).map((item) => item.literal);
  out.push(...grammar.prompt.ends_after, ...grammar.prompt.then_optional, ...grammar.padding);
  for (const reply of Object.values(grammar.replies)) for (const literal of [reply.open, reply.close, reply.ends_before, reply.text]) if (literal) out.push(literal);
  return [...new Set(out)];
}

/** Spell `text` in ids of `table`, longest piece first (any id sequence whose bytes are the text is a real input). */
export function spell(table: ByteTable, text: string, byPiece = pieceIndex(table)): number[] | undefined {
  const bytes = Buffer.from(text, 'utf8');
  const ids: number[] = [];
  for (let at = 0; at < bytes.length;) {
    let found = -1;
    let length = Math.min(16, bytes.length - at);
    for (; length > 0; length--) {
      const id = byPiece.get(bytes.toString('latin1', at, at + length));
      if (id !== undefined) { found = id; break; }
    }
    if (found < 0) return undefined;
    ids.push(found);
    at += length;
  }
  return ids;
}

const indexes = new WeakMap<ByteTable, Map<string, number>>();
function pieceIndex(table: ByteTable): Map<string, number> {
  let index = indexes.get(table);
  if (index) return index;
  index = new Map();
  for (let id = 0; id < table.size; id++) {
    const length = table.offsets[id + 1] - table.offsets[id];
    if (length === 0 || length > 16) continue;
    const key = Buffer.from(table.pieces.buffer, table.pieces.byteOffset + table.offsets[id], length).toString('latin1');
    if (!index.has(key)) index.set(key, id);
  }
  indexes.set(table, index);
  return index;
}

function optionSets(compiled: CompiledGrammar): OptionValues[] {
  const sets: OptionValues[] = [{}, { straddle: 1 }, { after_end: 1, straddle: 1 }];
  for (const [name, spec] of Object.entries(compiled.grammar.options)) {
    if (name === 'straddle' || name === 'after_end') continue;
    if (spec.values) for (const value of spec.values) sets.push({ [name]: value });
    else sets.push({ [name]: 3 }, { [name]: 40 });
  }
  return sets;
}

/** One subject per bundled sample suite whose tokenizer is installed. */
export async function sampleSubjects(): Promise<Subject[]> {
  const subjects: Subject[] = [];
  const folder = join(ROOT, 'samples');
  // Suites share tokenizers and grammars: each is loaded (and bound) once.
  const tokenizers = new Map<string, ByteTable | undefined>();
  const grammars = new Map<string, CompiledGrammar>();
  for (const name of readdirSync(folder).sort()) {
    const suiteFile = join(folder, name, 'suite.json');
    if (!existsSync(suiteFile)) continue;
    const suite = JSON.parse(readFileSync(suiteFile, 'utf8'));
    const tokenizerSpec = suite.tokenizer.startsWith('.') ? join(folder, name, suite.tokenizer) : suite.tokenizer;
    if (!tokenizers.has(tokenizerSpec)) tokenizers.set(tokenizerSpec, await loadTokenizer(tokenizerSpec).then((loaded) => loaded.table, () => undefined));
    const table = tokenizers.get(tokenizerSpec);
    if (!table) continue; // not installed here
    const grammarSpec = suite.grammar.endsWith('.json') ? join(folder, name, suite.grammar) : suite.grammar;
    if (!grammars.has(grammarSpec)) grammars.set(grammarSpec, loadGrammar(grammarSpec));
    const compiled = grammars.get(grammarSpec)!;
    const streams: number[][] = [];
    for (const file of [suite.rollouts, suite.retokenized]) {
      if (!file || !existsSync(join(folder, name, file))) continue;
      for (const line of readFileSync(join(folder, name, file), 'utf8').split('\n')) if (line.trim()) streams.push(JSON.parse(line).tokens);
    }
    if (!streams.length) continue;
    const sets = optionSets(compiled).map((options) => ({ ...suite.options, ...options }));
    const literals = grammarLiterals(compiled).map((text) => spell(table, text)).filter((ids): ids is number[] => !!ids && ids.length > 0);
    subjects.push({
      name,
      maskers: sets.map((options) => new Masker(compiled, table, options)),
      twins: sets.map((options) => new Masker(perStateAutomata(compiled), table, options)),
      streams,
      literals,
    });
  }
  return subjects;
}

// ───────────────────────── mutations ─────────────────────────

export type Mutation =
  | { kind: 'splice'; at: number; from: number; start: number; length: number }
  | { kind: 'delete' | 'duplicate' | 'reverse'; at: number; length: number }
  | { kind: 'swap'; at: number; other: number; length: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'literal'; at: number; literal: number };

const position = fc.nat({ max: 1 << 20 });
const span = fc.integer({ min: 1, max: 64 });
export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('splice' as const), at: position, from: fc.nat(), start: position, length: span }),
  fc.record({ kind: fc.constantFrom('delete' as const, 'duplicate' as const, 'reverse' as const), at: position, length: span }),
  fc.record({ kind: fc.constant('swap' as const), at: position, other: position, length: span }),
  fc.record({ kind: fc.constant('truncate' as const), at: position }),
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('literal' as const), at: position, literal: fc.nat() }) },
);

export function mutate(subject: Subject, base: number[], mutations: Mutation[]): number[] {
  let tokens = base.slice();
  for (const m of mutations) {
    const n = tokens.length;
    const at = n ? m.at % (n + 1) : 0;
    switch (m.kind) {
      case 'splice': {
        const source = subject.streams[m.from % subject.streams.length];
        const start = source.length ? m.start % source.length : 0;
        tokens.splice(at, 0, ...source.slice(start, start + m.length));
        break;
      }
      case 'delete': tokens.splice(at, m.length); break;
      case 'duplicate': tokens.splice(at, 0, ...tokens.slice(at, at + m.length)); break;
      case 'reverse': tokens.splice(at, m.length, ...tokens.slice(at, at + m.length).reverse()); break;
      case 'swap': {
        const other = n ? m.other % (n + 1) : 0;
        const [a, b] = at <= other ? [at, other] : [other, at];
        const length = Math.min(m.length, b - a);
        const first = tokens.slice(a, a + length);
        const second = tokens.slice(b, b + length);
        tokens = [...tokens.slice(0, a), ...second, ...tokens.slice(a + length, b), ...first, ...tokens.slice(b + second.length)];
        break;
      }
      case 'truncate': tokens = tokens.slice(0, at); break;
      case 'literal': if (subject.literals.length) tokens.splice(at, 0, ...subject.literals[m.literal % subject.literals.length]); break;
    }
  }
  return tokens;
}

/** One fuzzed rollout: a subject, a stream, mutations, an option set and maybe a prompt_length. */
export interface Case { subject: number; stream: number; mutations: Mutation[]; options: number; promptLength: number | null }
export const caseOf = fc.record({
  subject: fc.nat(),
  stream: fc.nat(),
  mutations: fc.array(mutation, { maxLength: 4 }),
  options: fc.nat(),
  promptLength: fc.option(fc.nat(), { freq: 4 }),
});

// ───────────────────────── properties ─────────────────────────

/** Spans tile [0, n), none empty, no token claimed twice; the mask is 0/1 and equals the spans' roles. */
export function checkStructure(tokens: ArrayLike<number>, result: MaskResult): void {
  const n = tokens.length;
  if (result.mask.length !== n) throw new Error(`mask has ${result.mask.length} values for ${n} tokens`);
  let at = 0;
  for (const item of result.spans) {
    if (item.start !== at) throw new Error(`span ${JSON.stringify(item)} starts at ${item.start}, expected ${at}: ${item.start < at ? 'tokens claimed twice' : 'tokens unclaimed'}`);
    if (item.end <= item.start) throw new Error(`empty span ${JSON.stringify(item)}`);
    const value = item.role === 'action' ? 1 : 0;
    for (let t = item.start; t < item.end; t++) if (result.mask[t] !== value) throw new Error(`mask[${t}] = ${result.mask[t]} inside ${item.role} span ${JSON.stringify(item)}`);
    at = item.end;
  }
  if (at !== n) throw new Error(`spans end at ${at} of ${n}`);
}

const summary = (result: MaskResult) => JSON.stringify({ mask: Array.from(result.mask), spans: result.spans, diagnostics: result.diagnostics.map((item) => [item.code, item.token, item.message]) });

/** All properties for one rollout; throws with a description on the first that fails. */
export function checkRollout(masker: Masker, twin: Masker, tokens: number[], promptLength: number | undefined): MaskResult {
  const result = masker.mask(tokens, { promptLength });
  checkStructure(tokens, result);
  if (summary(masker.mask(tokens, { promptLength })) !== summary(result)) throw new Error('the same rollout masked twice gave two results');
  if (summary(twin.mask(tokens, { promptLength })) !== summary(result)) throw new Error('another Masker with the same grammar, tokenizer and options gave another result');
  return result;
}

/**
 * The same grammar with one automaton per scanning state, holding only the literals that state takes: the
 * shape compile.ts built before the model's kinds shared one automaton (where the scanner passes over a
 * literal the current kind does not take). Built here from the machine's table, not by the compiler.
 */
export function perStateAutomata(compiled: CompiledGrammar): CompiledGrammar {
  const E = compiled.events.length;
  const dfas: Dfa[] = [];
  const states = compiled.states.map((state, s) => {
    if (state.dfa < 0) return state;
    const literals = compiled.dfas[state.dfa].literals.filter((literal) => compiled.next[s * E + literal.event] >= 0);
    if (!literals.length) return { ...state, dfa: -1, takes: new Uint8Array(0) };
    dfas.push(buildDfa(literals));
    // Every literal of a state's own automaton is one it takes.
    return { ...state, dfa: dfas.length - 1, takes: new Uint8Array(literals.length).fill(1) };
  });
  return { ...compiled, states, dfas };
}

/** maskBatch over rollouts stored back to back equals mask() of each. */
export function checkBatch(masker: Masker, rollouts: Array<{ tokens: number[]; promptLength?: number }>): void {
  const total = rollouts.reduce((sum, item) => sum + item.tokens.length, 0);
  const ids = new Uint32Array(total);
  const starts = new Uint32Array(rollouts.length + 1);
  const promptLengths = new Int32Array(rollouts.length);
  let at = 0;
  rollouts.forEach((item, r) => { starts[r] = at; ids.set(item.tokens, at); at += item.tokens.length; promptLengths[r] = item.promptLength ?? -1; });
  starts[rollouts.length] = at;
  const mask = new Uint8Array(total).fill(7);
  masker.maskBatch(ids, starts, promptLengths, mask);
  rollouts.forEach((item, r) => {
    const alone = masker.mask(item.tokens, { promptLength: item.promptLength }).mask;
    const batch = mask.subarray(starts[r], starts[r + 1]);
    const t = alone.findIndex((value, i) => value !== batch[i]);
    if (t >= 0) throw new Error(`maskBatch differs from mask() in rollout ${r} at token ${t}: ${batch[t]} vs ${alone[t]}`);
  });
}

/** The rollout a Case stands for. */
export function realise(subjects: Subject[], item: Case) {
  const subject = subjects[item.subject % subjects.length];
  const tokens = mutate(subject, subject.streams[item.stream % subject.streams.length], item.mutations);
  const o = item.options % subject.maskers.length;
  const promptLength = item.promptLength === null ? undefined : item.promptLength % (tokens.length + 1);
  return { subject, tokens, masker: subject.maskers[o], twin: subject.twins[o], promptLength };
}

// ───────────────────────── random grammars ─────────────────────────

/** Literal material: tag-like and marker-like pieces over a small alphabet, so literals meet and overlap often. */
const word = fc.stringMatching(/^[a-c]{1,3}$/);
const literalText = fc.oneof(
  word.map((w) => `<${w}>`),
  word.map((w) => `</${w}>`),
  word.map((w) => `${w.toUpperCase()}:`),
  word.map((w) => `\n${w}\n`),
);

/** A reply: an envelope (with a budget, maybe repeating), or a fixed text (maybe interrupting). */
const randomReply = fc.oneof(
  fc.record({ open: literalText, close: literalText, max_tokens: fc.option(fc.integer({ min: 1, max: 20 })), repeats: fc.boolean() }),
  fc.record({ text: fc.tuple(fc.constantFrom('', '\n'), word, fc.constantFrom('', '\n')).map(([a, w, b]) => `${a}ERR ${w}${b}`), interrupts: fc.boolean() }),
);

/**
 * A random grammar object (it may be invalid: the check decides, and only valid ones are fuzzed): up to four
 * tags nesting by `contains`, a handover after a literal or after a tag, one or two replies, and sometimes a
 * template header (heard anywhere in a model turn).
 */
export const randomGrammar = fc.record({
  tags: fc.uniqueArray(fc.record({ name: fc.constantFrom('t1', 't2', 't3', 't4', 't5'), open: literalText, close: fc.option(literalText), lookalike: fc.boolean(), line_start: fc.boolean(), contains: fc.subarray(['t1', 't2', 't3']) }), { selector: (tag) => tag.name, minLength: 1, maxLength: 4 }),
  handoverAfter: fc.option(literalText),
  handoverAfterTag: fc.boolean(),
  replies: fc.array(randomReply, { minLength: 1, maxLength: 2 }),
  header: fc.option(fc.constantFrom('<|h|>\n', 'HDR:\n'), { freq: 3 }),
  promptEnd: fc.constantFrom('<s>\n', 'GO\n'),
}).map((spec) => {
  const names = spec.replies.map((_, i) => (i === 0 ? 'env' : `env${i + 1}`));
  const closable = spec.tags.find((tag) => tag.close !== null);
  const handovers: unknown[] = [];
  if (spec.handoverAfter) handovers.push({ after: spec.handoverAfter, replies: names });
  if (spec.handoverAfterTag && closable) handovers.push({ after_tag: closable.name, replies: names });
  return {
    name: 'random',
    prompt: { ends_after: [spec.promptEnd] },
    tags: Object.fromEntries(spec.tags.map((tag) => [tag.name, { open: tag.open, ...(tag.close ? { close: tag.close } : {}), lookalike: tag.lookalike, line_start: tag.line_start, contains: tag.contains.filter((name) => spec.tags.some((other) => other.name === name) && name !== tag.name) }])),
    handovers,
    replies: Object.fromEntries(spec.replies.map((reply, i) => [names[i], Object.fromEntries(Object.entries(reply).filter(([key, value]) => value !== null && !(key === 'repeats' && value === false)))])),
    ...(spec.header ? { headers: [spec.header] } : {}),
    padding: ['<pad>'],
  };
});

/** A grammar compiled, if valid; and a synthetic vocabulary: every single byte used, and pieces of literals. */
export function compileRandom(value: unknown): { compiled: CompiledGrammar; table: ByteTable; literals: string[] } | undefined {
  const { grammar } = readGrammar(value);
  if (!grammar) return undefined;
  if (checkGrammar(grammar).some((issue) => issue.severity === 'error')) return undefined;
  const compiled = compileGrammar(grammar);
  if (compiled.issues.some((issue) => issue.severity === 'error')) return undefined;
  const literals = grammarLiterals(compiled);
  const vocab: Record<string, number> = {};
  const add = (piece: string) => { if (!(piece in vocab)) vocab[piece] = Object.keys(vocab).length; };
  add('\n');
  for (let code = 0x20; code < 0x7f; code++) add(String.fromCharCode(code));
  for (const literal of literals) {
    add(literal);
    for (let i = 0; i + 2 <= literal.length; i++) add(literal.slice(i, i + 2));
    add(`${literal}\n`);
    add(`>${literal.slice(0, 2)}`);
  }
  add('<pad>');
  return { compiled, table: buildByteTable({ model: { vocab } } as never), literals };
}

/** A stream for a random grammar: literals and random text, cut into tokens at random edges. */
export const randomStream = fc.record({
  parts: fc.array(fc.oneof(fc.nat(), fc.stringMatching(/^[ a-cx\n<>/:]{0,6}$/)), { maxLength: 24 }),
  cuts: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 16 }),
  padding: fc.nat(3),
});

export function tokensOf(grammar: { table: ByteTable; literals: string[] }, stream: { parts: Array<number | string>; cuts: number[]; padding: number }, promptEnd: string): number[] {
  const text = `user text <a>\n${promptEnd}${stream.parts.map((part) => (typeof part === 'number' ? grammar.literals[part % grammar.literals.length] : part)).join('')}`;
  const index = pieceIndex(grammar.table);
  const ids: number[] = [];
  const bytes = Buffer.from(text, 'utf8');
  for (let at = 0, k = 0; at < bytes.length; k++) {
    // Try the cut's length first, then shorter: every single byte is in the vocabulary.
    let length = Math.min(stream.cuts[k % stream.cuts.length], bytes.length - at);
    let id = index.get(bytes.toString('latin1', at, at + length));
    while (id === undefined && length > 1) { length--; id = index.get(bytes.toString('latin1', at, at + length)); }
    if (id === undefined) throw new Error(`byte ${bytes[at]} is not in the synthetic vocabulary`);
    ids.push(id);
    at += length;
  }
  const pad = index.get('<pad>')!;
  for (let i = 0; i < stream.padding; i++) ids.push(pad);
  return ids;
}

const RANDOM_OPTION_SETS: OptionValues[] = [{}, { straddle: 1 }, { after_end: 1 }];

/**
 * The random-grammar property, shared by the bounded run in `npm test` and `npm run fuzz`: a random grammar
 * over a synthetic vocabulary, its streams cut at random token edges, each masked twice (determinism,
 * structure) and all of them as one batch (maskBatch = mask). False when the grammar was not valid.
 */
export function checkRandomGrammar(value: unknown, streams: Array<{ parts: Array<number | string>; cuts: number[]; padding: number }>, optionIndex: number): boolean {
  const random = compileRandom(value);
  if (!random) return false;
  const options = RANDOM_OPTION_SETS[optionIndex % RANDOM_OPTION_SETS.length];
  const masker = new Masker(random.compiled, random.table, options);
  const twin = new Masker(perStateAutomata(random.compiled), random.table, options);
  const rollouts = streams.map((stream) => ({ tokens: tokensOf(random, stream, (value as { prompt: { ends_after: string[] } }).prompt.ends_after[0]) }));
  for (const { tokens } of rollouts) checkRollout(masker, twin, tokens, undefined);
  checkBatch(masker, rollouts);
  return true;
}

export { fc, createMasker };

// Parquet: files from real writers, mutated, through the Parquet reader (test/fuzz/parquet-fuzz.ts).
export { checkParquetBytes, mutate as mutateParquet, parquetMutation, parquetSeeds } from './parquet-fuzz.ts';
