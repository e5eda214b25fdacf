/**
 * Optional template text with rules (schema.ts OptionalRule): `ends_token`, `followed_by`, `unless`. The case
 * they exist for is Qwen3.5's: a generation prompt ends `<think>\n` (the template's prefill, encoded on its
 * own, so it ends a token), while a history turn's empty block `<think>\n\n</think>\n\n` is encoded in one piece
 * (its "\n\n" one token). In the tiny vocabulary (kit.ts) `>\n\n` is one piece, so `<t>\n` inside `<t>\n\n</t>`
 * ends inside a token exactly as it does in Qwen's. Expectations by construction: pieces encoded on their own.
 */
import { describe, expect, it } from 'vitest';
import { Masker } from '../../src/masker.ts';
import { checkGrammar } from '../../src/grammar/check.ts';
import { readGrammar } from '../../src/grammar/schema.ts';
import { grammarOf, piecewise, table } from './kit.ts';

const OPTIONAL = [
  { text: '<t>\n', ends_token: true, unless: '$sft' },
  { text: '<t>\n', ends_token: true, followed_by: '\n</t>', when: '$sft' },
  '<t>\n\n</t>\n\n',
];
const spec = {
  name: 'mini-prefill',
  options: { sft: { default: 0, values: [0, 1] } },
  prompt: { ends_after: ['Go:\n'], then_optional: OPTIONAL },
  headers: ['Go:\n'],
  tags: { t: { open: '<t>', close: '</t>' } },
  handovers: [{ after: '|', replies: ['user'], ends_episode: true, model_stops: true }],
  replies: { user: { open: '\nU:', close: 'Go:\n', close_then_optional: OPTIONAL } },
};
const GRAMMAR = grammarOf(spec);
const mask = (tokens: number[], options: Record<string, number> = {}) => Array.from(new Masker(GRAMMAR, table, options).mask(tokens).mask);

describe('optional template text with rules', () => {
  it('ends_token: a prefill encoded on its own is the template\'s, and what the model writes after it is the model\'s', () => {
    const stream = piecewise([['Q?\nGo:\n<t>\n', 0], ['\n</t>\n\nhi|', 1]]);
    expect(mask(stream.tokens)).toEqual(stream.mask);
    const reasoned = piecewise([['Q?\nGo:\n<t>\n', 0], ['why\n</t>\n\nhi|', 1]]);
    expect(mask(reasoned.tokens)).toEqual(reasoned.mask);
  });

  it('ends_token: inside an empty block encoded in one piece, the prefill ends mid-token, so the whole block is the template\'s', () => {
    const stream = piecewise([['Q?\nGo:\n<t>\n\n</t>\n\n', 0], ['hi|', 1]]);
    expect(mask(stream.tokens)).toEqual(stream.mask);
  });

  it('after a reply\'s close the same rules hold (a history turn, then the turn being sampled)', () => {
    const stream = piecewise([['Q?\nGo:\n<t>\n\n</t>\n\n', 0], ['a|', 1], ['\nU:more\nGo:\n<t>\n', 0], ['\n</t>\n\nb|', 1]]);
    expect(mask(stream.tokens)).toEqual(stream.mask);
  });

  it('followed_by and when/unless (sft=1): the prefill is the template\'s only where "\\n</t>" follows; a turn that reasoned writes its own <t>\\n', () => {
    const empty = piecewise([['Q?\nGo:\n<t>\n', 0], ['\n</t>\n\nhi|', 1]]);
    expect(mask(empty.tokens, { sft: 1 })).toEqual(empty.mask);
    const reasoned = piecewise([['Q?\nGo:\n', 0], ['<t>\nwhy\n</t>\n\nhi|', 1]]);
    expect(mask(reasoned.tokens, { sft: 1 })).toEqual(reasoned.mask);
    // The default reads that <t>\n as the prefill: the two settings differ exactly there.
    expect(mask(reasoned.tokens)).not.toEqual(reasoned.mask);
    const block = piecewise([['Q?\nGo:\n<t>\n\n</t>\n\n', 0], ['hi|', 1]]);
    expect(mask(block.tokens, { sft: 1 })).toEqual(block.mask);
  });

  it('the fields are checked: types, unknown keys, and the options they name', () => {
    const shape = (item: unknown) => readGrammar({ ...spec, prompt: { ends_after: ['Go:\n'], then_optional: [item] } } as never).issues.map((issue) => issue.path);
    expect(shape({ text: '<t>', ends_token: 'yes' })).toEqual(['prompt.then_optional[0].ends_token']);
    expect(shape({ text: '<t>', followed_by: '' })).toEqual(['prompt.then_optional[0].followed_by']);
    expect(shape({ text: '<t>', unless: 'sft' })).toEqual(['prompt.then_optional[0].unless']);
    expect(shape({ text: '<t>', after: 'x' })).toEqual(['prompt.then_optional[0].after']);
    const { grammar } = readGrammar({ ...spec, prompt: { ends_after: ['Go:\n'], then_optional: [{ text: '<t>', unless: '$nope' }] } } as never);
    expect(checkGrammar(grammar!).filter((issue) => issue.code === 'unknown-option').map((issue) => issue.path)).toEqual(['prompt.then_optional[0].unless']);
  });
});
