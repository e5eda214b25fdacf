/**
 * Rollouts that come as text: verl's `rollout_data_dir` dumps (`{input, output}`, decoded with
 * `skip_special_tokens=True`: `verl/trainer/ppo/ray_trainer.py` `_log_rollout_data`, verl 1dda039b),
 * `{prompt, completion}` and `{text}`. The text is tokenized here; the mask comes from the grammar.
 *
 * What is said per rollout: that the ids are re-tokenized (`retokenized-text`), and, where the text was
 * decoded without special tokens, which grammar literals hold special tokens and so cannot mark a boundary
 * (`special-tokens-stripped`).
 */
import { messageOf, severityOf, type Diagnostic, type DiagnosticArgs } from '../diagnostics.ts';
import type { Grammar } from '../grammar/schema.ts';
import type { LoadedTokenizer } from '../tokenizer/load.ts';
import { SPECIAL, pieceOf, type ByteTable } from '../tokenizer/table.ts';
import type { TextRollout, TokenRollout } from './shapes.ts';

export interface PreparedText {
  rollout: TokenRollout;
  diagnostics: Diagnostic[];
  /** The original text the tokens came from (prompt + text), for character spans. */
  source: string;
}

/** A reading diagnostic, worded by the registry. */
export function diagnostic(code: 'retokenized-text' | 'special-tokens-stripped' | 'message-not-attributed', token: number, args: DiagnosticArgs): Diagnostic {
  return { code, severity: severityOf(code), token, message: messageOf(code, { ...args, token }) };
}

const specialsOf = new WeakMap<ByteTable, readonly string[]>();

/**
 * The texts of the tokenizer's special tokens (`<|im_end|>`, …), longest first. Found once per table (a scan of
 * every id: 151,669 for Qwen3), not once per rollout.
 */
export function specialTexts(table: ByteTable): readonly string[] {
  let texts = specialsOf.get(table);
  if (!texts) {
    const found: string[] = [];
    for (let id = 0; id < table.size; id++) {
      if (table.flags[id] & SPECIAL) found.push(Buffer.from(pieceOf(table, id)).toString('utf8'));
    }
    texts = found.filter((text) => text.length > 0).sort((a, b) => b.length - a.length);
    specialsOf.set(table, texts);
  }
  return texts;
}

/** The literals that mark boundaries in a grammar (not padding: stripped padding leaves nothing to find). */
export function boundaryLiterals(grammar: Grammar, promptKnown: boolean): string[] {
  const literals: string[] = [];
  const add = (value: unknown) => {
    if (typeof value === 'string') literals.push(value);
    else if (Array.isArray(value)) for (const item of value) add(item);
  };
  const g = grammar as unknown as Record<string, any>;
  if (!promptKnown) { add(g.prompt?.ends_after); add(g.prompt?.then_optional); }
  for (const tag of Object.values(g.tags ?? {}) as any[]) { add(tag.open); add(tag.close); }
  for (const handover of (g.handovers ?? []) as any[]) add(handover.after);
  for (const reply of Object.values(g.replies ?? {}) as any[]) { add(reply.open); add(reply.close); add(reply.text); add(reply.close_then_optional); add(reply.ends_before); }
  return [...new Set(literals)];
}

/**
 * Tokenize a text rollout: a known prompt is encoded on its own (its length is the prompt's end), the
 * response on its own after it, as a sampler returns them; a lone text is encoded whole.
 */
export function tokenizeText(tokenizer: LoadedTokenizer, rollout: TextRollout): { rollout: TokenRollout; promptTokens: number; source: string } {
  const promptIds = rollout.prompt === undefined ? [] : tokenizer.encode(rollout.prompt);
  const tokens = promptIds.concat(tokenizer.encode(rollout.text));
  return {
    rollout: { kind: 'tokens', id: rollout.id, tokens, promptLength: rollout.prompt === undefined ? -1 : promptIds.length, options: rollout.options },
    promptTokens: promptIds.length,
    source: (rollout.prompt ?? '') + rollout.text,
  };
}

/** A text rollout tokenized, with what reading it says: re-tokenized, and which grammar literals its stripped special tokens lose. */
export function prepareText(tokenizer: LoadedTokenizer, grammar: Grammar, text: TextRollout): PreparedText {
  const { rollout, promptTokens, source } = tokenizeText(tokenizer, text);
  const diagnostics: Diagnostic[] = [diagnostic('retokenized-text', 0, { fields: text.fields })];
  const specials = specialTexts(tokenizer.table);
  if (!specials.some((special) => source.includes(special))) {
    const lost = boundaryLiterals(grammar, text.prompt !== undefined).filter((literal) => specials.some((special) => literal.includes(special)));
    if (lost.length) {
      diagnostics.push(diagnostic('special-tokens-stripped', promptTokens, { literals: lost }));
    }
  }
  return { rollout, diagnostics, source };
}

/**
 * Character offsets (code points, as Python indexes a str) of every token boundary in `source`, or
 * undefined when the tokens' bytes are not exactly the text's (a normalizer changed it). A boundary inside a
 * character (a token ending mid-emoji) rounds down to that character's start.
 */
export function tokenCharOffsets(table: ByteTable, tokens: ArrayLike<number>, source: string): Int32Array | undefined {
  const bytes = Buffer.from(source, 'utf8');
  const offsets = new Int32Array(tokens.length + 1);
  let at = 0;
  for (let i = 0; i < tokens.length; i++) {
    const piece = pieceOf(table, tokens[i]);
    for (let k = 0; k < piece.length; k++) if (bytes[at + k] !== piece[k]) return undefined;
    offsets[i] = at;
    at += piece.length;
  }
  if (at !== bytes.length) return undefined;
  offsets[tokens.length] = at;
  // Byte offset → code point offset (Python's str indices): count characters, skipping continuation bytes.
  const charAt = new Int32Array(bytes.length + 1);
  let chars = 0;
  for (let b = 0; b < bytes.length; b++) {
    charAt[b] = chars;
    if ((bytes[b] & 0xc0) !== 0x80) chars++;
    // A continuation byte shares its character's index (rounds down to the start).
    else charAt[b] = chars - 1;
  }
  charAt[bytes.length] = chars;
  return offsets.map((offset) => charAt[offset]);
}
