/**
 * A tiny hand-made tokenizer for module tests: every character of an alphabet is a token, plus a few
 * multi-character pieces that cross tag edges the way real BPE pieces do (`>\n\n`, `</`). Encoding is
 * greedy longest match, so a text tokenized in one piece can straddle an edge that two separately
 * tokenized pieces do not. Building the byte table takes microseconds.
 */
import { buildByteTable, type ByteTable } from '../../src/tokenizer/table.ts';
import { compileGrammar, type CompiledGrammar } from '../../src/grammar/compile.ts';
import { readGrammar } from '../../src/grammar/schema.ts';

const ALPHABET = [...'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,:?!<>/\n0123456789_-|'];
const PIECES = ['>\n\n', '</', '<|pad|>', '<|end|>'];
export const VOCAB = [...ALPHABET, ...PIECES];

export const table: ByteTable = buildByteTable({ model: { vocab: Object.fromEntries(VOCAB.map((piece, id) => [piece, id])) } });

export function encode(text: string): number[] {
  const ids: number[] = [];
  for (let at = 0; at < text.length;) {
    const piece = PIECES.filter((candidate) => text.startsWith(candidate, at)).sort((a, b) => b.length - a.length)[0] ?? text[at];
    const id = VOCAB.indexOf(piece);
    if (id < 0) throw new Error(`no token for ${JSON.stringify(text[at])}`);
    ids.push(id);
    at += piece.length;
  }
  return ids;
}

/** The stream as a sampler builds it (each piece encoded on its own) and its mask by construction. */
export function piecewise(pieces: Array<[string, 0 | 1]>) {
  const tokens: number[] = [];
  const mask: number[] = [];
  for (const [text, role] of pieces) for (const id of encode(text)) { tokens.push(id); mask.push(role); }
  return { tokens, mask };
}

export function grammarOf(json: unknown): CompiledGrammar {
  const { grammar, issues } = readGrammar(json as never);
  if (!grammar) throw new Error(issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'));
  return compileGrammar(grammar);
}

/** A search-style protocol: tags, a handover after </s>, an <o>…</o> reply with a budget option, an interrupting text. */
export const SEARCH = grammarOf({
  name: 'mini-search',
  options: { obs_budget: { default: null, description: 'the environment cut each reply to this many tokens' } },
  prompt: { ends_after: ['Go:\n'] },
  tags: { t: { open: '<t>', close: '</t>' }, s: { open: '<s>', close: '</s>' }, a: { open: '<a>', close: '</a>' } },
  handovers: [{ after: '</s>', replies: ['obs', 'bad'] }, { after: '</a>', replies: ['bad'], ends_episode: true }],
  replies: {
    obs: { open: '\n\n<o>', close: '</o>\n\n', max_tokens: '$obs_budget' },
    bad: { text: '\nBAD ACTION.\n', interrupts: true },
  },
  padding: ['<|pad|>'],
});
