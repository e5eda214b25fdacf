/**
 * Lint a grammar's literals against a tokenizer: how each literal tokenizes, and where BPE merges a
 * literal's edge with its neighbour (`</search>` + `\n\n` → `>\n\n`). Those merges are where straddling
 * tokens come from when a rollout's text is re-tokenized in one piece.
 */
import type { Grammar } from './schema.ts';
import type { LoadedTokenizer } from '../tokenizer/load.ts';
import { textOf } from '../tokenizer/table.ts';

export interface LiteralFinding {
  code: 'literal-tokens' | 'boundary-merge' | 'token-count-differs';
  path: string;
  literal: string;
  message: string;
}

/** Every literal of a grammar, with its JSON path. */
export function grammarLiterals(grammar: Grammar): Array<{ path: string; literal: string }> {
  const out: Array<{ path: string; literal: string }> = [];
  grammar.prompt.ends_after.forEach((literal, i) => out.push({ path: `prompt.ends_after[${i}]`, literal }));
  grammar.prompt.then_optional.forEach((literal, i) => out.push({ path: `prompt.then_optional[${i}]`, literal }));
  for (const [name, tag] of Object.entries(grammar.tags)) {
    tag.open.forEach((literal, i) => out.push({ path: tag.open.length === 1 ? `tags.${name}.open` : `tags.${name}.open[${i}]`, literal }));
    tag.close.forEach((literal, i) => out.push({ path: tag.close.length === 1 ? `tags.${name}.close` : `tags.${name}.close[${i}]`, literal }));
  }
  grammar.handovers.forEach((handover, i) => { if (handover.after) out.push({ path: `handovers[${i}].after`, literal: handover.after }); });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    for (const key of ['open', 'close', 'ends_before', 'text'] as const) {
      const literal = reply[key];
      if (literal !== undefined) out.push({ path: `replies.${name}.${key}`, literal });
    }
  }
  const seen = new Set<string>();
  return out.filter((item) => (seen.has(item.literal) ? false : (seen.add(item.literal), true)));
}

// Neighbours a literal meets in real rollouts: text, spaces, newlines, punctuation, another tag.
const BEFORE = ['', 'a', ' ', '.', '\n', '\n\n', '>'];
const AFTER = ['', 'a', ' ', '.', '\n', '\n\n', '<'];

const show = (text: string) => JSON.stringify(text);

export async function lintLiterals(grammar: Grammar, tokenizer: LoadedTokenizer): Promise<LiteralFinding[]> {
  const hf = await tokenizer.transformers();
  const encode = (text: string) => (text ? hf.encode(text, { add_special_tokens: false }) : []);
  const findings: LiteralFinding[] = [];
  for (const { path, literal } of grammarLiterals(grammar)) {
    const ids = encode(literal);
    const pieces = ids.map((id) => show(textOf(tokenizer.table, [id])));
    findings.push({ code: 'literal-tokens', path, literal, message: `${show(literal)} is ${ids.length} token${ids.length === 1 ? '' : 's'}: ${pieces.join(' ')}` });
    const merges = new Set<string>();
    for (const before of BEFORE) for (const after of AFTER) {
      if (!before && !after) continue;
      const whole = encode(before + literal + after);
      // Token edges of the whole encoding, in bytes; the literal's edges must be among them.
      const edges = new Set<number>([0]);
      let at = 0;
      for (const id of whole) { at += Buffer.byteLength(textOf(tokenizer.table, [id])); edges.add(at); }
      const start = Buffer.byteLength(before);
      const end = start + Buffer.byteLength(literal);
      let offset = 0;
      for (const id of whole) {
        const piece = textOf(tokenizer.table, [id]);
        const next = offset + Buffer.byteLength(piece);
        const crossesStart = before && offset < start && next > start;
        const crossesEnd = after && offset < end && next > end;
        if (crossesStart || crossesEnd) merges.add(`${crossesStart ? `${show(before)} + start` : `end + ${show(after)}`} → token ${show(piece)}`);
        offset = next;
      }
    }
    if (merges.size) {
      findings.push({ code: 'boundary-merge', path, literal, message: `${show(literal)} merges with its neighbour: ${[...merges].join('; ')} (straddling tokens where text is re-tokenized)` });
    }
  }
  return findings;
}

/** Findings as lines, for `tagmask grammar check --tokenizer`. */
export async function lintGrammarLiterals(grammar: Grammar, tokenizer: LoadedTokenizer): Promise<string[]> {
  const findings = await lintLiterals(grammar, tokenizer);
  return findings.map((finding) => `${finding.code === 'literal-tokens' ? 'info' : 'warning'} ${finding.code} at ${finding.path} [${tokenizer.path}]: ${finding.message}`);
}
