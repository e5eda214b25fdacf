/**
 * The scanner's records (code, token, reply index) → the library's diagnostics, with their arguments
 * read off the grammar and the tokens and their words from the registry. Only `mask()` calls this;
 * `maskBatch` counts records.
 */
import { messageOf, severityOf, type DiagnosticArgs, type Diagnostic } from '../diagnostics.ts';
import { textOf } from '../tokenizer/table.ts';
import type { Bound } from './bind.ts';
import { sidesOf, type ScanRecord } from './segments.ts';

/** The arguments of a record: the token's text, and for a reply its name, budget and budget option. */
export function argsOf(bound: Bound, ids: ArrayLike<number>, record: ScanRecord): DiagnosticArgs {
  const { grammar } = bound;
  const args: DiagnosticArgs = { token: record.token };
  if (record.token < ids.length) args.text = textOf(bound.table, ids, record.token, record.token + 1);
  if (record.reply >= 0) {
    const reply = grammar.replies[record.reply];
    args.reply = reply.name;
    args.option = typeof reply.budget === 'string' ? reply.budget : null;
    args.budget = bound.budgets[record.reply];
    args.grammar = grammar.grammar.name;
  }
  if (record.code === 'straddling-token') {
    args.value = record.value;
    args.sides = sidesOf(record).map((side) => (side === 1 ? 'action' : 'observation'));
    args.offset = record.offset;
  }
  if (record.code === 'no-prompt-end') args.literals = grammar.grammar.prompt.ends_after;
  return args;
}

export function toDiagnostic(bound: Bound, ids: ArrayLike<number>, record: ScanRecord): Diagnostic {
  const diagnostic: Diagnostic = { code: record.code, severity: severityOf(record.code), token: record.token, message: messageOf(record.code, argsOf(bound, ids, record)) };
  if (record.offset > 0) diagnostic.offset = record.offset;
  return diagnostic;
}
