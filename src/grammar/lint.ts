/**
 * Lint a grammar's literals against tokenizers: how each literal tokenizes, where it is one token in one
 * tokenizer and several in another, and where BPE merges a role edge of a literal with its neighbour
 * (`</search>` + `\n\n` → `>\n\n`). Those merges are where straddling tokens come from when a rollout's
 * text is re-tokenized in one piece. Edges inside the model's own text (between two kinds) are harmless
 * and not reported.
 */
import { joinPath } from './json.ts';
import { relative } from 'node:path';
import type { Grammar } from './schema.ts';
import type { LoadedTokenizer } from '../tokenizer/load.ts';
import { textOf } from '../tokenizer/table.ts';
import { cutLiteral, sentinelOverflow, specialTokens } from '../tokenizer/special.ts';
import { declaredLiterals } from './check.ts';
import { messageOf, severityOf, type DiagnosticArgs, type LintCode, type Severity } from '../diagnostics.ts';

export interface LiteralFinding {
  code: LintCode;
  severity: Severity;
  path: string;
  literal: string;
  args: DiagnosticArgs;
  /** The registry's words for code and args. */
  message: string;
}

function finding(code: LintCode, path: string, args: DiagnosticArgs & { literal: string }): LiteralFinding {
  return { code, severity: severityOf(code), path, literal: args.literal, args, message: messageOf(code, args) };
}

interface GrammarLiteral {
  path: string;
  literal: string;
  /** Does a role (action/observation) change at its first byte, at its end? */
  roleEdgeAtStart: boolean;
  roleEdgeAtEnd: boolean;
}

/** Every literal of a grammar, with its JSON path and where roles change around it. */
export function grammarLiterals(grammar: Grammar): GrammarLiteral[] {
  const out: GrammarLiteral[] = [];
  const add = (path: string, literal: string, roleEdgeAtStart: boolean, roleEdgeAtEnd: boolean) => out.push({ path, literal, roleEdgeAtStart, roleEdgeAtEnd });
  const handoverTags = new Set(grammar.handovers.map((handover) => handover.after_tag));
  grammar.prompt.ends_after.forEach((literal, i) => add(`prompt.ends_after[${i}]`, literal, false, true));
  grammar.prompt.then_optional.forEach((literal, i) => add(`prompt.then_optional[${i}]`, literal, false, true));
  for (const [name, tag] of Object.entries(grammar.tags)) {
    tag.open.forEach((literal, i) => add(tag.open.length === 1 ? `${joinPath('tags', name)}.open` : `${joinPath('tags', name)}.open[${i}]`, literal, false, false));
    tag.close.forEach((literal, i) => add(tag.close.length === 1 ? `${joinPath('tags', name)}.close` : `${joinPath('tags', name)}.close[${i}]`, literal, false, handoverTags.has(name)));
  }
  grammar.handovers.forEach((handover, i) => {
    if (handover.after) add(`handovers[${i}].after`, handover.after, false, true);
    handover.model_continues.forEach((literal, at) => add(`handovers[${i}].model_continues[${at}]`, literal, false, false));
  });
  grammar.headers.forEach((literal, i) => add(`headers[${i}]`, literal, true, true));
  for (const [name, reply] of Object.entries(grammar.replies)) {
    if (reply.open !== undefined) add(`${joinPath('replies', name)}.open`, reply.open, true, false);
    if (reply.close !== undefined) add(`${joinPath('replies', name)}.close`, reply.close, false, true);
    if (reply.ends_before !== undefined) add(`${joinPath('replies', name)}.ends_before`, reply.ends_before, true, false);
    if (reply.text !== undefined) add(`${joinPath('replies', name)}.text`, reply.text, true, true);
    reply.close_then_optional.forEach((literal, i) => add(`${joinPath('replies', name)}.close_then_optional[${i}]`, literal, false, true));
  }
  // One finding per literal text: a literal declared twice (a tag close that is a handover) merges its edges.
  const byText = new Map<string, GrammarLiteral>();
  for (const item of out) {
    const seen = byText.get(item.literal);
    if (!seen) byText.set(item.literal, { ...item });
    else { seen.roleEdgeAtStart ||= item.roleEdgeAtStart; seen.roleEdgeAtEnd ||= item.roleEdgeAtEnd; }
  }
  return [...byText.values()];
}

// Neighbours a literal meets in real rollouts: text, spaces, newlines, punctuation, another tag.
const BEFORE = ['a', ' ', '.', '\n', '\n\n', '>'];
const AFTER = ['a', ' ', '.', '\n', '\n\n', '<'];

const show = (text: string) => JSON.stringify(text);
const label = (tokenizer: LoadedTokenizer) => relative(process.cwd(), tokenizer.path).replace(/^node_modules\//, '');

export async function lintLiterals(grammar: Grammar, tokenizers: LoadedTokenizer[]): Promise<LiteralFinding[]> {
  const encoders = tokenizers.map((tokenizer) => (text: string) => (text ? tokenizer.encode(text) : []));
  const findings: LiteralFinding[] = [];
  // What mask refuses first: more special tokens named than the scanner has sentinel bytes for.
  const declared = declaredLiterals(grammar);
  for (const tokenizer of tokenizers) {
    const over = sentinelOverflow(tokenizer.table, declared.map((item) => item.literal));
    if (over) {
      const { literal, path } = declared[over.index];
      findings.push(finding('too-many-specials', path, { tokenizer: label(tokenizer), literal, detail: `${over.named} special tokens`, budget: over.free - 1 }));
    }
  }
  const specials = tokenizers.map((tokenizer) => specialTokens(tokenizer.table));
  for (const { path, literal, roleEdgeAtStart, roleEdgeAtEnd } of grammarLiterals(grammar)) {
    // Which parts match by id (special tokens of that tokenizer) and which on bytes.
    const specialsBy = tokenizers.map((tokenizer, t) => ({
      tokenizer: label(tokenizer),
      parts: cutLiteral(literal, specials[t]).flatMap((part) => ('special' in part ? [{ text: part.special, id: part.id }] : [])),
    }));
    for (const item of specialsBy) findings.push(finding('literal-special', path, { tokenizer: item.tokenizer, literal, specials: item.parts }));
    if (new Set(specialsBy.map((item) => item.parts.map((part) => part.text).join('\u0000'))).size > 1) {
      findings.push(finding('special-differs', path, { literal, specialsBy: specialsBy.map((item) => ({ tokenizer: item.tokenizer, specials: item.parts.map((part) => part.text) })) }));
    }
    const counts: number[] = [];
    tokenizers.forEach((tokenizer, t) => {
      const encode = encoders[t];
      const ids = encode(literal);
      counts.push(ids.length);
      const pieces = ids.map((id) => textOf(tokenizer.table, [id]));
      findings.push(finding('literal-tokens', path, { tokenizer: label(tokenizer), literal, literals: pieces }));
      const merges = new Set<string>();
      const check = (before: string, after: string) => {
        const start = Buffer.byteLength(before);
        const end = start + Buffer.byteLength(literal);
        let offset = 0;
        for (const id of encode(before + literal + after)) {
          const piece = textOf(tokenizer.table, [id]);
          const next = offset + Buffer.byteLength(piece);
          if (before && offset < start && next > start) merges.add(`${show(before)} + its start → ${show(piece)}`);
          if (after && offset < end && next > end) merges.add(`its end + ${show(after)} → ${show(piece)}`);
          offset = next;
        }
      };
      if (roleEdgeAtStart) for (const before of BEFORE) check(before, '');
      if (roleEdgeAtEnd) for (const after of AFTER) check('', after);
      if (merges.size) {
        findings.push(finding('boundary-merge', path, { tokenizer: label(tokenizer), literal, merges: [...merges] }));
      }
    });
    if (new Set(counts).size > 1) {
      findings.push(finding('token-count-differs', path, { literal, counts: tokenizers.map((tokenizer, t) => ({ tokenizer: label(tokenizer), count: counts[t] })) }));
    }
  }
  return findings;
}
