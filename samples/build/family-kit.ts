/**
 * What the harmony and deepseek-v3 sample builders share: pieces with their provenance, tokenized one by
 * one as a tokens-in/tokens-out sampler records them (so the mask is known by construction), and the
 * suite files, in the same line formats as samples/build/chat-grammars.ts.
 *
 * One addition: text that *quotes* a special token. A user who types `<|end|>`, or a model that writes
 * `<｜Assistant｜>` one character run at a time, puts those characters in the stream as ordinary tokens;
 * tokenizing the text whole would turn them into the special token. `quote(text)` marks such a span: in it,
 * each special-token text is encoded cut after its first character (`<` + `|end|>`), a token sequence a
 * sampler can return and that decodes to the same text.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decode, loadTokenizer, type Segment, type Tokenizer } from './search-r1.ts';
import { jsonl, retokenizedLine, rolloutLine, trajectoryLine, type ChatCase, type Piece } from './chat-grammars.ts';

export type FamilyPiece = Piece;

const QUOTE_OPEN = '\u0001';
const QUOTE_CLOSE = '\u0002';
/** Mark `text` as quoted: special-token texts in it are ordinary tokens. */
export const quote = (text: string) => `${QUOTE_OPEN}${text}${QUOTE_CLOSE}`;
const SPECIAL_TEXT = /<\|[a-z_]+\|>|<｜[^｜]+｜>/g;
const unquoted = (text: string) => text.replaceAll(QUOTE_OPEN, '').replaceAll(QUOTE_CLOSE, '');
const hasQuote = (piece: Piece) => piece.text.includes(QUOTE_OPEN);

export interface FamilyCase extends ChatCase {
  pieces: FamilyPiece[];
  /** Grammar options this rollout needs (written on its line). */
  options?: Record<string, number>;
}

export interface FamilyTarget {
  grammar: string;
  /** Short tokenizer name, used in the folder name. */
  tokenizer: string;
  tokenizerPackage: string;
  folder: string;
  /** What suite.json names as its tokenizer, where not tokenizerPackage (a folder inside the suite). */
  suiteTokenizer?: string;
}

const tokenizers = new Map<string, Tokenizer>();
export function familyTokenizer(tokenizerPackage: string): Tokenizer {
  let t = tokenizers.get(tokenizerPackage);
  if (!t) {
    t = loadTokenizer({ folder: tokenizerPackage, tokenizerPackage });
    tokenizers.set(tokenizerPackage, t);
  }
  return t;
}

const encode = (t: Tokenizer, text: string): number[] => (text ? t.tok.encode(text, { add_special_tokens: false }) : []);

/** A piece's ids: the text tokenized on its own, quoted special-token texts kept as ordinary tokens. */
export function encodePiece(t: Tokenizer, piece: FamilyPiece): number[] {
  const ids: number[] = [];
  piece.text.split(QUOTE_OPEN).forEach((chunk, index) => {
    const [quoted, plain] = index === 0 ? ['', chunk] : chunk.split(QUOTE_CLOSE);
    let at = 0;
    for (const match of quoted.matchAll(SPECIAL_TEXT)) {
      ids.push(...encode(t, quoted.slice(at, match.index)), ...encode(t, match[0].slice(0, 1)), ...encode(t, match[0].slice(1)));
      at = match.index + match[0].length;
    }
    ids.push(...encode(t, quoted.slice(at)), ...encode(t, plain ?? ''));
  });
  return ids;
}

export interface BuiltFamilyCase { chatCase: FamilyCase; segments: Segment[] }

export function tokenizeFamilyCase(t: Tokenizer, c: FamilyCase): BuiltFamilyCase {
  const segments: Segment[] = c.pieces.map((p) => {
    const ids = encodePiece(t, p);
    const text = unquoted(p.text);
    if (decode(t, ids) !== text) throw new Error(`${c.id}: a ${p.kind} piece does not round-trip through the tokenizer`);
    return { kind: p.kind, text, ids };
  });
  if (c.padding) segments.push({ kind: 'padding', text: t.padToken.repeat(c.padding), ids: Array(c.padding).fill(t.padId) });
  return { chatCase: c, segments };
}

export function writeFamilySuite(target: FamilyTarget, cases: FamilyCase[], samplesDir: string, suiteOptions?: Record<string, number>): BuiltFamilyCase[] {
  const t = familyTokenizer(target.tokenizerPackage);
  const built = cases.map((c) => tokenizeFamilyCase(t, c));
  const ids = built.map((b) => b.chatCase.id);
  if (new Set(ids).size !== ids.length) throw new Error(`${target.folder}: duplicate ids`);
  const withOptions = <T extends object>(b: BuiltFamilyCase, line: T) => (b.chatCase.options ? { ...line, options: b.chatCase.options } : line);
  const dir = path.join(samplesDir, target.folder);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'rollouts.jsonl'), jsonl(built.map((b) => withOptions(b, rolloutLine(b)))));
  // Re-encoding a piece that spells a special token out would turn it into the token: not the same stream.
  // So does a stated prompt_length that re-encoding moves inside a token (it would name no token boundary).
  const retokenized = built.filter((b) => !b.chatCase.pieces.some(hasQuote)).flatMap((b) => {
    try {
      return [withOptions(b, retokenizedLine(t, b))];
    } catch (error) {
      if (b.chatCase.statePromptLength && /prompt end falls inside a token/.test((error as Error).message)) return [];
      throw error;
    }
  });
  writeFileSync(path.join(dir, 'retokenized.jsonl'), jsonl(retokenized));
  writeFileSync(path.join(dir, 'trajectories.jsonl'), jsonl(built.map((b) => withOptions(b, trajectoryLine(b)))));
  const suite = {
    grammar: target.grammar,
    tokenizer: target.suiteTokenizer ?? target.tokenizerPackage,
    ...(suiteOptions ? { options: suiteOptions } : {}),
    rollouts: 'rollouts.jsonl',
    retokenized: 'retokenized.jsonl',
    trajectories: 'trajectories.jsonl',
  };
  writeFileSync(path.join(dir, 'suite.json'), JSON.stringify(suite, null, 2) + '\n');
  return built;
}
