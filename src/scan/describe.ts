/**
 * Words for the scanner's records (code and arguments), written only when someone reads them: `mask()`
 * calls this, `maskBatch` only counts records.
 */
import { SEVERITY, type Diagnostic } from '../diagnostics.ts';
import { textOf } from '../tokenizer/table.ts';
import type { Bound } from './bind.ts';
import { sidesOf, type ScanRecord } from './segments.ts';

const show = (text: string) => JSON.stringify(text);

export function toDiagnostic(bound: Bound, ids: ArrayLike<number>, record: ScanRecord): Diagnostic {
  return { code: record.code, severity: SEVERITY[record.code], token: record.token, message: describe(bound, ids, record) };
}

function describe(bound: Bound, ids: ArrayLike<number>, record: ScanRecord): string {
  const { code, token: at, reply } = record;
  const piece = at < ids.length ? textOf(bound.table, ids, at, at + 1) : '';
  const { grammar } = bound;
  const name = reply >= 0 ? grammar.replies[reply].name : '';
  const option = reply >= 0 && typeof grammar.replies[reply].budget === 'string' ? grammar.replies[reply].budget : 'max_tokens';
  switch (code) {
    case 'straddling-token': return `token ${at} (${show(piece)}) holds bytes of ${sidesOf(record).map((side) => (side === 1 ? 'action' : 'observation')).join(' then ')}; it gets mask ${record.value} (option straddle)`;
    case 'reply-truncated': return `reply "${name}" ended by its budget of ${bound.budgets[reply]} tokens (max_tokens) before its closing text`;
    case 'no-prompt-end': return `the prompt's end (${grammar.grammar.prompt.ends_after.map((literal) => JSON.stringify(literal)).join(' or ')}) was not found and no prompt_length was given: every token is prompt`;
    case 'unclosed-reply': return `the stream ends inside reply "${name}" opened at token ${at}, which never closed; if the environment cut it, set its max_tokens option (e.g. --set ${option}=N)`;
    case 'nested-tag': return `a tag opens at token ${at} (${show(piece)}) while another is still open`;
    case 'observation-tag-in-action': return `the model wrote an environment-looking tag itself at token ${at} (${show(piece)}); it is the model's text, so it stays action`;
    case 'missing-reply': return `no reply the protocol allows follows the handover ending at token ${at}; the text after it is kept as the model's (or, after the model's stop token, as nobody's)`;
    case 'text-after-end': return `the model kept writing after the episode-ending tag at token ${at}; that text is kept as action`;
    case 'reply-in-reply': return `a reply's opening text appears again at token ${at}, inside a reply that has not closed: the environment probably cut the earlier reply (its close is missing), so a model turn was read as observation; set the reply's max_tokens option (e.g. --set max_obs_tokens=N)`;
    case 'no-action': return 'no token is action: training on this rollout would change nothing';
    default: return code;
  }
}
