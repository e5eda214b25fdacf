/**
 * Ground-truth Kimi K2 rollouts for the `kimi-k2` grammar.
 *
 *     npx tsx samples/build/kimi.ts
 *
 * (Re)writes samples/kimi-k2-tiktoken/. The prompt, each sampled turn's layout and every reply come from Kimi K2
 * Thinking's chat template (samples/build/templates/kimi-k2-thinking.jinja, byte for byte as carried in
 * ggml-org/llama.cpp models/templates/moonshotai-Kimi-K2-Thinking.jinja @ 0c3c896ea80643608b4e961eec7e1efcd844e109)
 * through `apply_chat_template`. The generation prompt ends `<|im_assistant|>assistant<|im_middle|>`; a sampled
 * turn is the template's rendering of that assistant message (`<think>…</think>`, its text, the tool-calls section)
 * with the `<|im_end|>` the model sampled; a reply is the template's rendering after that `<|im_end|>`, up to and
 * including the next generation prompt. The template keeps reasoning only for the tool-call turns after the last
 * final answer; a final answer renders `<think></think>` and its text, and so it is sampled here.
 *
 * Kimi ships a tiktoken rank file, and none can be had offline. The tokenizer here is a stand-in of Kimi's shape,
 * written by this builder into the suite (tokenizer/): a `tiktoken.model` of the first 16,384 of OpenAI's
 * cl100k_base ranks (from the `tiktoken` dev dependency; a prefix of BPE ranks is itself a complete BPE) and a
 * tokenizer_config.json naming Kimi's tokenizer code, with Kimi K2's special tokens at Kimi's offsets after the
 * ranks (163584 + k in Kimi; 16384 + k here) and Kimi's pre-tokenization pattern. It loads through tagmask's
 * tiktoken loader, as a Kimi download would.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

export const KIMI_TEMPLATE_FILE = fileURLToPath(new URL('./templates/kimi-k2-thinking.jinja', import.meta.url));
const FOLDER = 'kimi-k2-tiktoken';
const TOKENIZER_DIR = path.join(SAMPLES_DIR, FOLDER, 'tokenizer');
export const KIMI_TARGETS: FamilyTarget[] = [
  { grammar: 'kimi-k2', tokenizer: 'tiktoken', tokenizerPackage: TOKENIZER_DIR, folder: FOLDER, suiteTokenizer: 'tokenizer' },
];

/** How many cl100k_base ranks the stand-in keeps. */
const RANKS = 16384;
/** Kimi K2's special tokens, as offsets from its first special id (163584 in Kimi's tokenizer_config.json). */
export const KIMI_SPECIAL_OFFSETS: Record<string, number> = {
  '[BOS]': 0, '[EOS]': 1, '<|im_end|>': 2, '<|im_user|>': 3, '<|im_assistant|>': 4, '<|start_header_id|>': 6, '<|end_header_id|>': 7,
  '[EOT]': 9, '<|im_system|>': 10, '<|tool_calls_section_begin|>': 11, '<|tool_calls_section_end|>': 12, '<|tool_call_begin|>': 13,
  '<|tool_call_argument_begin|>': 14, '<|tool_call_end|>': 15, '<|im_middle|>': 17, '<|media_begin|>': 18, '<|media_content|>': 19,
  '<|media_end|>': 20, '<|media_pad|>': 21, '<think>': 22, '</think>': 23, '[UNK]': 254, '[PAD]': 255,
};

/** Write the stand-in tokenizer folder (tiktoken.model + tokenizer_config.json). */
export function writeKimiStandIn(dir = TOKENIZER_DIR): void {
  const require = createRequire(import.meta.url);
  const cl100k = require('tiktoken/encoders/cl100k_base.json') as { bpe_ranks: string };
  const lines: string[] = [];
  for (const row of cl100k.bpe_ranks.split('\n').filter(Boolean)) {
    const [, offset, ...tokens] = row.split(' ');
    tokens.forEach((token, i) => { if (Number(offset) + i < RANKS) lines.push(`${token} ${Number(offset) + i}`); });
  }
  const added = Object.fromEntries(Object.entries(KIMI_SPECIAL_OFFSETS).map(([content, offset]) => [String(RANKS + offset), { content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true }]));
  const config = {
    added_tokens_decoder: added,
    auto_map: { AutoTokenizer: ['tokenization_kimi.TikTokenTokenizer', null] },
    bos_token: '[BOS]', eos_token: '[EOS]', pad_token: '[PAD]', unk_token: '[UNK]',
    clean_up_tokenization_spaces: false,
    tokenizer_class: 'TikTokenTokenizer',
  };
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'tiktoken.model'), `${lines.join('\n')}\n`);
  writeFileSync(path.join(dir, 'tokenizer_config.json'), `${JSON.stringify(config, null, 2)}\n`);
}

interface ToolCall { id: string; type: 'function'; function: { name: string; arguments: string } }
interface KimiMessage { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; name?: string; reasoning_content?: string; tool_calls?: ToolCall[]; tool_call_id?: string }
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

function render(messages: KimiMessage[], addGenerationPrompt: boolean, tools: boolean): string {
  const { tok } = familyTokenizer(TOKENIZER_DIR);
  return tok.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: addGenerationPrompt, chat_template: readFileSync(KIMI_TEMPLATE_FILE, 'utf8'), tools: tools ? TOOLS : null } as never) as unknown as string;
}

const HOW = 'apply_chat_template with samples/build/templates/kimi-k2-thinking.jinja';
const HEADER = '<|im_assistant|>assistant<|im_middle|>';
const END = '<|im_end|>';

class KimiChat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: KimiMessage[];
  constructor(messages: KimiMessage[], private readonly tools = false) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: render(this.messages, true, tools), how: `prompt = ${HOW}, add_generation_prompt=true` });
  }
  sample(message: Omit<KimiMessage, 'role'>, stop = true): this {
    const assistant: KimiMessage = { role: 'assistant', ...message };
    const after = render([...this.messages, assistant], false, this.tools);
    // The template's turn: the last assistant header, then the turn up to its <|im_end|> (which ends the rendering).
    const turn = after.slice(after.lastIndexOf(HEADER) + HEADER.length);
    if (!turn.endsWith(END) || turn.slice(0, -END.length).includes(END)) throw new Error(`unexpected turn: ${JSON.stringify(turn.slice(0, 60))}`);
    this.pieces.push({ kind: 'action', text: stop ? turn : turn.slice(0, -END.length), how: stop ? 'the template\'s rendering of the sampled message after the generation prompt, with the sampled <|im_end|>' : 'sampled turn cut on length (no <|im_end|>)' });
    this.messages.push(assistant);
    return this;
  }
  reply(...next: KimiMessage[]): this {
    const ends = render(this.messages, false, this.tools).split(END).length - 1;
    const full = render([...this.messages, ...next], true, this.tools);
    let at = -1;
    for (let i = 0; i < ends; i++) at = full.indexOf(END, at + 1);
    this.pieces.push({ kind: 'observation', text: full.slice(at + END.length), how: `reply to [${next.map((m) => m.role).join(', ')}] = ${HOW}(conversation + those, add_generation_prompt=true) after the sampled <|im_end|>` });
    this.messages.push(...next);
    return this;
  }
}

const SYSTEM: KimiMessage = { role: 'system', content: 'You are a helpful assistant with a weather tool.' };
const call = (city: string, index: number): ToolCall => ({ id: `functions.get_weather:${index}`, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } });
const tool = (id: string, content: string): KimiMessage => ({ role: 'tool', name: 'get_weather', tool_call_id: id, content });

export function kimiCases(): FamilyCase[] {
  return [
    { id: 'a-answer', note: 'No system message: the template adds Kimi\'s default one. One turn: <think></think>, the answer and the sampled <|im_end|> are action.', pieces: new KimiChat([{ role: 'user', content: 'Is 91 prime?' }]).sample({ content: 'No: 91 = 7 × 13.' }).pieces },
    {
      id: 'b-tool-call',
      note: 'The tool_declare turn in the prompt; a tool-call turn keeps its reasoning (<think>…</think>) and its <|tool_calls_section_begin|>…<|tool_calls_section_end|>; the result <|im_system|>get_weather<|im_middle|>## Return of functions.get_weather:0\\n…<|im_end|> up to the next header is observation.',
      pieces: new KimiChat([SYSTEM, { role: 'user', content: 'Weather in Paris?' }], true)
        .sample({ content: 'Let me check.', reasoning_content: 'Need the weather.', tool_calls: [call('Paris', 0)] })
        .reply(tool('functions.get_weather:0', '{"temperature": 14}'))
        .sample({ content: 'It is 14 °C in Paris.' }).pieces,
    },
    {
      id: 'c-parallel-calls',
      note: 'Two calls in one section; the two results as two <|im_system|> turns with no newline between them, one reply.',
      pieces: new KimiChat([SYSTEM, { role: 'user', content: 'Weather in Oslo and Rome?' }], true)
        .sample({ content: '', reasoning_content: 'Two calls.', tool_calls: [call('Oslo', 0), call('Rome', 1)] })
        .reply(tool('functions.get_weather:0', '{"temperature": -3}'), tool('functions.get_weather:1', '{"temperature": 24}'))
        .sample({ content: 'Oslo -3 °C, Rome 24 °C.' }).pieces,
    },
    {
      id: 'd-follow-up',
      note: 'A user follow-up <|im_user|>user<|im_middle|>…<|im_end|><|im_assistant|>assistant<|im_middle|> (observation), then a second answer.',
      pieces: new KimiChat([SYSTEM, { role: 'user', content: 'Name a prime.' }]).sample({ content: 'Seven.' }).reply({ role: 'user', content: 'Another?' }).sample({ content: 'Thirteen.' }).pieces,
    },
    { id: 'e-padding', note: 'Padding [PAD] after the sampled <|im_end|>: trailing.', pieces: new KimiChat([{ role: 'user', content: 'Two plus two?' }]).sample({ content: 'Four.' }).pieces, padding: 2 },
    { id: 'f-cut-on-length', note: 'A turn cut on length: no <|im_end|>; all action.', pieces: new KimiChat([SYSTEM, { role: 'user', content: 'Count to ten.' }], true).sample({ content: 'One, two, three', reasoning_content: 'Count.', tool_calls: [call('Lima', 0)] }, false).pieces },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeKimiStandIn();
  for (const target of KIMI_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, kimiCases(), SAMPLES_DIR).length} rollouts`);
}
